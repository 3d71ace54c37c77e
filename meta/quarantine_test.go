package meta

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
	"github.com/cockroachdb/pebble/v2/vfs"
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

// The pen's rows are listed by tenant from a seq, read back one by one,
// and summed; rows that do not decode are skipped and counted.
func TestPenStore(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(b *Batch) {
		for seq := uint64(1); seq <= 4; seq++ {
			b.PutPen(1, seq, &PenRow{Bytes: uint32(seq * 10), Source: "src"})
		}
		b.PutPen(2, 9, &PenRow{Bytes: 5, Source: "other"})
		b.DeletePen(1, 2)
	})
	if err := s.db.Set(PenKey(nil, 1, 3), []byte{9}, nil); err != nil { // damage
		t.Fatal(err)
	}
	var seqs []uint64
	damaged, err := s.PenRows(1, 0, func(seq uint64, p *PenRow) bool { seqs = append(seqs, seq); return false })
	if err != nil || damaged != 1 || fmt.Sprint(seqs) != "[1 4]" {
		t.Fatalf("PenRows: %v, %d damaged, %v", seqs, damaged, err)
	}
	seqs = nil
	if _, err := s.PenRows(1, 4, func(seq uint64, p *PenRow) bool { seqs = append(seqs, seq); return false }); err != nil || fmt.Sprint(seqs) != "[4]" {
		t.Fatalf("PenRows from 4: %v %v", seqs, err)
	}
	rows, bytes, damaged, err := s.PenSize()
	if err != nil || rows != 3 || bytes != 10+40+5 || damaged != 1 {
		t.Fatalf("PenSize: %d rows, %d bytes, %d damaged, %v", rows, bytes, damaged, err)
	}
	if p, ok, err := s.PenRow(2, 9); err != nil || !ok || p.Source != "other" {
		t.Fatalf("PenRow: %+v %v %v", p, ok, err)
	}
	if _, ok, err := s.PenRow(1, 2); ok || err != nil {
		t.Fatalf("a deleted pen row: %v %v", ok, err)
	}
	if _, _, err := s.PenRow(1, 3); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("a damaged pen row: %v", err)
	}
	if ok, err := s.PenExists(1, 3); !ok || err != nil {
		t.Fatalf("PenExists of a damaged row: %v %v", ok, err)
	}
}
