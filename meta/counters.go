package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// prefixTenantCounts keys a tenant's counters: m:tcount:<ord u32> →
// hooks u64 | bytes u64, every hook committed for the tenant up to the
// dispatch checkpoint written with them.
const prefixTenantCounts = "m:tcount:"

// TenantCounts is what a tenant has committed.
type TenantCounts struct{ Hooks, Bytes uint64 }

func tenantCountsKey(ord uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(prefixTenantCounts), ord)
}

// SetDispatchCheckpointWith stores the checkpoint and the counters of the
// tenants that changed since the last one, in one synced batch: the
// counters count exactly the hooks at or below the checkpoint, so the
// rebuild past it adds each hook once.
func (s *Store) SetDispatchCheckpointWith(seq uint64, counts map[uint32]TenantCounts) error {
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set([]byte(keyDispatchCheckpoint), binary.BigEndian.AppendUint64(nil, seq), nil)
	for ord, c := range counts {
		v := binary.BigEndian.AppendUint64(nil, c.Hooks)
		v = binary.BigEndian.AppendUint64(v, c.Bytes)
		_ = b.Set(tenantCountsKey(ord), v, nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot write dispatch checkpoint: %w", err)
	}
	return nil
}

// AllTenantCounts reads every tenant's counters.
func (s *Store) AllTenantCounts() (map[uint32]TenantCounts, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixTenantCounts), UpperBound: upperBound(prefixTenantCounts)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := map[uint32]TenantCounts{}
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != len(prefixTenantCounts)+4 || len(v) != 16 {
			return nil, fmt.Errorf("%w: tenant counters %x", ErrBadRecord, k)
		}
		out[binary.BigEndian.Uint32(k[len(prefixTenantCounts):])] = TenantCounts{Hooks: binary.BigEndian.Uint64(v), Bytes: binary.BigEndian.Uint64(v[8:])}
	}
	return out, it.Error()
}
