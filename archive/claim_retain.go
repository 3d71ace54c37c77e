package archive

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Run deletes this node's packs past their store's retain, until ctx is
// done: once at the start, then every min(retain/10, 1h) per store. A pack
// is deleted when it was sealed before cutoff = min(now - retain, the
// receipt of the oldest hook still pending, in flight or dead): a pack is
// sealed (and named) after every hook in it was received, so a pack a
// pending delivery references is never deleted early.
func (c *Claims) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, st := range c.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			every := min(st.retain/10, time.Hour)
			for {
				if _, err := c.Sweep(ctx, st.name); err != nil && ctx.Err() == nil {
					c.o.Logger.Error("claims: retention sweep failed; it runs again", zap.String("store", st.name), zap.Duration("in", every), zap.Error(err))
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(every):
				}
			}
		}()
	}
	wg.Wait()
}

// Sweep runs retention on one store now and returns how many packs it
// deleted.
func (c *Claims) Sweep(ctx context.Context, store string) (int, error) {
	st := c.stores[store]
	if st == nil {
		return 0, fmt.Errorf("%w: %q", ErrUnknownStore, store)
	}
	cutoff := c.o.Now().Add(-st.retain)
	if c.o.OldestPending != nil {
		if t, ok := c.o.OldestPending(); ok && t.Before(cutoff) {
			cutoff = t
		}
	}
	deleted := 0
	batch := make([]string, 0, 64)
	flush := func() error {
		n, err := deleteKeys(ctx, st.b, batch)
		deleted += n
		claimPacksDeleted.Add(n)
		batch = batch[:0]
		return err
	}
	// Deleting from inside the listing is safe on both backends: S3 lists
	// by continuation key, a directory walk reads a directory before it
	// visits its entries.
	err := st.b.List(ctx, st.layout.ClaimsPrefix(), func(o Object) error {
		node, at, ok := parsePackKey(o.Key)
		if !ok || node != c.o.Node || !at.Before(cutoff) {
			return nil
		}
		batch = append(batch, o.Key)
		if len(batch) == deleteBatch {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		claimRetainFailures.Inc()
		return deleted, fmt.Errorf("claims.stores.%s: retention in %s: %w", store, st.b, err)
	}
	if deleted > 0 {
		c.o.Logger.Info("claims: deleted packs past retention", zap.String("store", store), zap.Int("packs", deleted), zap.Time("cutoff", cutoff))
	}
	return deleted, nil
}
