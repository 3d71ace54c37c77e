package envelope

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// sample is a fully populated envelope; tests derive variants from it.
func sample() Envelope {
	return Envelope{
		Seq:           42,
		ID:            MakeID(1_764_445_200_123, 7, 42),
		TenantOrdinal: 3,
		TenantID:      "acme",
		SourceID:      "stripe",
		ReceivedAt:    1_764_445_200_123_456_789,
		RouteParams:   []Param{{Key: "app_id", Value: "a1"}},
		Headers: []Header{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Stripe-Signature", Value: "t=1,v1=abc"},
		},
		Body:         []byte(`{"id":"evt_1"}`),
		Verification: Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
}

// normalize makes the nil/empty distinction, which the codec does not keep,
// disappear from comparisons.
func normalize(e Envelope) Envelope {
	if len(e.RouteParams) == 0 {
		e.RouteParams = nil
	}
	if len(e.Headers) == 0 {
		e.Headers = nil
	}
	if len(e.Body) == 0 {
		e.Body = nil
	}
	return e
}

func TestRoundTrip(t *testing.T) {
	binBody := make([]byte, 256)
	for i := range binBody {
		binBody[i] = byte(i)
	}
	long := strings.Repeat("x", 70_000) // uvarint length of three bytes
	manyHeaders := make([]Header, MaxHeaders)
	for i := range manyHeaders {
		manyHeaders[i] = Header{Name: "X-H", Value: string(rune('a' + i%26))}
	}
	f := func(name string, mod func(e *Envelope)) {
		t.Run(name, func(t *testing.T) {
			e := sample()
			mod(&e)
			enc := e.AppendTo(nil)
			var got Envelope
			rest, err := Decode(enc, &got)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(rest) != 0 {
				t.Fatalf("Decode left %d bytes", len(rest))
			}
			if !reflect.DeepEqual(normalize(got), normalize(e)) {
				t.Fatalf("round trip changed the envelope\ngot  %+v\nwant %+v", got, e)
			}
			// The encoding is a function of the envelope.
			if again := got.AppendTo(nil); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding differs")
			}
			// Appending keeps what dst held.
			prefix := []byte("prefix")
			withPrefix := e.AppendTo(bytes.Clone(prefix))
			if !bytes.Equal(withPrefix[:len(prefix)], prefix) || !bytes.Equal(withPrefix[len(prefix):], enc) {
				t.Fatalf("AppendTo did not append")
			}
		})
	}
	f("full", func(e *Envelope) {})
	f("zero", func(e *Envelope) { *e = Envelope{} })
	f("nil params and headers", func(e *Envelope) { e.RouteParams, e.Headers = nil, nil })
	f("empty params and headers", func(e *Envelope) { e.RouteParams, e.Headers = []Param{}, []Header{} })
	f("empty body", func(e *Envelope) { e.Body = []byte{} })
	f("nil body", func(e *Envelope) { e.Body = nil })
	f("binary body", func(e *Envelope) { e.Body = binBody })
	f("large body", func(e *Envelope) { e.Body = bytes.Repeat([]byte{0, 0xff, 0x80}, 1<<18) })
	f("long strings", func(e *Envelope) {
		e.TenantID, e.SourceID, e.DedupeKey = long, long[:128], long[:127]
		e.Verification.Verifier = long[:16384]
		e.RouteParams = []Param{{Key: long, Value: long}}
		e.Headers = []Header{{Name: long[:200], Value: long}}
	})
	f("unicode", func(e *Envelope) {
		e.TenantID, e.SourceID = "テナント", "sörce-ü"
		e.RouteParams = []Param{{Key: "ключ", Value: "值🙂"}}
		e.Headers = []Header{{Name: "X-Emoji", Value: "🙂🙃"}, {Name: "X-Emoji", Value: "\u0000\uffff"}}
		e.DedupeKey = "κλειδί"
	})
	f("invalid utf8", func(e *Envelope) { e.TenantID, e.DedupeKey = "\xff\xfe", "\xc3" })
	f("repeated header names", func(e *Envelope) {
		e.Headers = []Header{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}, {Name: "A", Value: ""}}
	})
	f("empty keys and values", func(e *Envelope) {
		e.RouteParams = []Param{{}, {}}
		e.Headers = []Header{{}}
	})
	f("max headers", func(e *Envelope) { e.Headers = manyHeaders })
	f("max identity", func(e *Envelope) {
		e.Seq, e.TenantOrdinal = ^uint64(0), ^uint32(0)
		e.ID = ID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	})
	f("negative received_at", func(e *Envelope) { e.ReceivedAt = -1 })
	for _, v := range []Verification{
		{}, {Verified: true}, {Flagged: true}, {Quarantined: true},
		{Verified: true, Flagged: true}, {Flagged: true, Quarantined: true},
		{Verifier: "none", Verified: true, Flagged: true, Quarantined: true},
		{Quarantined: true, Failure: FailMismatch}, {Flagged: true, Failure: FailExpired},
	} {
		f("flags "+string(rune('0'+v.Flags())), func(e *Envelope) { e.Verification = v })
	}
}

