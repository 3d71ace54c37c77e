package meta

import (
	"encoding/binary"
	"fmt"
)

// SetTenant mirrors a tenant ordinal. It is not synced: the WAL's tenant
// record is the durable one and recovery replays it.
func (s *Store) SetTenant(name string, ordinal uint32) error {
	return s.setTenant(name, ordinal, NoSync)
}

// SetTenantSynced records a tenant ordinal with a synced write: with
// wal.type: none there is no WAL record behind it.
func (s *Store) SetTenantSynced(name string, ordinal uint32) error {
	return s.setTenant(name, ordinal, Sync)
}

func (s *Store) setTenant(name string, ordinal uint32, d Durability) error {
	var v [4]byte
	binary.BigEndian.PutUint32(v[:], ordinal)
	if err := s.set(tenantKey(name), v[:], d); err != nil {
		return fmt.Errorf("cannot write tenant %q: %w", name, err)
	}
	return nil
}

// Tenants returns every mirrored tenant ordinal.
func (s *Store) Tenants() (map[string]uint32, error) {
	out := map[string]uint32{}
	lo, hi := prefixRange(prefixTenant)
	err := s.scan("tenants", lo, hi, func(k, v []byte) (bool, error) {
		if len(v) != 4 {
			return true, fmt.Errorf("cannot decode tenant %q: %d bytes, want 4", k, len(v))
		}
		out[string(k[len(prefixTenant):])] = binary.BigEndian.Uint32(v)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
