package meta

import (
	"encoding/binary"
	"fmt"
	"time"
)

// A tenant's mirror value is ordinal u32 | first_seen u64 (unix ns, when
// the mirror was first written for this ordinal). A value written before
// first_seen existed is the ordinal alone (4 bytes): its first_seen is
// unknown.

// TenantInfo is one mirrored tenant.
type TenantInfo struct {
	Name    string
	Ordinal uint32
	// FirstSeen is when this node first mirrored the tenant; zero when
	// unknown (mirrored by a node that did not record it).
	FirstSeen time.Time
}

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

// setTenant writes the mirror, stamping first_seen now unless the key
// already holds this ordinal with a first_seen (a mirror written again
// keeps it).
func (s *Store) setTenant(name string, ordinal uint32, d Durability) error {
	first := time.Now().UnixNano()
	old, found, err := s.TenantInfo(name)
	if err != nil {
		return fmt.Errorf("cannot write tenant %q: %w", name, err)
	}
	if found && old.Ordinal == ordinal && !old.FirstSeen.IsZero() {
		first = old.FirstSeen.UnixNano()
	}
	var v [12]byte
	binary.BigEndian.PutUint32(v[:], ordinal)
	binary.BigEndian.PutUint64(v[4:], uint64(first))
	if err := s.set(tenantKey(name), v[:], d); err != nil {
		return fmt.Errorf("cannot write tenant %q: %w", name, err)
	}
	return nil
}

// decodeTenant reads a mirror value, old (4 bytes) or new (12).
func decodeTenant(name string, v []byte) (TenantInfo, error) {
	t := TenantInfo{Name: name}
	switch len(v) {
	case 12:
		t.FirstSeen = time.Unix(0, int64(binary.BigEndian.Uint64(v[4:]))).UTC()
		fallthrough
	case 4:
		t.Ordinal = binary.BigEndian.Uint32(v)
		return t, nil
	}
	return t, fmt.Errorf("%w: tenant %q: %d bytes, want 4 or 12", ErrBadRecord, name, len(v))
}

// Tenants returns every mirrored tenant ordinal.
func (s *Store) Tenants() (map[string]uint32, error) {
	out := map[string]uint32{}
	err := s.scanTenants("", func(t TenantInfo) bool {
		out[t.Name] = t.Ordinal
		return false
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TenantsAfter lists the mirrored tenants whose names sort after after
// ("": from the first), in name order, at most limit.
func (s *Store) TenantsAfter(after string, limit int) ([]TenantInfo, error) {
	out := []TenantInfo{}
	if limit <= 0 {
		return out, nil
	}
	err := s.scanTenants(after, func(t TenantInfo) bool {
		out = append(out, t)
		return len(out) >= limit
	})
	return out, err
}

// TenantInfo is one mirrored tenant; found is false when the node does
// not know it.
func (s *Store) TenantInfo(name string) (t TenantInfo, found bool, err error) {
	found, err = s.getKey("tenant "+name, func(dst []byte) []byte { return appendNameKey(dst, prefixTenant, name) },
		func(v []byte) error {
			t, err = decodeTenant(name, v)
			return err
		})
	return t, found, err
}

// scanTenants calls fn with every mirrored tenant after after, in name
// order, until fn says stop.
func (s *Store) scanTenants(after string, fn func(TenantInfo) (stop bool)) error {
	lo, hi := prefixRange(prefixTenant)
	if after != "" {
		lo = append(tenantKey(after), 0)
	}
	return s.scan("tenants", lo, hi, func(k, v []byte) (bool, error) {
		t, err := decodeTenant(parseNameKey(prefixTenant, k), v)
		if err != nil {
			return true, err
		}
		return fn(t), nil
	})
}
