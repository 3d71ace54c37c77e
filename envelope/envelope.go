package envelope

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kinds of payload, the first byte of every encoded record.
const (
	KindEnvelope byte = 1
	KindTenant   byte = 2
)

// Fixed offsets of the identity prefix shared by every record kind.
const (
	OffKind       = 0
	OffSeq        = 1
	OffID         = 9
	OffOrdinal    = 25
	IdentSize     = 29 // bytes 0..28: kind, seq, id, ordinal
	OffReceivedAt = 29
	OffFlags      = 37
	FixedSize     = 38
)

// Verification flag bits (byte OffFlags).
const (
	FlagVerified    byte = 1 << 0
	FlagFlagged     byte = 1 << 1
	FlagQuarantined byte = 1 << 2
	// FlagRemoteAddr: the sender's address follows the dedupe key. It is
	// about the record's layout, not its verification.
	FlagRemoteAddr byte = 1 << 3
	// FlagEventType: the hook's event type is the record's last field
	// (after the remote address when bit 3 is set, else after the dedupe
	// key). Like bit 3 it is about the layout: records written before
	// event types were recorded lack it and decode with EventType "".
	FlagEventType byte = 1 << 7
	// Bits 4..6 hold why a flagged or quarantined hook failed verification
	// (Fail*), so an operator looking at the pen sees the reason.
	failShift      = 4
	failMask  byte = 7 << failShift
)

// Verification failure reasons (Verification.Failure).
const (
	FailNone      uint8 = 0
	FailMissing   uint8 = 1 // the signature header is absent
	FailMalformed uint8 = 2 // the signature header does not parse
	FailMismatch  uint8 = 3 // no signature matches a configured secret
	FailExpired   uint8 = 4 // the signed timestamp is outside the tolerance
)

// FailureName is the reason's name in answers and listings.
func FailureName(f uint8) string {
	switch f {
	case FailNone:
		return ""
	case FailMissing:
		return "missing"
	case FailMalformed:
		return "malformed"
	case FailMismatch:
		return "mismatch"
	case FailExpired:
		return "expired"
	}
	return "unknown"
}

// MaxHeaders bounds the number of header fields an envelope may carry.
const MaxHeaders = 1 << 12

// ErrCorrupt is returned when encoded bytes do not decode.
var ErrCorrupt = errors.New("envelope: corrupt encoding")

// Param is one route parameter.
type Param struct{ Key, Value string }

// Header is one header field as received; a repeated name is several fields.
type Header struct{ Name, Value string }

// Verification says how the hook's signature was checked.
type Verification struct {
	Verifier    string
	Verified    bool
	Flagged     bool
	Quarantined bool
	// Failure is why verification failed (FailNone when it did not);
	// node-internal like Quarantined, not part of the JSON form.
	Failure uint8
}

// Envelope is one hook as stored and delivered.
type Envelope struct {
	Seq           uint64
	ID            ID
	TenantOrdinal uint32
	TenantID      string
	SourceID      string
	ReceivedAt    int64 // unix nanoseconds
	RouteParams   []Param
	Headers       []Header
	Body          []byte
	Verification  Verification
	DedupeKey     string
	// EventType is the provider's name for what happened ("push",
	// "invoice.paid"), read where the source's preset says; "" when it
	// has none.
	EventType string
	// RemoteAddr is the sender's address, "ip:port", as the edge saw it
	// at receipt: the PROXY header's sender behind a trusted balancer,
	// else the peer. Empty when unknown (records written before it).
	RemoteAddr string
	// BodyClaim, when set, says the body is delivered by reference (a
	// sink's claim: DESIGN.md §2.6): the JSON form writes body_claim in
	// place of the body. Never stored: the binary form has no field for
	// it and Decode leaves it nil.
	BodyClaim *Claim
}

// Flags encodes the verification flags byte.
func (v Verification) Flags() byte {
	var f byte
	if v.Verified {
		f |= FlagVerified
	}
	if v.Flagged {
		f |= FlagFlagged
	}
	if v.Quarantined {
		f |= FlagQuarantined
	}
	return f | FailureBits(v.Failure)
}

// FailureBits is a failure reason's bits in the flags byte.
func FailureBits(reason uint8) byte { return reason << failShift & failMask }

// AppendTo appends the binary form of e to dst.
func (e *Envelope) AppendTo(dst []byte) []byte {
	var a Appender
	start := len(dst)
	dst = a.Begin(dst, e.ReceivedAt, e.Verification.Flags(), e.TenantID, e.SourceID, e.Verification.Verifier)
	PutIdentity(dst[start:], e.Seq, e.ID, e.TenantOrdinal)
	dst = a.Params(dst, len(e.RouteParams))
	for _, p := range e.RouteParams {
		dst = a.Pair(dst, p.Key, p.Value)
	}
	dst = a.Headers(dst, len(e.Headers))
	for _, h := range e.Headers {
		dst = a.Pair(dst, h.Name, h.Value)
	}
	dst = a.Body(dst, e.Body)
	return a.EndEvent(dst, e.DedupeKey, e.RemoteAddr, e.EventType)
}

