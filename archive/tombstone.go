package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Tombstone is the object the erase job writes when a tenant is erased:
// hooks of that tenant received at or before ErasedAt are gone, and replay
// skips them. Hooks received after it belong to a tenant of the same name
// created later.
type Tombstone struct {
	Tenant   string    `json:"tenant"`
	ErasedAt time.Time `json:"erased_at"`
	// Node erased the tenant; SeqAtClose is that node's last seq when the
	// tenant was closed and Ordinals its ordinals there (for an operator
	// reading the object: replay goes by ErasedAt, which holds across
	// nodes).
	Node       string   `json:"node,omitempty"`
	SeqAtClose uint64   `json:"seq_at_close,omitempty"`
	Ordinals   []uint32 `json:"ordinals,omitempty"`
}

// WriteTombstone writes t as tombstones/tenant=<t>.json. A tombstone
// already there with a later erased_at stays (it covers more hooks); an
// earlier one is replaced. Writing it again is harmless, so the erase job
// retries it until it succeeds.
func WriteTombstone(ctx context.Context, b Backend, l Layout, t Tombstone) error {
	key := l.TombstoneKey(t.Tenant)
	data, err := json.Marshal(&t)
	if err != nil {
		return err
	}
	for range 3 {
		err = b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), hexSHA256(data))
		if !errors.Is(err, ErrExists) {
			break
		}
		r, gerr := b.Get(ctx, key)
		if gerr != nil {
			return fmt.Errorf("archive: tombstone %s: %w", key, gerr)
		}
		old, rerr := io.ReadAll(io.LimitReader(r, maxTombstoneBytes+1))
		r.Close()
		if rerr != nil {
			return fmt.Errorf("archive: tombstone %s: %w", key, rerr)
		}
		if prev, perr := ParseTombstone(key, t.Tenant, old); perr == nil && !prev.ErasedAt.Before(t.ErasedAt) {
			return nil
		}
		if err = b.Delete(ctx, key); err != nil {
			return fmt.Errorf("archive: cannot replace tombstone %s: %w", key, err)
		}
	}
	if err != nil {
		return fmt.Errorf("archive: cannot write tombstone %s: %w", key, err)
	}
	return nil
}

// maxTombstoneBytes bounds one tombstone object.
const maxTombstoneBytes = 64 << 10

// Tombstones maps a tenant name to the time it was erased.
type Tombstones map[string]time.Time

// Erased reports whether a hook of tenant received at receivedAt (unix ns)
// was erased.
func (t Tombstones) Erased(tenant string, receivedAt int64) bool {
	at, ok := t[tenant]
	return ok && receivedAt <= at.UnixNano()
}

// ReadTombstones reads every tombstone of an archive. A tombstone that does
// not parse, or names another tenant than its key, is an error: skipping
// it would replay an erased tenant's hooks.
func ReadTombstones(ctx context.Context, b Backend, l Layout) (Tombstones, error) {
	ts := Tombstones{}
	prefix := l.TombstonesPrefix()
	err := b.List(ctx, prefix, func(o Object) error {
		name := strings.TrimPrefix(o.Key, prefix)
		tenant, ok := strings.CutPrefix(name, "tenant=")
		if !ok || !strings.HasSuffix(tenant, ".json") {
			return nil // not a tombstone
		}
		tenant = strings.TrimSuffix(tenant, ".json")
		if o.Size > maxTombstoneBytes {
			return fmt.Errorf("archive: tombstone %s: %d bytes is too large", o.Key, o.Size)
		}
		r, err := b.Get(ctx, o.Key)
		if err != nil {
			return fmt.Errorf("archive: tombstone %s: %w", o.Key, err)
		}
		data, err := io.ReadAll(io.LimitReader(r, maxTombstoneBytes+1))
		r.Close()
		if err != nil {
			return fmt.Errorf("archive: tombstone %s: %w", o.Key, err)
		}
		t, err := ParseTombstone(o.Key, tenant, data)
		if err != nil {
			return err
		}
		ts[tenant] = t.ErasedAt
		return nil
	})
	return ts, err
}

// ParseTombstone decodes the tombstone of tenant read from key.
func ParseTombstone(key, tenant string, data []byte) (Tombstone, error) {
	var t Tombstone
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("archive: tombstone %s: %w", key, err)
	}
	if t.Tenant != tenant {
		return t, fmt.Errorf("archive: tombstone %s names tenant %q", key, t.Tenant)
	}
	if t.ErasedAt.IsZero() {
		return t, fmt.Errorf("archive: tombstone %s has no erased_at", key)
	}
	return t, nil
}

// hexSHA256 is the hex SHA-256 of data, as Backend.Put takes it.
func hexSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
