package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
)

// AttemptRecord is one attempt log entry. Its key is AttemptKey(row, n).
//
// Value: at i64 | latency ns i64 | status u16 | outcome (string) | error (string)
type AttemptRecord struct {
	At, Latency int64
	Status      uint16
	Outcome     string
	Error       string
}

// AppendTo appends the entry's encoding to dst.
func (a *AttemptRecord) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.At))
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.Latency))
	dst = binary.BigEndian.AppendUint16(dst, a.Status)
	dst = envelope.AppendString(dst, a.Outcome)
	e := a.Error
	if len(e) > maxErrorBytes {
		e = e[:maxErrorBytes]
	}
	return envelope.AppendString(dst, e)
}

// DecodeAttempt decodes an attempt log entry.
func DecodeAttempt(b []byte, a *AttemptRecord) error {
	if len(b) < 18 {
		return fmt.Errorf("%w: attempt entry of %d bytes", ErrBadRecord, len(b))
	}
	a.At = int64(binary.BigEndian.Uint64(b))
	a.Latency = int64(binary.BigEndian.Uint64(b[8:]))
	a.Status = binary.BigEndian.Uint16(b[16:])
	var ok bool
	rest := b[18:]
	if a.Outcome, rest, ok = readString(rest); !ok {
		return fmt.Errorf("%w: attempt outcome", ErrBadRecord)
	}
	if a.Error, _, ok = readString(rest); !ok {
		return fmt.Errorf("%w: attempt error", ErrBadRecord)
	}
	return nil
}

// PutAttempt writes entry n of row id's attempt log.
func (b *Batch) PutAttempt(id RowID, n uint16, a *AttemptRecord) {
	b.key = AttemptKey(b.key[:0], id, n)
	b.val = a.AppendTo(b.val[:0])
	b.set(b.key, b.val)
}

// HookAttempts calls fn with every entry of the attempt log of hook
// (ord, seq) that decodes, every sink, in (sink, attempt) order.
func (s *Store) HookAttempts(ord uint32, seq uint64, fn func(sink string, n uint16, a *AttemptRecord)) error {
	p := hookPrefix(prefixAttempt, ord, seq)
	return s.scan("the attempt log", p, prefixEnd(p), func(k, v []byte) (bool, error) {
		id, n, ok := parseAttemptKey(k)
		var a AttemptRecord
		if ok && DecodeAttempt(v, &a) == nil {
			fn(id.Sink, n, &a)
		}
		return false, nil
	})
}

// SweepAttempts deletes attempt log entries that started before cutoff
// (unix ns), in unsynced batches, and returns how many it deleted.
// Entries are in seq order per tenant, and seqs follow receipt, so for
// each tenant it deletes from the start up to the first entry still young
// (a later retry of an old hook waits for the sweep after it ages).
func (s *Store) SweepAttempts(cutoff int64) (int, error) {
	lo, hi := prefixRange(prefixAttempt)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for ok := it.First(); ok; {
		id, _, kok := parseAttemptKey(it.Key())
		var a AttemptRecord
		if kok && DecodeAttempt(it.Value(), &a) == nil && a.At >= cutoff {
			// The tenant's young part starts here: go to the next tenant.
			if id.Ord == ^uint32(0) {
				break
			}
			ok = it.SeekGE(tenantPrefix(prefixAttempt, id.Ord+1))
			continue
		}
		_ = b.Delete(it.Key(), nil) // the batch copies the key
		n++
		if b.Count() >= 4096 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return n, err
			}
			b.Reset()
		}
		ok = it.Next()
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return n, err
	}
	return n, it.Error()
}
