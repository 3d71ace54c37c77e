package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/ankusa/ankusa/envelope"
)

// Delivery row states, as stored.
const (
	RowPending byte = 1
	RowDead    byte = 3
)

// Delivery is one stored delivery row: one hook, one sink (DESIGN.md §2.7).
// Its key is RowKey(RowID{ordinal, seq, sink}).
//
// Value, version 1:
//
//	version u8 = 1 | state u8 | attempts u16 | received_at i64 | started_at i64
//	| due i64 | last_at i64 | last_status u16 | event id [16]
//	| source (uvarint length, bytes) | last_error (uvarint length, bytes)
//	[| release u8, only when not 0]
//
// Times are unix nanoseconds. Release marks the rows of a hook released
// from the quarantine pen: its deliveries say how (ReleaseVerified: it
// verified with the source's current secret; ReleaseForced: an operator
// forced it out unverified, so it is delivered flagged).
type Delivery struct {
	State    byte
	Attempts uint16
	// ReceivedAt is the hook's receipt; StartedAt starts the max_age clock
	// (the receipt, or the time an operator retried a dead letter).
	ReceivedAt, StartedAt int64
	// Due is when a pending row is next tried.
	Due        int64
	LastAt     int64
	LastStatus uint16
	EventID    envelope.ID
	Source     string
	LastError  string
	Release    byte
}

// Release marks of a row (see Delivery).
const (
	ReleaseVerified byte = 1
	ReleaseForced   byte = 2
)

const deliveryVersion = 1

// maxErrorBytes bounds the last error a row keeps.
const maxErrorBytes = 512

// AppendTo appends the row's encoding to dst.
func (d *Delivery) AppendTo(dst []byte) []byte {
	dst = append(dst, deliveryVersion, d.State)
	dst = binary.BigEndian.AppendUint16(dst, d.Attempts)
	for _, t := range [...]int64{d.ReceivedAt, d.StartedAt, d.Due, d.LastAt} {
		dst = binary.BigEndian.AppendUint64(dst, uint64(t))
	}
	dst = binary.BigEndian.AppendUint16(dst, d.LastStatus)
	dst = append(dst, d.EventID[:]...)
	dst = envelope.AppendString(dst, d.Source)
	e := d.LastError
	if len(e) > maxErrorBytes {
		e = e[:maxErrorBytes]
	}
	dst = envelope.AppendString(dst, e)
	if d.Release != 0 {
		dst = append(dst, d.Release)
	}
	return dst
}

// RowState is the state of an encoded row without decoding the rest; 0 for
// a value that is not a row.
func RowState(v []byte) byte {
	if len(v) < 2 || v[0] != deliveryVersion {
		return 0
	}
	return v[1]
}

// DecodeDelivery decodes a row value.
func DecodeDelivery(b []byte, d *Delivery) error {
	const fixed = 2 + 2 + 4*8 + 2 + 16
	if len(b) < fixed || b[0] != deliveryVersion {
		return fmt.Errorf("%w: delivery row of %d bytes, version %d", ErrBadRecord, len(b), firstByte(b))
	}
	d.State = b[1]
	d.Attempts = binary.BigEndian.Uint16(b[2:])
	d.ReceivedAt = int64(binary.BigEndian.Uint64(b[4:]))
	d.StartedAt = int64(binary.BigEndian.Uint64(b[12:]))
	d.Due = int64(binary.BigEndian.Uint64(b[20:]))
	d.LastAt = int64(binary.BigEndian.Uint64(b[28:]))
	d.LastStatus = binary.BigEndian.Uint16(b[36:])
	copy(d.EventID[:], b[38:54])
	rest := b[54:]
	var ok bool
	if d.Source, rest, ok = readString(rest); !ok {
		return fmt.Errorf("%w: delivery row source", ErrBadRecord)
	}
	if d.LastError, rest, ok = readString(rest); !ok {
		return fmt.Errorf("%w: delivery row last error", ErrBadRecord)
	}
	d.Release = 0
	if len(rest) > 0 {
		d.Release = rest[0]
	}
	if d.Release > ReleaseForced {
		return fmt.Errorf("%w: delivery row release mark %d", ErrBadRecord, d.Release)
	}
	if d.State != RowPending && d.State != RowDead {
		return fmt.Errorf("%w: delivery row state %d", ErrBadRecord, d.State)
	}
	return nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

func readString(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", b, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
