package meta

import (
	"encoding/binary"
	"math"
)

// RowID names one delivery row: a hook (its tenant ordinal and seq) and
// one sink of its source.
type RowID struct {
	Ord  uint32
	Seq  uint64
	Sink string
}

// The row transitions below keep the indexes with the row, in the same
// batch: a pending row has exactly one due entry (at its Due), a dead row
// one dead-letter entry. Each sets row.State to the state it writes.

// PutPending writes the pending row id with its due entry at row.Due: a
// new row, or one released from the pen.
func (b *Batch) PutPending(id RowID, row *Delivery) {
	row.State = RowPending
	b.putRow(id, row)
	b.key = DueKey(b.key[:0], id, row.Due)
	b.set(b.key, nil)
	b.noteDue(id.Ord, row.Due)
}

// MovePending writes the pending row id, due at oldDue until now, with its
// due entry moved to row.Due (a retry, or a pause while a circuit is open).
func (b *Batch) MovePending(id RowID, oldDue int64, row *Delivery) {
	b.settleDue(id, oldDue)
	b.PutPending(id, row)
}

// DeletePending deletes the pending row id, due at due (it was
// delivered). Its attempt log stays until it ages out.
func (b *Batch) DeletePending(id RowID, due int64) {
	b.key = RowKey(b.key[:0], id)
	b.del(b.key)
	b.settleDue(id, due)
}

// DeleteFreshPending deletes the pending row id, due at due, that
// PutPending wrote once and nothing has written since (its first attempt
// delivered it): the row and its due entry go with single deletes, so a
// row written and delivered between two flushes leaves nothing in an
// sstable.
func (b *Batch) DeleteFreshPending(id RowID, due int64) {
	b.key = RowKey(b.key[:0], id)
	b.singleDel(b.key)
	b.settleDue(id, due)
}

// PutDead makes the pending row id, due at oldDue, a dead letter.
func (b *Batch) PutDead(id RowID, oldDue int64, row *Delivery) {
	b.settleDue(id, oldDue)
	row.State = RowDead
	b.putRow(id, row)
	b.key = DeadKey(b.key[:0], id)
	b.set(b.key, nil)
}

// Revive makes the dead letter id pending again, due at row.Due.
func (b *Batch) Revive(id RowID, row *Delivery) {
	b.key = DeadKey(b.key[:0], id)
	b.del(b.key)
	b.PutPending(id, row)
}

// DeleteDead deletes the dead letter id. Its attempt log stays until it
// ages out.
func (b *Batch) DeleteDead(id RowID) {
	b.key = RowKey(b.key[:0], id)
	b.del(b.key)
	b.key = DeadKey(b.key[:0], id)
	b.del(b.key)
}

// DeleteDue deletes one due entry alone: one whose row is gone or does
// not decode, which must not be scheduled again.
func (b *Batch) DeleteDue(id RowID, due int64) {
	b.key = DueKey(b.key[:0], id, due)
	b.del(b.key)
}

// settleDue deletes the due entry of a pending row that was read as
// pending (its row says it is due at due): PutPending wrote that key once,
// and nothing writes it again before this deletion, so a single delete
// cancels the write in the flush. DeleteDue, for entries of unknown
// history (damaged or orphaned ones), writes a plain tombstone.
func (b *Batch) settleDue(id RowID, due int64) {
	b.key = DueKey(b.key[:0], id, due)
	b.singleDel(b.key)
}

func (b *Batch) putRow(id RowID, row *Delivery) {
	b.key = RowKey(b.key[:0], id)
	b.val = row.AppendTo(b.val[:0])
	b.set(b.key, b.val)
}

// Row reads the row id. found is false when it is absent; a row that does
// not decode is an ErrBadRecord.
func (s *Store) Row(id RowID) (row Delivery, found bool, err error) {
	found, err = s.getKey("a delivery row", func(dst []byte) []byte { return RowKey(dst, id) },
		func(v []byte) error { return DecodeDelivery(v, &row) })
	return row, found, err
}

// RowExists reports whether the row id is in the store, whatever it holds.
func (s *Store) RowExists(id RowID) (bool, error) {
	return s.existsKey("a delivery row", func(dst []byte) []byte { return RowKey(dst, id) })
}

// DueExists reports whether the due entry of row id at due is in the
// store.
func (s *Store) DueExists(id RowID, due int64) (bool, error) {
	return s.existsKey("the due index", func(dst []byte) []byte { return DueKey(dst, id, due) })
}

