package envelope

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

var maxID = ID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func randomID(rng *rand.Rand) ID {
	var id ID
	for i := range id {
		id[i] = byte(rng.UintN(256))
	}
	// Vary the magnitude so short and long runs of leading zeros occur.
	for i := 0; i < rng.IntN(17); i++ {
		id[i] = 0
	}
	return id
}

func TestIDParts(t *testing.T) {
	f := func(ms uint64, node uint16, seq uint64) {
		t.Helper()
		id := MakeID(ms, node, seq)
		if id.Millis() != ms || id.Node() != node || id.Seq() != seq {
			t.Errorf("MakeID(%d, %d, %d) = ms %d node %d seq %d", ms, node, seq, id.Millis(), id.Node(), id.Seq())
		}
		if id.IsZero() != (ms == 0 && node == 0 && seq == 0) {
			t.Errorf("MakeID(%d, %d, %d).IsZero() = %v", ms, node, seq, id.IsZero())
		}
	}
	f(0, 0, 0)
	f(1, 0, 0)
	f(0, 1, 0)
	f(0, 0, 1)
	f(1_764_445_200_123, 7, 42)
	f(1<<48-1, 1<<16-1, 1<<64-1)
	if MakeID(1<<48-1, 1<<16-1, 1<<64-1) != maxID {
		t.Errorf("max parts do not fill the id")
	}
	// Ids order by time first, then node, then seq.
	ordered := []ID{MakeID(1, 0, 0), MakeID(1, 0, 1), MakeID(1, 1, 0), MakeID(2, 0, 0)}
	for i := 1; i < len(ordered); i++ {
		if bytes.Compare(ordered[i-1][:], ordered[i][:]) >= 0 {
			t.Errorf("%v is not below %v", ordered[i-1], ordered[i])
		}
	}
}

func TestIDTextRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []ID{{}, maxID, MakeID(0, 0, 1), {0x80}, {0x7f, 0xff}, MakeID(1_764_445_200_123, 7, 42), MakeID(1<<47, 0, 0)}
	for range 5000 {
		ids = append(ids, randomID(rng))
	}
	for _, id := range ids {
		text := id.AppendText([]byte("prefix:"))
		if !bytes.HasPrefix(text, []byte("prefix:evt_")) || len(text) != len("prefix:")+IDTextLen {
			t.Fatalf("AppendText(%x) = %q", id[:], text)
		}
		text = text[len("prefix:"):]
		if id.String() != string(text) {
			t.Fatalf("String() = %q, AppendText = %q", id.String(), text)
		}
		got, err := ParseID(text)
		if err != nil || got != id {
			t.Fatalf("ParseID(%q) = %x, %v; want %x", text, got[:], err, id[:])
		}
		// Lower case parses to the same id.
		got, err = ParseID([]byte("evt_" + strings.ToLower(string(text[4:]))))
		if err != nil || got != id {
			t.Fatalf("ParseID(lower %q) = %x, %v", text, got[:], err)
		}
	}
}

// TestIDTextSorts checks that comparing text ids gives the same order as
// comparing binary ids.
func TestIDTextSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sign := func(c int) int { return max(-1, min(1, c)) }
	check := func(a, b ID) {
		t.Helper()
		bin := sign(bytes.Compare(a[:], b[:]))
		txt := sign(strings.Compare(a.String(), b.String()))
		if bin != txt {
			t.Fatalf("%x vs %x: binary order %d, text order %d (%s, %s)", a[:], b[:], bin, txt, a, b)
		}
	}
	for range 20000 {
		check(randomID(rng), randomID(rng))
	}
	// Neighbours that differ in one bit, at every bit position.
	for bit := 0; bit < 128; bit++ {
		a := randomID(rng)
		b := a
		b[bit/8] ^= 0x80 >> (bit % 8)
		check(a, b)
	}
	// Successive ids of a generator.
	g := NewIDGen(9, ID{})
	prev := g.Next(1000, 1)
	for seq := uint64(2); seq < 5000; seq++ {
		id := g.Next(1000+seq/7, seq)
		check(prev, id)
		if prev.String() >= id.String() {
			t.Fatalf("text of successive ids does not increase: %s then %s", prev, id)
		}
		prev = id
	}
}

func TestParseIDRejects(t *testing.T) {
	valid := MakeID(1_764_445_200_123, 7, 42).String()
	replace := func(i int, c string) string { return valid[:i] + c + valid[i+1:] }
	f := func(name, s string) {
		t.Helper()
		id, err := ParseID([]byte(s))
		if !errors.Is(err, ErrBadID) {
			t.Errorf("%s: ParseID(%q) = %v, %v; want ErrBadID", name, s, id, err)
		}
		if !id.IsZero() {
			t.Errorf("%s: ParseID(%q) returned a non-zero id with its error", name, s)
		}
	}
	f("empty", "")
	f("prefix only", "evt_")
	f("one short", valid[:len(valid)-1])
	f("one long", valid+"0")
	f("no prefix", valid[4:])
	f("no prefix, padded", "0000"+valid[4:])
	f("upper prefix", "EVT_"+valid[4:])
	f("other prefix", "evx_"+valid[4:])
	f("dash prefix", "evt-"+valid[4:])
	for _, c := range []string{"U", "u", "-", "_", "*", " ", "=", "~", "\x00", "\xff", "é"[:1]} {
		f("char "+c, replace(10, c))
		f("last char "+c, replace(len(valid)-1, c))
	}
	// 26 characters carry 130 bits: the first may only use the low three.
	for _, c := range []string{"8", "9", "A", "G", "Z", "z"} {
		f("overflow "+c, replace(4, c))
	}
}