// EncodedLen is the length of e's binary form (what AppendTo appends).
func (e *Envelope) EncodedLen() int {
	str := func(s string) int { return uvarintLen(uint64(len(s))) + len(s) }
	n := FixedSize + str(e.TenantID) + str(e.SourceID) + str(e.Verification.Verifier)
	n += uvarintLen(uint64(len(e.RouteParams)))
	for _, p := range e.RouteParams {
		n += str(p.Key) + str(p.Value)
	}
	n += uvarintLen(uint64(len(e.Headers)))
	for _, h := range e.Headers {
		n += str(h.Name) + str(h.Value)
	}
	n += bodyLenSize + len(e.Body) + str(e.DedupeKey)
	if e.RemoteAddr != "" {
		n += str(e.RemoteAddr)
	}
	if e.EventType != "" {
		n += str(e.EventType)
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// appendFixed appends the fixed 38-byte prefix with a zero identity.
func appendFixed(dst []byte, receivedAt int64, flags byte) []byte {
	var b [FixedSize]byte
	b[OffKind] = KindEnvelope
	binary.BigEndian.PutUint64(b[OffReceivedAt:], uint64(receivedAt))
	b[OffFlags] = flags
	return append(dst, b[:]...)
}

// PutIdentity writes seq, id and ordinal into the identity prefix of rec,
// which must be at least IdentSize bytes.
func PutIdentity(rec []byte, seq uint64, id ID, ordinal uint32) {
	binary.BigEndian.PutUint64(rec[OffSeq:], seq)
	copy(rec[OffID:OffID+16], id[:])
	binary.BigEndian.PutUint32(rec[OffOrdinal:], ordinal)
}

// Identity reads the identity prefix of an encoded record.
func Identity(rec []byte) (kind byte, seq uint64, id ID, ordinal uint32) {
	kind = rec[OffKind]
	seq = binary.BigEndian.Uint64(rec[OffSeq:])
	copy(id[:], rec[OffID:OffID+16])
	ordinal = binary.BigEndian.Uint32(rec[OffOrdinal:])
	return
}

// AppendString appends a uvarint length and the string's bytes.
func AppendString[T string | []byte](dst []byte, s T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Decode decodes one envelope from src into e and returns what follows it.
// Strings and the body are copied: e does not keep src.
func Decode(src []byte, e *Envelope) ([]byte, error) {
	if len(src) < FixedSize {
		return src, fmt.Errorf("%w: %d bytes, need at least %d", ErrCorrupt, len(src), FixedSize)
	}
	if src[OffKind] != KindEnvelope {
		return src, fmt.Errorf("%w: kind %d is not an envelope", ErrCorrupt, src[OffKind])
	}
	var kind byte
	kind, e.Seq, e.ID, e.TenantOrdinal = Identity(src)
	_ = kind
	e.ReceivedAt = int64(binary.BigEndian.Uint64(src[OffReceivedAt:]))
	f := src[OffFlags]
	e.Verification = Verification{Verified: f&FlagVerified != 0, Flagged: f&FlagFlagged != 0, Quarantined: f&FlagQuarantined != 0,
		Failure: (f & failMask) >> failShift}
	d := decoder{b: src[FixedSize:]}
	e.TenantID = d.str()
	e.SourceID = d.str()
	e.Verification.Verifier = d.str()
	if n := d.count(); n > 0 {
		e.RouteParams = make([]Param, n)
		for i := range e.RouteParams {
			e.RouteParams[i] = Param{Key: d.str(), Value: d.str()}
		}
	} else {
		e.RouteParams = nil
	}
	if n := d.count(); n > 0 {
		e.Headers = make([]Header, n)
		for i := range e.Headers {
			e.Headers[i] = Header{Name: d.str(), Value: d.str()}
		}
	} else {
		e.Headers = nil
	}
	e.Body = append([]byte(nil), d.u32bytes()...)
	e.DedupeKey = d.str()
	e.RemoteAddr = ""
	if f&FlagRemoteAddr != 0 {
		e.RemoteAddr = d.str()
	}
	e.EventType = ""
	if f&FlagEventType != 0 {
		e.EventType = d.str()
	}
	if d.err != nil {
		return src, d.err
	}
	return d.b, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrCorrupt, what)
	}
	d.b = nil
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes(d.uvarint("length"), "string")) }

func (d *decoder) count() int {
	n := d.uvarint("count")
	// Every element takes at least two bytes: a count past that is corrupt,
	// and must not make Decode allocate a huge slice.
	if n > uint64(len(d.b))/2 || n > MaxHeaders {
		if d.err == nil {
			d.err = fmt.Errorf("%w: count %d too large", ErrCorrupt, n)
		}
		d.b = nil
		return 0
	}
	return int(n)
}

func (d *decoder) u32bytes() []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < 4 {
		d.fail("body length")
		return nil
	}
	n := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return d.bytes(uint64(n), "body")
}

// Names reads the tenant and source ids of an encoded envelope without
// allocating; the slices alias src.
func Names(src []byte) (tenant, source []byte, ok bool) {
	if len(src) < FixedSize || src[OffKind] != KindEnvelope {
		return nil, nil, false
	}
	b := src[FixedSize:]
	for i := range 2 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, nil, false
		}
		if i == 0 {
			tenant = b[k : k+int(n)]
		} else {
			source = b[k : k+int(n)]
		}
		b = b[k+int(n):]
	}
	return tenant, source, true
}
