package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

func testPenRow() PenRow {
	return PenRow{ReceivedAt: 1_764_445_200_000_000_001, EventID: envelope.MakeID(1_764_445_200_000, 7, 42),
		Bytes: 1234, Failure: envelope.FailMismatch, Source: "stripe"}
}

// The pen row format is frozen: these bytes are what a node wrote.
func TestPenRowEncodingPinned(t *testing.T) {
	p := testPenRow()
	// version 1, received_at, event id, 1234 bytes, failure mismatch (3),
	// "stripe".
	const want = "01 187c918f9ba4a001 019ad1211e800007000000000000002a 000004d2 03 06 737472697065"
	if got := hex.EncodeToString(p.AppendTo(nil)); got != strings.ReplaceAll(want, " ", "") {
		t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
	}
	// AppendTo appends: what dst held stays in front.
	if got := p.AppendTo([]byte("xy")); !bytes.HasPrefix(got, []byte("xy")) || !bytes.Equal(got[2:], p.AppendTo(nil)) {
		t.Fatalf("AppendTo(dst) = %x", got)
	}
	for _, r := range []PenRow{p, {}, {ReceivedAt: -1, Bytes: 1<<32 - 1, Failure: envelope.FailExpired, Source: strings.Repeat("s", 200)}} {
		var back PenRow
		if err := DecodePenRow(r.AppendTo(nil), &back); err != nil || back != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, back, err)
		}
	}
}

// A pen row that does not decode is ErrBadRecord, never a panic.
func TestPenRowDecodeRejectsDamage(t *testing.T) {
	p := testPenRow()
	good := p.AppendTo(nil)
	cases := map[string][]byte{
		"empty":          nil,
		"short":          good[:29],
		"no source":      good[:30],
		"version 0":      append([]byte{0}, good[1:]...),
		"version 2":      append([]byte{2}, good[1:]...),
		"source cut":     good[:len(good)-1],
		"source length":  append(append([]byte(nil), good[:30]...), 0x07, 's'),
		"length varint":  append(append([]byte(nil), good[:30]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"length unended": append(append([]byte(nil), good[:30]...), 0x80),
	}
	for name, b := range cases {
		var back PenRow
		if err := DecodePenRow(b, &back); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s (%x): %v, want ErrBadRecord", name, b, err)
		}
	}
}

// Pen keys sort by tenant ordinal, then seq, stay inside their tenant's
// prefix, and parse back.
func TestPenKeys(t *testing.T) {
	if got := hex.EncodeToString(PenKey(nil, 0x01020304, 0x0a0b0c0d0e0f1011)); got != "712f010203040a0b0c0d0e0f1011" {
		t.Fatalf("PenKey = %s", got)
	}
	if got := PenKey([]byte("zz"), 1, 2); !bytes.Equal(got, append([]byte("zz"), PenKey(nil, 1, 2)...)) {
		t.Fatalf("PenKey(dst) = %x", got)
	}
	keys := [][]byte{
		PenKey(nil, 1, 0),
		PenKey(nil, 1, 255),
		PenKey(nil, 1, 256),
		PenKey(nil, 1, 1<<63),
		PenKey(nil, 1, 1<<64-1),
		PenKey(nil, 2, 0),
		PenKey(nil, 1<<32-1, 1),
	}
	for i := 1; i < len(keys); i++ {
		if bytes.Compare(keys[i-1], keys[i]) >= 0 {
			t.Fatalf("pen key %d (%x) does not sort before %d (%x)", i-1, keys[i-1], i, keys[i])
		}
	}
	lo, hi := tenantPrefix(prefixPen, 1), prefixEnd(tenantPrefix(prefixPen, 1))
	for i, k := range keys {
		ord, _, _ := parsePenKey(k)
		in := bytes.Compare(lo, k) <= 0 && bytes.Compare(k, hi) < 0
		if in != (ord == 1) {
			t.Fatalf("key %d (%x) in tenant 1's range: %v", i, k, in)
		}
	}
	for _, c := range []struct {
		ord uint32
		seq uint64
	}{{0, 0}, {1, 42}, {1<<32 - 1, 1<<64 - 1}} {
		if ord, seq, ok := parsePenKey(PenKey(nil, c.ord, c.seq)); !ok || ord != c.ord || seq != c.seq {
			t.Fatalf("parsePenKey(PenKey(%d, %d)) = %d %d %v", c.ord, c.seq, ord, seq, ok)
		}
	}
	k := PenKey(nil, 1, 2)
	for _, bad := range [][]byte{nil, []byte(prefixPen), k[:len(k)-1], append(append([]byte(nil), k...), 0)} {
		if _, _, ok := parsePenKey(bad); ok {
			t.Fatalf("parsePenKey accepted %x", bad)
		}
	}
}
