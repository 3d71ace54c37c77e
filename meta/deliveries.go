package meta

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
)

// Delivery row states, as stored.
const (
	RowPending byte = 1
	RowDead    byte = 3
)

// Delivery is one stored delivery row: one hook, one sink (DESIGN.md §2.7).
// Its key is RowKey(ordinal, seq, sink).
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

// ErrBadRecord is a stored value that does not decode.
var ErrBadRecord = errors.New("meta: stored record does not decode")

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

// RowKey is the key of the row of (ordinal, seq, sink), appended to dst.
func RowKey(dst []byte, ord uint32, seq uint64, sink string) []byte {
	dst = append(dst, PrefixRow...)
	return appendOrdSeqSink(dst, ord, seq, sink)
}

// DeadKey is the dead-letter index key of a row.
func DeadKey(dst []byte, ord uint32, seq uint64, sink string) []byte {
	dst = append(dst, PrefixDead...)
	return appendOrdSeqSink(dst, ord, seq, sink)
}

// DueKey is the due index key of a pending row due at due.
func DueKey(dst []byte, ord uint32, due int64, seq uint64, sink string) []byte {
	dst = append(dst, PrefixDue...)
	dst = binary.BigEndian.AppendUint32(dst, ord)
	dst = binary.BigEndian.AppendUint64(dst, uint64(max(due, 0)))
	dst = binary.BigEndian.AppendUint64(dst, seq)
	return append(dst, sink...)
}

// AttemptKey is the key of attempt n of a row.
func AttemptKey(dst []byte, ord uint32, seq uint64, sink string, n uint16) []byte {
	dst = append(dst, PrefixAttempt...)
	dst = appendOrdSeqSink(dst, ord, seq, sink)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint16(dst, n)
}

// TenantPrefix is the prefix of a tenant's keys under p (PrefixRow,
// PrefixDue, PrefixDead, PrefixAttempt).
func TenantPrefix(p string, ord uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(p), ord)
}

// HookPrefix is the prefix of one hook's keys under p (PrefixRow,
// PrefixDead, PrefixAttempt).
func HookPrefix(p string, ord uint32, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(TenantPrefix(p, ord), seq)
}

// PrefixEnd is the smallest key above every key starting with p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func appendOrdSeqSink(dst []byte, ord uint32, seq uint64, sink string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, ord)
	dst = binary.BigEndian.AppendUint64(dst, seq)
	return append(dst, sink...)
}

// ParseRowKey splits a key under PrefixRow or PrefixDead.
func ParseRowKey(k []byte) (ord uint32, seq uint64, sink string, ok bool) {
	if len(k) < 2+12+1 {
		return 0, 0, "", false
	}
	k = k[2:]
	return binary.BigEndian.Uint32(k), binary.BigEndian.Uint64(k[4:]), string(k[12:]), true
}

// ParseDueKey splits a key under PrefixDue.
func ParseDueKey(k []byte) (ord uint32, due int64, seq uint64, sink string, ok bool) {
	if len(k) < 2+20+1 {
		return 0, 0, 0, "", false
	}
	k = k[2:]
	return binary.BigEndian.Uint32(k), int64(binary.BigEndian.Uint64(k[4:])), binary.BigEndian.Uint64(k[12:]), string(k[20:]), true
}

// AttemptRecord is one attempt log entry.
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

// ParseAttemptKey splits a key under PrefixAttempt.
func ParseAttemptKey(k []byte) (ord uint32, seq uint64, sink string, n uint16, ok bool) {
	if len(k) < 2+12+1+1+2 || k[len(k)-3] != 0 {
		return 0, 0, "", 0, false
	}
	n = binary.BigEndian.Uint16(k[len(k)-2:])
	ord, seq, sink, ok = ParseRowKey(k[:len(k)-3])
	return ord, seq, sink, n, ok
}

// DispatchCheckpoint is the stored dispatch checkpoint (0 when none).
func (s *Store) DispatchCheckpoint() (uint64, error) {
	v, closer, err := s.db.Get([]byte(keyDispatchCheckpoint))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cannot read dispatch checkpoint: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: dispatch checkpoint of %d bytes, want 8", ErrBadRecord, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// SetDispatchCheckpoint stores the checkpoint with a synced write. pebble
// writes its log in commit order, so the sync also makes durable every
// unsynced batch committed before it: the rows the checkpoint covers.
func (s *Store) SetDispatchCheckpoint(seq uint64) error {
	v := binary.BigEndian.AppendUint64(nil, seq)
	if err := s.db.Set([]byte(keyDispatchCheckpoint), v, pebble.Sync); err != nil {
		return fmt.Errorf("cannot write dispatch checkpoint: %w", err)
	}
	return nil
}
