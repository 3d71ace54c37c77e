package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// openClaims opens claims.stores (when there are any) and checks each s3
// store's bucket: a wrong bucket stops the boot, named. Retention starts
// with startClaims, once dispatch can say which hooks are undelivered.
func (n *node) openClaims() error {
	if len(n.cfg.Claims.Stores) == 0 {
		return nil
	}
	c, err := archive.OpenClaims(archive.ClaimsOptions{
		Stores: n.cfg.Claims.Stores, Node: n.cfg.Node.Name, Logger: n.log.Named("claims"),
		MaxReadBytes:  max(int64(n.cfg.Limits.MaxBodyBytes), 64<<20),
		OldestPending: n.oldestUndelivered,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Check(ctx); err != nil {
		c.Close()
		return fmt.Errorf("cannot use a claim store: %w", err)
	}
	n.claims = c
	stores := c.Stores()
	for _, name := range slices.Sorted(maps.Keys(stores)) {
		n.log.Info("claim store", zap.String("store", name), zap.String("backend", stores[name]))
	}
	return nil
}

// oldestUndelivered is the claim stores' OldestPending: dispatch's, or
// none with wal.type: none (no rows, nothing delivered later).
func (n *node) oldestUndelivered() (time.Time, bool) {
	if n.dispatch == nil {
		return time.Time{}, false
	}
	return n.dispatch.OldestUndelivered()
}

// startClaims starts the claim stores' retention: after dispatch opened,
// so the first sweep keeps the packs its pending hooks reference.
func (n *node) startClaims() {
	if n.claims == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.claims.Run(ctx)
	}()
	n.stopClaims = func() { cancel(); <-done }
}

// closeClaims stops retention and uploads the open packs (after dispatch
// stopped: no Claim waits on them any more).
func (n *node) closeClaims() {
	if n.claims == nil {
		return
	}
	if n.stopClaims != nil {
		n.stopClaims()
	}
	n.claims.Close()
	n.claims = nil
}

// newSink builds the node's sinks: newSink's, each one whose spec has a
// claim wrapped so that a large body goes by reference (dispatch.WithClaim).
func (n *node) newSink() func(string, config.Sink) (dispatch.Sink, error) {
	build := newSink(n.cfg, n.log)
	return func(src string, spec config.Sink) (dispatch.Sink, error) {
		s, err := build(src, spec)
		if err != nil || spec.Claim == nil {
			return s, err
		}
		if n.claims == nil {
			_ = s.Close()
			return nil, fmt.Errorf("claim.store %q: there are no claims.stores on this node", spec.Claim.Store)
		}
		return dispatch.WithClaim(s, spec.Claim, n.claims), nil
	}
}

// claimReader serves the admin API's claim route from the claim stores,
// with the archive's errors as admin's.
type claimReader struct{ c *archive.Claims }

var _ admin.ClaimReader = claimReader{}

func (r claimReader) InTenant(ref envelope.Claim, tenant string) bool {
	return r.c.InTenant(ref, tenant)
}

func (r claimReader) Read(ctx context.Context, ref envelope.Claim) ([]byte, error) {
	b, err := r.c.Read(ctx, ref)
	switch {
	case errors.Is(err, archive.ErrNotExist) || errors.Is(err, archive.ErrUnknownStore) || errors.Is(err, archive.ErrClaimTooLong):
		return nil, fmt.Errorf("%w: %v", admin.ErrClaimNotFound, err)
	case errors.Is(err, archive.ErrClaimMismatch):
		return nil, fmt.Errorf("%w: %v", admin.ErrClaimCorrupt, err)
	}
	return b, err
}
