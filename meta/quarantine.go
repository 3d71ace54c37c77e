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

// PutPen holds hook (ord, seq) in the pen.
func (b *Batch) PutPen(ord uint32, seq uint64, p *PenRow) {
	b.key = PenKey(b.key[:0], ord, seq)
	b.val = p.AppendTo(b.val[:0])
	b.set(b.key, b.val)
}

// DeletePen takes hook (ord, seq) out of the pen.
func (b *Batch) DeletePen(ord uint32, seq uint64) {
	b.key = PenKey(b.key[:0], ord, seq)
	b.del(b.key)
}

// PenRow reads the pen row of hook (ord, seq); found is false when it is
// absent, and a row that does not decode is an ErrBadRecord.
func (s *Store) PenRow(ord uint32, seq uint64) (p PenRow, found bool, err error) {
	found, err = s.getKey("a quarantine row", func(dst []byte) []byte { return PenKey(dst, ord, seq) },
		func(v []byte) error { return DecodePenRow(v, &p) })
	return p, found, err
}

// PenExists reports whether the pen holds a row for hook (ord, seq),
// whatever it holds.
func (s *Store) PenExists(ord uint32, seq uint64) (bool, error) {
	return s.existsKey("a quarantine row", func(dst []byte) []byte { return PenKey(dst, ord, seq) })
}

// PenRows calls fn with tenant ord's pen rows in seq order, from seq from
// on, until fn says stop. Rows that do not decode are skipped and
// counted in damaged.
func (s *Store) PenRows(ord uint32, from uint64, fn func(seq uint64, p *PenRow) (stop bool)) (damaged int, err error) {
	p := tenantPrefix(prefixPen, ord)
	lo := p
	if from > 0 {
		lo = PenKey(nil, ord, from)
	}
	err = s.scan("the quarantine pen", lo, prefixEnd(p), func(k, v []byte) (bool, error) {
		_, seq, ok := parsePenKey(k)
		var r PenRow
		if !ok || DecodePenRow(v, &r) != nil {
			damaged++
			return false, nil
		}
		return fn(seq, &r), nil
	})
	return damaged, err
}

// PenSize is what the whole pen holds: its rows and their body bytes.
// Rows that do not decode are skipped and counted in damaged.
func (s *Store) PenSize() (rows, bytes int64, damaged int, err error) {
	lo, hi := prefixRange(prefixPen)
	err = s.scan("the quarantine pen", lo, hi, func(_, v []byte) (bool, error) {
		var p PenRow
		if DecodePenRow(v, &p) != nil {
			damaged++
			return false, nil
		}
		rows++
		bytes += int64(p.Bytes)
		return false, nil
	})
	return rows, bytes, damaged, err
}
