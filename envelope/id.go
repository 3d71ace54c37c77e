package envelope

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// ID is an event id: 128 bits, big-endian, laid out as
//
//	bits 127..80  48-bit unix milliseconds (commit time, clamped so it never goes back)
//	bits  79..64  16-bit node ordinal
//	bits  63..0   64-bit node sequence number (the record's Seq)
//
// Ids of one node are strictly increasing in commit order; ids of two nodes
// differ in the node ordinal. The text form is "evt_" followed by 26 Crockford
// base32 characters (130 bits, the top two always zero), so text ids sort as
// the binary ones do.
type ID [16]byte

// IDTextLen is the length of an id's text form.
const IDTextLen = 4 + 26

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var crockfordDec = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(crockford); i++ {
		c := crockford[i]
		t[c] = byte(i)
		if c >= 'A' && c <= 'Z' {
			t[c+'a'-'A'] = byte(i)
		}
	}
	// Crockford's aliases.
	t['O'], t['o'] = 0, 0
	t['I'], t['i'], t['L'], t['l'] = 1, 1, 1, 1
	return t
}()

// ErrBadID is returned for text that is not an event id.
var ErrBadID = errors.New("envelope: malformed event id")

// MakeID builds an id from its parts.
func MakeID(ms uint64, node uint16, seq uint64) ID {
	var id ID
	hi := ms<<16 | uint64(node)
	binary.BigEndian.PutUint64(id[0:8], hi)
	binary.BigEndian.PutUint64(id[8:16], seq)
	return id
}

// Millis is the id's 48-bit time part.
func (id ID) Millis() uint64 { return binary.BigEndian.Uint64(id[0:8]) >> 16 }

// Node is the id's node ordinal.
func (id ID) Node() uint16 { return uint16(binary.BigEndian.Uint64(id[0:8])) }

// Seq is the id's sequence part.
func (id ID) Seq() uint64 { return binary.BigEndian.Uint64(id[8:16]) }

// IsZero reports whether id is the zero id.
func (id ID) IsZero() bool { return id == ID{} }

// AppendText appends the text form ("evt_" + 26 characters) to dst.
func (id ID) AppendText(dst []byte) []byte {
	dst = append(dst, "evt_"...)
	hi := binary.BigEndian.Uint64(id[0:8])
	lo := binary.BigEndian.Uint64(id[8:16])
	// 130 bits: two zero bits, then the 128 bits of the id, read 5 at a time
	// from the top.
	for i := 25; i >= 0; i-- {
		shift := uint(5 * i)
		var v uint64
		switch {
		case shift >= 64:
			v = hi >> (shift - 64)
		case shift == 0:
			v = lo
		default:
			v = lo>>shift | hi<<(64-shift)
		}
		dst = append(dst, crockford[v&31])
	}
	return dst
}

// String returns the text form.
func (id ID) String() string { return string(id.AppendText(make([]byte, 0, IDTextLen))) }

// ParseID parses the text form of an id.
func ParseID(s []byte) (ID, error) {
	if len(s) != IDTextLen || string(s[:4]) != "evt_" {
		return ID{}, ErrBadID
	}
	var hi, lo uint64
	for i := 0; i < 26; i++ {
		v := crockfordDec[s[4+i]]
		if v == 0xff {
			return ID{}, ErrBadID
		}
		if i == 0 && v > 7 {
			return ID{}, ErrBadID // more than 128 bits
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	var id ID
	binary.BigEndian.PutUint64(id[0:8], hi)
	binary.BigEndian.PutUint64(id[8:16], lo)
	return id, nil
}

// IDGen assigns ids in commit order. It is owned by the commit loop and is
// not safe for concurrent use.
type IDGen struct {
	node   uint16
	lastMs uint64
	last   ID
}

// NewIDGen returns a generator for node whose ids stay above last, even if
// the clock has stepped back since last was issued.
func NewIDGen(node uint16, last ID) *IDGen {
	return &IDGen{node: node, lastMs: last.Millis(), last: last}
}

// Next returns the id of the record with sequence seq committed at nowMs.
// Time never goes back: a clock step backwards reuses the last millisecond,
// and the sequence part keeps ids strictly increasing. If the node or seq
// part would still put the id at or below the last one (a floor taken from
// outside, a renumbered node), the time part moves one millisecond on.
func (g *IDGen) Next(nowMs, seq uint64) ID {
	if nowMs > g.lastMs {
		g.lastMs = nowMs & (1<<48 - 1)
	}
	id := MakeID(g.lastMs, g.node, seq)
	if bytes.Compare(id[:], g.last[:]) <= 0 {
		g.lastMs = g.last.Millis() + 1
		id = MakeID(g.lastMs, g.node, seq)
	}
	g.last = id
	return id
}
