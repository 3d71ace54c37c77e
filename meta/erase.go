package meta

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The tenant erase job (package tenant) keeps its progress here, one row
// per tenant being erased, and ends with the final batch (FinishErase):
// the tombstone, the tenant's ordinal and counters, and the tenant.delete
// audit row with its lifecycle event, all or none.

// SetEraseProgress writes tenant's erase progress row (the job's JSON)
// with a synced write: the job runs a stage only once the stage before
// it is recorded.
func (s *Store) SetEraseProgress(tenant string, row []byte) error {
	if err := s.set(appendNameKey(nil, prefixErase, tenant), row, Sync); err != nil {
		return fmt.Errorf("cannot record the erase of tenant %s: %w", tenant, err)
	}
	return nil
}

// EraseProgress is tenant's erase progress row; found is false when no
// erase of the tenant is running.
func (s *Store) EraseProgress(tenant string) (row []byte, found bool, err error) {
	found, err = s.getKey("the erase of tenant "+tenant, func(dst []byte) []byte { return appendNameKey(dst, prefixErase, tenant) },
		func(v []byte) error {
			row = slices.Clone(v)
			return nil
		})
	return row, found, err
}

// EraseProgresses lists every running erase: tenant → progress row.
func (s *Store) EraseProgresses() (map[string][]byte, error) {
	out := map[string][]byte{}
	lo, hi := prefixRange(prefixErase)
	err := s.scan("the running erases", lo, hi, func(k, v []byte) (bool, error) {
		out[parseNameKey(prefixErase, k)] = slices.Clone(v)
		return false, nil
	})
	return out, err
}