// DueRows calls fn with every entry of tenant ord's due index, earliest
// first, until fn says stop. fn may write to the store: the entries are
// those of the store when DueRows began. A key that does not parse is
// given to malformed (may be nil) and skipped. An entry whose row held
// (may be nil) says is held by its reader is skipped too.
//
// The scan starts at a due time no entry of the tenant is before, except
// held ones (duecursor.go): past the deleted entries and the held ones
// earlier scans stepped over. Whoever lets go of a held row that is
// still pending (its entry where it was, or moved while it was held)
// must call NoteDue with its entry's due.
func (s *Store) DueRows(ord uint32, held func(RowID) bool, fn func(id RowID, due int64) (stop bool, err error), malformed func(key []byte)) error {
	p := tenantPrefix(prefixDue, ord)
	start, epoch := s.due.begin(ord)
	lo := binary.BigEndian.AppendUint64(tenantPrefix(prefixDue, ord), uint64(start))
	first, read, parsed := int64(math.MaxInt64), false, true
	err := s.scan("the due index", lo, prefixEnd(p), func(k, _ []byte) (bool, error) {
		id, due, ok := parseDueKey(k)
		if ok && held != nil && held(id) {
			return false, nil
		}
		if !read {
			read, first, parsed = true, due, ok
		}
		if !ok {
			if malformed != nil {
				malformed(k)
			}
			return false, nil
		}
		return fn(id, due)
	})
	s.due.end(ord, epoch, first, err == nil && parsed)
	return err
}

// NoteDue says the due entry of a row of tenant ord at due may be in the
// index though a DueRows scan skipped it as held: its reader let go of it
// without moving or deleting it. The next scan of the tenant starts no
// later than due. (A due entry put through a Batch needs no note.)
func (s *Store) NoteDue(ord uint32, due int64) { s.due.note([]dueNote{{ord: ord, due: due}}) }

// DeadRows calls fn with every dead letter of tenant ord in (seq, sink)
// order, after the row after (nil: from the first), until fn says stop.
// Each row is read as fn sees it: an index entry whose row is gone or no
// longer dead is skipped. fn may write to the store.
func (s *Store) DeadRows(ord uint32, after *RowID, fn func(id RowID, row *Delivery) (stop bool, err error)) error {
	p := tenantPrefix(prefixDead, ord)
	lo := p
	if after != nil {
		lo = append(DeadKey(nil, *after), 0) // just after after's key
	}
	return s.scan("the dead letters", lo, prefixEnd(p), func(k, _ []byte) (bool, error) {
		id, ok := parseRowKey(k)
		if !ok {
			return false, nil
		}
		row, found, err := s.Row(id)
		if err != nil {
			return true, err
		}
		if !found || row.State != RowDead {
			return false, nil
		}
		return fn(id, &row)
	})
}

// TenantRows calls fn with every row of tenant ord that decodes, in (seq,
// sink) order, until fn says stop.
func (s *Store) TenantRows(ord uint32, fn func(id RowID, row *Delivery) (stop bool)) error {
	p := tenantPrefix(prefixRow, ord)
	return s.scan("delivery rows", p, prefixEnd(p), func(k, v []byte) (bool, error) {
		var row Delivery
		id, ok := parseRowKey(k)
		if !ok || DecodeDelivery(v, &row) != nil {
			return false, nil
		}
		return fn(id, &row), nil
	})
}

// RowCounts is what CountRows found.
type RowCounts struct {
	// Rows counts every row, Dead the dead letters among them.
	Rows, Dead int64
	// Tenants are the ordinals with rows, ascending.
	Tenants []uint32
}

// CountRows counts the store's rows (one pass over every row and every
// dead-letter entry: at boot, not on a hot path).
func (s *Store) CountRows() (RowCounts, error) {
	var c RowCounts
	lo, hi := prefixRange(prefixRow)
	err := s.scan("delivery rows", lo, hi, func(k, _ []byte) (bool, error) {
		c.Rows++
		ord, _, ok := parseOrdinal(prefixRow, k)
		if !ok {
			return false, nil
		}
		if len(c.Tenants) == 0 || c.Tenants[len(c.Tenants)-1] != ord {
			c.Tenants = append(c.Tenants, ord)
		}
		return false, nil
	})
	if err == nil {
		lo, hi = prefixRange(prefixDead)
		err = s.scan("dead letters", lo, hi, func([]byte, []byte) (bool, error) { c.Dead++; return false, nil })
	}
	return c, err
}