// TestParseIDFirstChar checks that every id's text parses, the largest
// included: the first character carries the id's top three bits.
func TestParseIDFirstChar(t *testing.T) {
	for _, c := range "01234567" {
		s := "evt_" + string(c) + strings.Repeat("Z", 25)
		id, err := ParseID([]byte(s))
		if err != nil {
			t.Errorf("ParseID(%q): %v", s, err)
			continue
		}
		if id.String() != s {
			t.Errorf("ParseID(%q).String() = %q", s, id.String())
		}
	}
	if id, err := ParseID([]byte(maxID.String())); err != nil || id != maxID {
		t.Errorf("the largest id does not round trip: %v", err)
	}
}

func TestParseIDAliases(t *testing.T) {
	canonical := "evt_01KB8J27QV003G00000000001A"
	want, err := ParseID([]byte(canonical))
	if err != nil {
		t.Fatal(err)
	}
	// subst replaces every '0' and '1' after the prefix by an alias.
	subst := func(zero, one byte) string {
		b := []byte(canonical)
		for i := 4; i < len(b); i++ {
			switch b[i] {
			case '0':
				b[i] = zero
			case '1':
				b[i] = one
			}
		}
		return string(b)
	}
	for _, s := range []string{
		strings.ToLower(canonical),
		subst('O', 'I'),
		subst('o', 'i'),
		subst('O', 'L'),
		subst('o', 'l'),
	} {
		got, err := ParseID([]byte(s))
		if err != nil || got != want {
			t.Errorf("ParseID(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	// 'U' is not an alias of anything.
	if _, err := ParseID([]byte(subst('U', '1'))); !errors.Is(err, ErrBadID) {
		t.Errorf("'U' accepted: %v", err)
	}
}

func TestIDTextAllocs(t *testing.T) {
	id := MakeID(1_764_445_200_123, 7, 42)
	buf := make([]byte, 0, IDTextLen)
	text := []byte(id.String())
	if n := testing.AllocsPerRun(100, func() { buf = id.AppendText(buf[:0]) }); n != 0 {
		t.Errorf("AppendText allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseID(text) }); n != 0 {
		t.Errorf("ParseID allocates %v times", n)
	}
}

// TestIDGenIncreasing drives a generator with a clock that jumps both ways
// and checks that ids strictly increase and their time never goes back.
func TestIDGenIncreasing(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	g := NewIDGen(5, ID{})
	now := uint64(1_764_445_200_000)
	var prev ID
	maxMs := uint64(0)
	for seq := uint64(1); seq <= 100_000; seq++ {
		switch rng.IntN(10) {
		case 0:
			now -= uint64(rng.IntN(10_000)) // the clock steps back
		case 1, 2, 3:
			now += uint64(rng.IntN(5))
		}
		id := g.Next(now, seq)
		if bytes.Compare(prev[:], id[:]) >= 0 {
			t.Fatalf("seq %d: id %v not above %v", seq, id, prev)
		}
		if id.Node() != 5 || id.Seq() != seq {
			t.Fatalf("seq %d: id %v has node %d seq %d", seq, id, id.Node(), id.Seq())
		}
		maxMs = max(maxMs, now)
		if id.Millis() != maxMs {
			t.Fatalf("seq %d: id time %d, want the latest clock reading %d", seq, id.Millis(), maxMs)
		}
		prev = id
	}
}

// TestNewIDGenAboveLast checks that a generator resumed from the last
// persisted id issues ids above it, whatever the clock says.
func TestNewIDGenAboveLast(t *testing.T) {
	const ms = 1_764_445_200_123
	f := func(name string, last ID, node uint16, nowMs, seq uint64) {
		t.Run(name, func(t *testing.T) {
			g := NewIDGen(node, last)
			prev := last
			for i := uint64(0); i < 100; i++ {
				id := g.Next(nowMs, seq+i)
				if bytes.Compare(prev[:], id[:]) >= 0 {
					t.Fatalf("call %d: id %v (ms %d node %d seq %d) not above %v", i, id, id.Millis(), id.Node(), id.Seq(), prev)
				}
				if id.Node() != node || id.Seq() != seq+i {
					t.Fatalf("call %d: id %v has node %d seq %d", i, id, id.Node(), id.Seq())
				}
				prev = id
			}
		})
	}
	last := MakeID(ms, 3, 1000)
	f("clock later", last, 3, ms+10, 1001)
	f("clock same", last, 3, ms, 1001)
	f("clock back an hour", last, 3, ms-3_600_000, 1001)
	f("clock at zero", last, 3, 0, 1001)
	f("zero last", ID{}, 3, 0, 1)
	// The floor may come from outside the WAL (a catalogue, another node
	// ordinal before a renumbering): ids must still stay above it.
	f("seq below last's", last, 3, ms-1, 1)
	f("node below last's", last, 2, ms-1, 1001)
	f("node and seq below, clock back", MakeID(ms, 9, 1<<40), 1, 5, 2)
}
