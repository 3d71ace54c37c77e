package envelope

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/internal/golden"
)

// goldenEnvelope is the envelope testdata/envelope_v1.golden encodes.
func goldenEnvelope() Envelope {
	body := make([]byte, 0, 130)
	for i := 0; i < 128; i++ {
		body = append(body, byte(i))
	}
	body = append(body, 0xff, 0xfe)
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
		Body:         body,
		Verification: Verification{Verifier: "stripe", Verified: true, Flagged: true},
		DedupeKey:    strings.Repeat("x", 128),
	}
}

// readGolden reads an annotated hex file (see package golden).
func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := golden.ReadHex(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenV1 freezes the on-disk form of an envelope.
func TestGoldenV1(t *testing.T) {
	want := readGolden(t, "testdata/envelope_v1.golden")
	e := goldenEnvelope()
	got := e.AppendTo(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding of the golden envelope changed (format v1 is frozen)\ngot  %x\nwant %x", got, want)
	}
	var dec Envelope
	rest, err := Decode(want, &dec)
	if err != nil || len(rest) != 0 {
		t.Fatalf("Decode(golden) = %d bytes left, %v", len(rest), err)
	}
	if !reflect.DeepEqual(dec, e) {
		t.Fatalf("Decode(golden) = %+v", dec)
	}
	// The fixed offsets of the identity prefix, as package wal reads them.
	if want[OffKind] != KindEnvelope || OffSeq != 1 || OffID != 9 || OffOrdinal != 25 ||
		IdentSize != 29 || OffReceivedAt != 29 || OffFlags != 37 || FixedSize != 38 {
		t.Fatalf("fixed offsets moved")
	}
	if FlagVerified != 1 || FlagFlagged != 2 || FlagQuarantined != 4 || KindEnvelope != 1 || KindTenant != 2 {
		t.Fatalf("flag bits or kinds moved")
	}
}

// TestGoldenIDText freezes the text form of event ids.
func TestGoldenIDText(t *testing.T) {
	f := func(id ID, want string) {
		t.Helper()
		if got := id.String(); got != want {
			t.Errorf("%x.String() = %q, want %q", id[:], got, want)
		}
	}
	f(goldenEnvelope().ID, "evt_01KB8J27QV003G00000000001A")
	f(ID{}, "evt_00000000000000000000000000")
	f(MakeID(0, 0, 1), "evt_00000000000000000000000001")
	f(ID{0x80}, "evt_40000000000000000000000000")
	f(maxID, "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
}
