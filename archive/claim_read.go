package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// Read reads the body a claim names with one ranged read and checks its
// SHA-256. Errors: ErrUnknownStore, ErrNotExist (the pack is gone),
// ErrClaimTooLong, ErrClaimMismatch (naming the key), or the store's
// failure. The caller owns the returned slice.
func (c *Claims) Read(ctx context.Context, ref envelope.Claim) ([]byte, error) {
	claimReads.Inc()
	b, err := c.read(ctx, ref)
	if err != nil {
		claimReadFailures.Inc()
		if !errors.Is(err, ErrNotExist) && !errors.Is(err, ErrUnknownStore) && !errors.Is(err, ErrClaimTooLong) {
			c.o.Logger.Warn("claims: cannot read a claim", zap.String("store", ref.Store), zap.String("key", ref.Key), zap.Error(err))
		}
	}
	return b, err
}

func (c *Claims) read(ctx context.Context, ref envelope.Claim) ([]byte, error) {
	if err := ref.Check(); err != nil {
		return nil, err
	}
	st := c.stores[ref.Store]
	if st == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownStore, ref.Store)
	}
	if ref.Length > c.o.MaxReadBytes {
		return nil, fmt.Errorf("%w: %d bytes in %s, this node reads at most %d", ErrClaimTooLong, ref.Length, ref.Key, c.o.MaxReadBytes)
	}
	p := make([]byte, ref.Length)
	if err := st.b.ReadAt(ctx, ref.Key, p, ref.Offset); err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(p); hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("%w: %s bytes %d+%d in claims.stores.%s have sha256 %x, the claim says %s",
			ErrClaimMismatch, ref.Key, ref.Offset, ref.Length, ref.Store, sum, ref.SHA256)
	}
	return p, nil
}

// InTenant reports whether the claim's key is one of tenant t's packs in
// its store (the admin API serves a tenant its own claims alone).
func (c *Claims) InTenant(ref envelope.Claim, t string) bool {
	st := c.stores[ref.Store]
	return st != nil && ClaimKeyInTenant(st.layout, ref.Key, t)
}

// ClaimKeyInTenant reports whether key is one of tenant t's pack keys of
// layout l, whole: claims/tenant=<t>/source=<name>/<yyyy>/<mm>/<dd>/
// <node>-<id>.pack and nothing else (no "..", no extra segment), so that no
// store's way of reading a key can take it out of the tenant's prefix.
func ClaimKeyInTenant(l Layout, key, t string) bool {
	p := l.ClaimTenantPrefix(t)
	if !config.ValidName([]byte(t)) || !strings.HasPrefix(key, p) {
		return false
	}
	parts := strings.Split(key[len(p):], "/")
	if len(parts) != 5 {
		return false
	}
	src, ok := strings.CutPrefix(parts[0], "source=")
	if !ok || !config.ValidName([]byte(src)) {
		return false
	}
	for i, n := range []int{4, 2, 2} {
		if len(parts[1+i]) != n || strings.Trim(parts[1+i], "0123456789") != "" {
			return false
		}
	}
	node, _, ok := parsePackKey(parts[4])
	return ok && config.ValidName([]byte(node))
}

// DeleteTenant deletes every claim pack of tenant t in every store (the
// prefix claims/tenant=<t>/) and returns how many it deleted. A pack
// being uploaded for the tenant lands after it: the caller stops the
// tenant's deliveries first.
func (c *Claims) DeleteTenant(ctx context.Context, t string) (int, error) {
	if !config.ValidName([]byte(t)) {
		return 0, fmt.Errorf("archive: cannot delete the claims of tenant %q: not a tenant name", t)
	}
	c.cache.dropTenant(t)
	total := 0
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.stores)) {
		st := c.stores[name]
		n, err := DeletePrefix(ctx, st.b, st.layout.ClaimTenantPrefix(t))
		total += n
		claimPacksDeleted.Add(n)
		if err != nil {
			claimTenantDeleteFail.Inc()
			c.o.Logger.Error("claims: cannot delete a tenant's claim packs", zap.String("store", name), zap.String("tenant", t), zap.Int("deleted", n), zap.Error(err))
			errs = append(errs, fmt.Errorf("claims.stores.%s: %w", name, err))
		}
	}
	return total, errors.Join(errs...)
}