func TestFlags(t *testing.T) {
	f := func(v Verification, want byte) {
		t.Helper()
		if got := v.Flags(); got != want {
			t.Errorf("%+v.Flags() = %#x, want %#x", v, got, want)
		}
	}
	f(Verification{}, 0)
	f(Verification{Verified: true}, 1)
	f(Verification{Flagged: true}, 2)
	f(Verification{Quarantined: true}, 4)
	f(Verification{Verifier: "x", Verified: true, Flagged: true, Quarantined: true}, 7)
	f(Verification{Quarantined: true, Failure: FailMissing}, 0x14)
	f(Verification{Flagged: true, Failure: FailExpired}, 0x42)
	// A reason past 3 bits cannot spill into the other flags.
	f(Verification{Failure: 0xff}, 0x70)
	for r := FailNone; r <= FailExpired; r++ {
		if r != FailNone && (FailureName(r) == "" || FailureName(r) == "unknown") {
			t.Errorf("FailureName(%d) = %q", r, FailureName(r))
		}
	}
}

// TestDecodeIntoUsed checks that Decode overwrites every field of a reused
// envelope: a stale route param or body must not leak into the next hook.
func TestDecodeIntoUsed(t *testing.T) {
	var e Envelope
	full := sample()
	if _, err := Decode(full.AppendTo(nil), &e); err != nil {
		t.Fatal(err)
	}
	bare := Envelope{Seq: 1, TenantID: "t"}
	if _, err := Decode(bare.AppendTo(nil), &e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, bare) {
		t.Fatalf("stale fields after Decode: %+v", e)
	}
}

// TestDecodeCopies checks that the decoded envelope does not alias src.
func TestDecodeCopies(t *testing.T) {
	e := sample()
	enc := e.AppendTo(nil)
	var got Envelope
	if _, err := Decode(enc, &got); err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 0xAA
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("decoded envelope changed with its source: %+v", got)
	}
}

func TestDecodeSequence(t *testing.T) {
	a, b := sample(), Envelope{Seq: 9, TenantID: "b", Body: []byte("second")}
	buf := b.AppendTo(a.AppendTo(nil))
	buf = append(buf, "trailer"...)
	var got Envelope
	rest, err := Decode(buf, &got)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("first: %v %+v", err, got)
	}
	rest, err = Decode(rest, &got)
	if err != nil || !reflect.DeepEqual(normalize(got), b) {
		t.Fatalf("second: %v %+v", err, got)
	}
	if string(rest) != "trailer" {
		t.Fatalf("rest = %q", rest)
	}
}

// TestIdentityPatch is how the commit loop uses the codec: encode with a
// zero identity, patch it at the fixed offsets, and read it back.
func TestIdentityPatch(t *testing.T) {
	e := sample()
	e.Seq, e.ID, e.TenantOrdinal = 0, ID{}, 0
	enc := e.AppendTo(nil)
	if kind, seq, id, ord := Identity(enc); kind != KindEnvelope || seq != 0 || !id.IsZero() || ord != 0 {
		t.Fatalf("identity before patch: %d %d %v %d", kind, seq, id, ord)
	}
	id := MakeID(123, 4, 99)
	PutIdentity(enc, 99, id, 17)
	kind, seq, gotID, ord := Identity(enc)
	if kind != KindEnvelope || seq != 99 || gotID != id || ord != 17 {
		t.Fatalf("Identity = %d %d %v %d", kind, seq, gotID, ord)
	}
	var got Envelope
	if _, err := Decode(enc, &got); err != nil {
		t.Fatal(err)
	}
	want := e
	want.Seq, want.ID, want.TenantOrdinal = 99, id, 17
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	// appendFixed is the prefix AppendTo writes.
	fixed := appendFixed(nil, e.ReceivedAt, e.Verification.Flags())
	if len(fixed) != FixedSize || !bytes.Equal(fixed, e.AppendTo(nil)[:FixedSize]) {
		t.Fatalf("appendFixed = %x", fixed)
	}
}

func TestDecodeTruncated(t *testing.T) {
	for _, e := range []Envelope{sample(), {}, {Body: []byte("b"), Headers: []Header{{Name: "n", Value: "v"}}}} {
		enc := e.AppendTo(nil)
		for n := 0; n < len(enc); n++ {
			var got Envelope
			src := bytes.Clone(enc[:n])
			rest, err := Decode(src, &got)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode of %d/%d bytes: err = %v, want ErrCorrupt", n, len(enc), err)
			}
			if len(rest) != n {
				t.Fatalf("Decode of %d bytes returned %d bytes of rest, want src back", n, len(rest))
			}
		}
	}
}

