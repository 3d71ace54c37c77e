package meta

import (
	"encoding/binary"
	"fmt"

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

// DedupeKey is the node-scope key of a dedupe key hash (DESIGN.md §6 item
// 5): dd/<expiry day u32><ordinal u32><source>\x00<hash>, appended to dst.
// Source names match the name pattern, so they hold no 0x00.
func DedupeKey(dst []byte, day uint32, ord uint32, source string, hash []byte) []byte {
	dst = append(dst, PrefixDedupe...)
	dst = binary.BigEndian.AppendUint32(dst, day)
	dst = binary.BigEndian.AppendUint32(dst, ord)
	dst = append(dst, source...)
	dst = append(dst, 0)
	return append(dst, hash...)
}

// DedupeDayPrefix is the prefix of every dedupe key filed under day.
func DedupeDayPrefix(day uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(PrefixDedupe), day)
}

// DedupeValue is what a dedupe key maps to: the committed hook.
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
