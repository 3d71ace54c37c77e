package meta

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
)

// DedupeDay is the day number (unix days) a dedupe key expiring at
// expiry (unix ns) is filed under: its keys are one prefix, swept with
// one range delete once the day is past.
func DedupeDay(expiry int64) uint32 {
	if expiry < 0 {
		return 0
	}
	return uint32(expiry / (24 * 3600 * 1e9))
}

// DedupeValue is what a dedupe key maps to: the committed hook. Its key
// is DedupeKey(DedupeDay(Expiry), ordinal, source, hash).
//
// Value: event id [16] | expiry i64 (unix ns) | seq u64
type DedupeValue struct {
	EventID envelope.ID
	Expiry  int64
	Seq     uint64
}

// AppendTo appends the value's encoding to dst.
func (v *DedupeValue) AppendTo(dst []byte) []byte {
	dst = append(dst, v.EventID[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.Expiry))
	return binary.BigEndian.AppendUint64(dst, v.Seq)
}

// DecodeDedupeValue decodes a dedupe key's value.
func DecodeDedupeValue(b []byte, v *DedupeValue) error {
	if len(b) != 32 {
		return fmt.Errorf("%w: dedupe value of %d bytes, want 32", ErrBadRecord, len(b))
	}
	copy(v.EventID[:], b)
	v.Expiry = int64(binary.BigEndian.Uint64(b[16:]))
	v.Seq = binary.BigEndian.Uint64(b[24:])
	return nil
}

// AddDedupe records the dedupe key hash of a committed hook of tenant
// ord's source, filed under the day of v.Expiry (the row writer adds it
// to the batch of the hook's rows: DESIGN.md §6 item 5).
func (b *Batch) AddDedupe(ord uint32, source string, hash []byte, v *DedupeValue) {
	b.key = DedupeKey(b.key[:0], DedupeDay(v.Expiry), ord, source, hash)
	b.val = v.AppendTo(b.val[:0])
	b.set(b.key, b.val)
}

// LookupDedupe finds the dedupe key hash of tenant ord's source that has
// not expired at now (unix ns). A key kept for ttl is filed under the
// day it expires, so the days from now's to now+ttl's are the ones to
// look in. A value that does not decode is not a match (dedupe never
// drops a hook): it is skipped and counted in damaged.
func (s *Store) LookupDedupe(ord uint32, source string, hash []byte, ttl time.Duration, now int64) (v DedupeValue, found bool, damaged int, err error) {
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	for day := DedupeDay(now); day <= DedupeDay(now+int64(ttl)); day++ {
		kb.b = DedupeKey(kb.b[:0], day, ord, source, hash)
		raw, c, ok, err := s.get(kb.b)
		if err != nil {
			return v, false, damaged, fmt.Errorf("cannot read a dedupe key: %w", err)
		}
		if !ok {
			continue
		}
		derr := DecodeDedupeValue(raw, &v)
		c.Close()
		if derr != nil {
			damaged++
			continue
		}
		if v.Expiry > now {
			return v, true, damaged, nil
		}
	}
	return DedupeValue{}, false, damaged, nil
}

// SweepDedupe deletes every dedupe key filed under a day before now's
// (one range delete, unsynced: their expiry is past, and a key that comes
// back after a crash is swept again). A key expiring later today stays
// until tomorrow's sweep; LookupDedupe checks its expiry.
func (s *Store) SweepDedupe(now int64) error {
	if err := s.db.DeleteRange([]byte(prefixDedupe), dedupeDayPrefix(DedupeDay(now)), pebble.NoSync); err != nil {
		return fmt.Errorf("cannot sweep expired dedupe keys: %w", err)
	}
	return nil
}