func TestDecodeCorrupt(t *testing.T) {
	s := sample()
	valid := s.AppendTo(nil)
	fixed := func(tail ...byte) []byte {
		b := appendFixed(nil, 0, 0)
		return append(b, tail...)
	}
	huge := binary.AppendUvarint(nil, 1<<62)
	f := func(name string, src []byte) {
		t.Run(name, func(t *testing.T) {
			var e Envelope
			if _, err := Decode(src, &e); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
	f("nil", nil)
	f("short fixed", valid[:FixedSize-1])
	f("tenant kind", append([]byte{KindTenant}, valid[1:]...))
	f("zero kind", append([]byte{0}, valid[1:]...))
	f("fixed only", fixed())
	f("string length past end", fixed(5, 'a'))
	f("huge string length", fixed(append(huge, 'a')...))
	f("overlong uvarint", fixed(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	f("huge param count", fixed(append([]byte{0, 0, 0}, huge...)...))
	f("huge header count", fixed(append([]byte{0, 0, 0, 0}, huge...)...))
	f("header count past MaxHeaders", fixed(append([]byte{0, 0, 0, 0}, append(binary.AppendUvarint(nil, MaxHeaders+1), make([]byte, 4*(MaxHeaders+1)+5)...)...)...))
	f("count above half the rest", fixed(0, 0, 0, 3, 0, 0, 0, 0, 0))
	f("huge body length", fixed(0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'x'))
	f("missing dedupe key", fixed(0, 0, 0, 0, 0, 0, 0, 0, 0))
}

// TestDecodeBoundedAllocation checks that lengths and counts an input
// declares cannot make Decode allocate more than the input could hold.
func TestDecodeBoundedAllocation(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<40)
	inputs := [][]byte{
		append(appendFixed(nil, 0, 0), append(huge, 'a')...),
		append(appendFixed(nil, 0, 0), append([]byte{0, 0, 0}, append(huge, make([]byte, 64)...)...)...),
		append(appendFixed(nil, 0, 0), append([]byte{0, 0, 0, 0}, append(huge, make([]byte, 64)...)...)...),
		append(appendFixed(nil, 0, 0), 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff),
		append(appendFixed(nil, 0, 0), append([]byte{0, 0, 0, 0}, append(binary.AppendUvarint(nil, MaxHeaders), make([]byte, 64)...)...)...),
	}
	for i, src := range inputs {
		var e Envelope
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			if _, err := Decode(src, &e); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("input %d: err = %v", i, err)
			}
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("input %d (%d bytes): 10 Decodes allocated %d bytes", i, len(src), n)
		}
	}
}

// TestDecodeGarbage decodes random bytes and mutated encodings: Decode must
// never panic, must answer ErrCorrupt or success, and what it decodes must
// fit in its input.
func TestDecodeGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := sample()
	valid := s.AppendTo(nil)
	for i := 0; i < 20000; i++ {
		var src []byte
		switch i % 3 {
		case 0:
			src = make([]byte, rng.IntN(200))
			for j := range src {
				src[j] = byte(rng.UintN(256))
			}
			if len(src) > 0 {
				src[0] = KindEnvelope
			}
		case 1:
			src = bytes.Clone(valid)
			for range 1 + rng.IntN(4) {
				src[rng.IntN(len(src))] ^= byte(1 + rng.UintN(255))
			}
		default:
			src = bytes.Clone(valid[:rng.IntN(len(valid))])
			src = append(src, byte(rng.UintN(256)))
		}
		checkDecode(t, src)
	}
}

// checkDecode is the property FuzzDecode and TestDecodeGarbage share.
func checkDecode(t *testing.T, src []byte) {
	t.Helper()
	var e Envelope
	rest, err := Decode(src, &e)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode(%x): error %v does not wrap ErrCorrupt", src, err)
		}
		if len(rest) != len(src) {
			t.Fatalf("Decode(%x) failed but did not return src", src)
		}
		return
	}
	used := len(src) - len(rest)
	if len(rest) > len(src) || !bytes.Equal(rest, src[used:]) {
		t.Fatalf("Decode(%x): rest is not a suffix of src", src)
	}
	if len(e.Body) > used || 2*(len(e.Headers)+len(e.RouteParams)) > used {
		t.Fatalf("Decode(%x) produced more than its input holds", src)
	}
	// What decodes re-encodes to an encoding of the same envelope (not
	// always the same bytes: an input may use overlong uvarints or set
	// flag bits that have no meaning).
	enc := e.AppendTo(nil)
	var again Envelope
	if rest, err := Decode(enc, &again); err != nil || len(rest) != 0 {
		t.Fatalf("Decode(%x) then AppendTo does not decode: %v", src[:used], err)
	}
	if !reflect.DeepEqual(normalize(again), normalize(e)) {
		t.Fatalf("Decode(%x): re-encoding changed the envelope", src[:used])
	}
}

func TestEncodedLen(t *testing.T) {
	long := strings.Repeat("x", 300) // a two-byte length
	for _, e := range []Envelope{
		{},
		{TenantID: "acme", SourceID: "stripe", Body: []byte("{}"), DedupeKey: "evt_1"},
		{TenantID: long, RouteParams: []Param{{"k", long}}, Headers: []Header{{"A", "b"}, {long, ""}}, Body: make([]byte, 70000), Verification: Verification{Verifier: "stripe"}},
	} {
		if got, want := e.EncodedLen(), len(e.AppendTo(nil)); got != want {
			t.Errorf("EncodedLen %d, AppendTo wrote %d", got, want)
		}
	}
}
