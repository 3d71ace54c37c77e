package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/ankusa/ankusa/envelope"
)

// PenRow is one hook held in the quarantine pen (DESIGN.md §6 item 6): it
// points at the hook's seq; the hook itself is a WAL record like any other.
// Its key is PenKey(ordinal, seq).
//
// Value, version 1:
//
//	version u8 = 1 | received_at i64 | event id [16] | bytes u32 | failure u8
//	| source (uvarint length, bytes)
//
// Bytes is the hook's body size, what the pen's byte cap counts (the edge
// reserves the same); Failure is the verification failure (envelope.Fail*).
type PenRow struct {
	ReceivedAt int64
	EventID    envelope.ID
	Bytes      uint32
	Failure    uint8
	Source     string
}

const penVersion = 1

// AppendTo appends the row's encoding to dst.
func (p *PenRow) AppendTo(dst []byte) []byte {
	dst = append(dst, penVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.ReceivedAt))
	dst = append(dst, p.EventID[:]...)
	dst = binary.BigEndian.AppendUint32(dst, p.Bytes)
	dst = append(dst, p.Failure)
	return envelope.AppendString(dst, p.Source)
}

// DecodePenRow decodes a pen row value.
func DecodePenRow(b []byte, p *PenRow) error {
	const fixed = 1 + 8 + 16 + 4 + 1
	if len(b) < fixed || b[0] != penVersion {
		return fmt.Errorf("%w: quarantine row of %d bytes, version %d", ErrBadRecord, len(b), firstByte(b))
	}
	p.ReceivedAt = int64(binary.BigEndian.Uint64(b[1:]))
	copy(p.EventID[:], b[9:25])
	p.Bytes = binary.BigEndian.Uint32(b[25:])
	p.Failure = b[29]
	var ok bool
	if p.Source, _, ok = readString(b[30:]); !ok {
		return fmt.Errorf("%w: quarantine row source", ErrBadRecord)
	}
	return nil
}

// PenKey is the key of the pen row of (ordinal, seq), appended to dst.
func PenKey(dst []byte, ord uint32, seq uint64) []byte {
	dst = append(dst, PrefixPen...)
	dst = binary.BigEndian.AppendUint32(dst, ord)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// ParsePenKey splits a key under PrefixPen.
func ParsePenKey(k []byte) (ord uint32, seq uint64, ok bool) {
	if len(k) != len(PrefixPen)+12 {
		return 0, 0, false
	}
	k = k[len(PrefixPen):]
	return binary.BigEndian.Uint32(k), binary.BigEndian.Uint64(k[4:]), true
}