// Tombstone is what stays of an erased tenant (m:erased:<tenant>): every
// ordinal it had on this node (a tenant erased, then sending again, then
// erased again has two), the seq of the last hook of the last erase, when
// it finished, and what the tenant had committed. A hook whose tenant and
// ordinal a tombstone names is gone.
type Tombstone struct {
	Tenant     string    `json:"tenant"`
	Ordinals   []uint32  `json:"ordinals"`
	SeqAtClose uint64    `json:"seq_at_close"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	ErasedAt   time.Time `json:"erased_at"`
	// Hooks and Bytes are the tenant's counters at the last erase, summed
	// over its ordinals.
	Hooks uint64 `json:"hooks"`
	Bytes uint64 `json:"bytes"`
	// Removed counts what each stage of the last erase removed.
	Removed map[string]int64 `json:"removed,omitempty"`
	// ArchivePending: the archive's tombstone object is not written yet
	// (the job writes it after the final batch, and again at boot until
	// it is).
	ArchivePending bool `json:"archive_pending,omitempty"`
}

// Gone reports whether the hook of ordinal ord belongs to an erased
// tenant of this tombstone.
func (t *Tombstone) Gone(ord uint32) bool { return slices.Contains(t.Ordinals, ord) }

func decodeTombstone(tenant string, v []byte) (Tombstone, error) {
	var t Tombstone
	if err := json.Unmarshal(v, &t); err != nil {
		return t, fmt.Errorf("%w: the tombstone of tenant %s: %v", ErrBadRecord, tenant, err)
	}
	if t.Tenant != tenant {
		return t, fmt.Errorf("%w: the tombstone of tenant %s names tenant %q", ErrBadRecord, tenant, t.Tenant)
	}
	return t, nil
}

// TombstoneOf is tenant's tombstone; found is false for a tenant never
// erased on this node.
func (s *Store) TombstoneOf(tenant string) (t Tombstone, found bool, err error) {
	found, err = s.getKey("the tombstone of tenant "+tenant, func(dst []byte) []byte { return appendNameKey(dst, prefixErased, tenant) },
		func(v []byte) (err error) {
			t, err = decodeTombstone(tenant, v)
			return err
		})
	return t, found, err
}

// Tombstones lists every erased tenant's tombstone.
func (s *Store) Tombstones() ([]Tombstone, error) {
	var out []Tombstone
	lo, hi := prefixRange(prefixErased)
	err := s.scan("the tombstones", lo, hi, func(k, v []byte) (bool, error) {
		t, err := decodeTombstone(parseNameKey(prefixErased, k), v)
		if err != nil {
			return true, err
		}
		out = append(out, t)
		return false, nil
	})
	return out, err
}

// ErasedOrdinals is every ordinal a tombstone names: never given again,
// and never mapped back to its name at boot.
func (s *Store) ErasedOrdinals() (map[uint32]string, error) {
	ts, err := s.Tombstones()
	if err != nil {
		return nil, err
	}
	out := map[uint32]string{}
	for _, t := range ts {
		for _, o := range t.Ordinals {
			out[o] = t.Tenant
		}
	}
	return out, nil
}

// SetTombstoneArchived clears ArchivePending once the archive holds the
// tenant's tombstone object of the erase that ended at erasedAt (a synced
// write); a later erase's tombstone, still to be written, stays pending.
func (s *Store) SetTombstoneArchived(tenant string, erasedAt time.Time) error {
	t, found, err := s.TombstoneOf(tenant)
	if err != nil || !found || !t.ArchivePending || !t.ErasedAt.Equal(erasedAt) {
		return err
	}
	t.ArchivePending = false
	v, _ := json.Marshal(&t)
	if err := s.set(appendNameKey(nil, prefixErased, tenant), v, Sync); err != nil {
		return fmt.Errorf("cannot record the archived tombstone of tenant %s: %w", tenant, err)
	}
	return nil
}

// Deleted counts the keys DeleteTenantFamilies deleted, by family.
type Deleted map[string]int64

// Total is the keys deleted in every family.
func (d Deleted) Total() int64 {
	var n int64
	for _, c := range d {
		n += c
	}
	return n
}

// DeleteTenantFamilies deletes, in one synced batch, every key of the
// tenant with ordinal ord and name name in the named families (see
// TenantRanges), and returns how many keys it deleted in each (the rows
// and dead families' counts are the tenant's rows and dead letters, as
// CountRows counts them). An erase stage calls it once the stage's
// writers are stopped for the tenant.
func (s *Store) DeleteTenantFamilies(ord uint32, name string, families ...string) (Deleted, error) {
	ranges, err := s.TenantRanges(ord, name)
	if err != nil {
		return nil, err
	}
	b := s.NewBatch()
	defer b.Close()
	out := Deleted{}
	for _, r := range ranges {
		if !slices.Contains(families, r.Family) {
			continue
		}
		err := s.scan("the "+r.Family+" keys of tenant "+name, r.Lo, r.Hi, func(k, _ []byte) (bool, error) {
			out[r.Family]++
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		_ = b.b.DeleteRange(r.Lo, r.Hi, nil)
	}
	if err := b.Commit(Sync); err != nil {
		return nil, fmt.Errorf("cannot delete the %v keys of tenant %s: %w", families, name, err)
	}
	return out, nil
}

// DeleteTenantEvents deletes every lifecycle event of tenant up to seq
// upTo (records and their places in the outbox's order) in one synced
// batch, and returns how many: the erase's events stage, once the
// publisher has passed upTo.
func (s *Store) DeleteTenantEvents(tenant string, upTo uint64) (int64, error) {
	b := s.NewBatch()
	defer b.Close()
	n, err := s.deleteTenantEvents(b, tenant, upTo)
	if err != nil || n == 0 {
		return n, err
	}
	if err := b.Commit(Sync); err != nil {
		return 0, fmt.Errorf("cannot delete the lifecycle events of tenant %s: %w", tenant, err)
	}
	return n, nil
}

func (s *Store) deleteTenantEvents(b *Batch, tenant string, upTo uint64) (int64, error) {
	var n int64
	err := s.TenantEvents(tenant, 0, func(ev *EventRecord) (bool, error) {
		if ev.Seq > upTo {
			return true, nil
		}
		b.del(eventSeqKey(ev.Seq))
		n++
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		_ = b.b.DeleteRange(entityPrefix(prefixEvent, tenant), eventKey(tenant, upTo+1), nil)
	}
	return n, nil
}

// FinishErase is the erase's final batch, synced, all or none: the
// tombstone (t, merged with the tenant's earlier one), the tenant's name
// freed (its mirror t:<tenant>) and its counters of ordinal ord removed
// (they go into the tombstone), every event of the tenant up to
// eventsUpTo removed, and final, the tenant.delete audit row with its
// io.ankusa.tenant.deleted event, added; and the progress row deleted.
// hasOrd is false for a tenant that never had an ordinal on this node.
// It returns the tombstone as written and the final event's record: a
// replay of the tenant yields that event alone.
func (s *Store) FinishErase(t Tombstone, ord uint32, hasOrd bool, eventsUpTo uint64, final AuditRow) (Tombstone, EventRecord, error) {
	old, found, err := s.TombstoneOf(t.Tenant)
	if err != nil {
		return t, EventRecord{}, err
	}
	t.Ordinals = nil
	if found {
		// The tenant erased before, under other ordinals: the tombstone
		// names them all and sums their counters; an erase of a name that
		// has not sent since keeps the last close.
		t.Ordinals = append(t.Ordinals, old.Ordinals...)
		t.Hooks += old.Hooks
		t.Bytes += old.Bytes
		if !hasOrd {
			t.SeqAtClose = old.SeqAtClose
		}
	}
	b := s.NewBatch()
	defer b.Close()
	if hasOrd {
		if !slices.Contains(t.Ordinals, ord) {
			t.Ordinals = append(t.Ordinals, ord)
		}
		// The name is freed only when it still names this ordinal.
		if info, ok, err := s.TenantInfo(t.Tenant); err != nil {
			return t, EventRecord{}, err
		} else if ok && info.Ordinal == ord {
			b.del(tenantKey(t.Tenant))
		}
		b.del(tenantCountKey(ord))
	}
	slices.Sort(t.Ordinals)
	if _, err := s.deleteTenantEvents(b, t.Tenant, eventsUpTo); err != nil {
		return t, EventRecord{}, err
	}
	v, err := json.Marshal(&t)
	if err != nil {
		return t, EventRecord{}, err
	}
	b.set(appendNameKey(nil, prefixErased, t.Tenant), v)
	b.del(appendNameKey(nil, prefixErase, t.Tenant))
	final.Tenant = t.Tenant
	if err := b.AddAudit(final); err != nil {
		return t, EventRecord{}, err
	}
	if err := b.Commit(Sync); err != nil {
		return t, EventRecord{}, fmt.Errorf("cannot write the tombstone of tenant %s: %w", t.Tenant, err)
	}
	seq := b.events[0].seq
	var rec EventRecord
	found, err = s.getKey("a lifecycle event", func(dst []byte) []byte { return appendEventKey(dst, t.Tenant, seq) }, func(v []byte) (err error) {
		rec, err = decodeEvent(seq, v)
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("the final lifecycle event %d of tenant %s is not in the outbox after its commit", seq, t.Tenant)
	}
	return t, rec, err
}
