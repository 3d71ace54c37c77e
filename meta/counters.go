package meta

import (
	"encoding/binary"
	"fmt"
)

// TenantCounts is what a tenant has committed: its hooks and their
// encoded bytes, up to the dispatch checkpoint they are written with
// (SetDispatchCheckpointWith).
type TenantCounts struct{ Hooks, Bytes uint64 }

// AllTenantCounts reads every tenant's counters.
func (s *Store) AllTenantCounts() (map[uint32]TenantCounts, error) {
	out := map[uint32]TenantCounts{}
	lo, hi := prefixRange(prefixTenantCount)
	err := s.scan("tenant counters", lo, hi, func(k, v []byte) (bool, error) {
		ord, rest, ok := parseOrdinal(prefixTenantCount, k)
		if !ok || len(rest) != 0 || len(v) != 16 {
			return true, fmt.Errorf("%w: tenant counters %x", ErrBadRecord, k)
		}
		out[ord] = TenantCounts{Hooks: binary.BigEndian.Uint64(v), Bytes: binary.BigEndian.Uint64(v[8:])}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
