package envelope

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// goldenEnvelopeV2 is the envelope testdata/envelope_v2.golden encodes:
// the version 1 golden envelope with a remote address and an event type.
func goldenEnvelopeV2() Envelope {
	e := goldenEnvelope()
	e.RemoteAddr = "203.0.113.7:443"
	e.EventType = "invoice.paid"
	return e
}

// TestGoldenV2 freezes the binary form of an envelope with an event type
// (format version 2), and checks that a version 1 record still decodes,
// with no event type.
func TestGoldenV2(t *testing.T) {
	want := readGolden(t, "testdata/envelope_v2.golden")
	e := goldenEnvelopeV2()
	got := e.AppendTo(nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding of the v2 golden envelope changed (format v2 is frozen)\ngot  %x\nwant %x", got, want)
	}
	if n := e.EncodedLen(); n != len(want) {
		t.Fatalf("EncodedLen = %d, the encoding is %d bytes", n, len(want))
	}
	var dec Envelope
	rest, err := Decode(want, &dec)
	if err != nil || len(rest) != 0 {
		t.Fatalf("Decode(v2 golden) = %d bytes left, %v", len(rest), err)
	}
	if !reflect.DeepEqual(dec, e) {
		t.Fatalf("Decode(v2 golden) = %+v", dec)
	}
	if FlagEventType != 0x80 || want[OffFlags]&FlagEventType == 0 {
		t.Fatalf("the event type's flag bit moved")
	}
	// A version 1 record: same layout, bit 7 clear, no event type. Decode
	// into an envelope that had one must clear it.
	v1 := readGolden(t, "testdata/envelope_v1.golden")
	old := Envelope{EventType: "stale"}
	if _, err := Decode(v1, &old); err != nil || old.EventType != "" {
		t.Fatalf("Decode(v1 golden): event type %q, %v", old.EventType, err)
	}
	// A record without an event type is byte for byte version 1.
	plain := goldenEnvelope()
	if !bytes.Equal(plain.AppendTo(nil), v1) {
		t.Fatal("an envelope without an event type no longer encodes as version 1")
	}
	// The names read in place are where they were.
	tenant, source, ok := Names(want)
	if !ok || string(tenant) != "acme" || string(source) != "stripe" {
		t.Fatalf("Names(v2 golden) = %q, %q, %v", tenant, source, ok)
	}
}

// TestGoldenJSONV2 freezes the JSON form of an envelope with an event type:
// event_type after dedupe_key, remote_addr still last.
func TestGoldenJSONV2(t *testing.T) {
	want, err := os.ReadFile("testdata/envelope_v2.json")
	if err != nil {
		t.Fatal(err)
	}
	want = bytes.TrimSuffix(want, []byte("\n"))
	e := goldenJSONEnvelope()
	e.EventType = "invoice.paid"
	e.RemoteAddr = "203.0.113.7:443"
	if got := e.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("JSON form of the v2 golden envelope changed\ngot  %s\nwant %s", got, want)
	}
	var dec Envelope
	if err := json.Unmarshal(want, &dec); err != nil {
		t.Fatal(err)
	}
	if got, want := dec, afterJSON(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("Unmarshal(v2 golden)\ngot  %+v\nwant %+v", got, want)
	}
	// Without an event type the key is left out.
	e.EventType = ""
	if strings.Contains(string(e.AppendJSON(nil)), "event_type") {
		t.Fatal("an envelope without an event type shows event_type")
	}
}

// TestEventTypeOnly: an event type without a remote address follows the
// dedupe key; flag bit 3 stays clear.
func TestEventTypeOnly(t *testing.T) {
	e := sample()
	e.EventType = "push"
	enc := e.AppendTo(nil)
	if enc[OffFlags]&FlagEventType == 0 || enc[OffFlags]&FlagRemoteAddr != 0 {
		t.Fatalf("flags %#x", enc[OffFlags])
	}
	if !bytes.HasSuffix(enc, []byte("\x05evt_1\x04push")) {
		t.Fatalf("the event type does not follow the dedupe key: %x", enc[len(enc)-12:])
	}
	var dec Envelope
	if _, err := Decode(enc, &dec); err != nil || dec.EventType != "push" || dec.RemoteAddr != "" {
		t.Fatalf("Decode: %q %q %v", dec.EventType, dec.RemoteAddr, err)
	}
	// A truncated event type is corrupt, not a short one.
	if _, err := Decode(enc[:len(enc)-1], &dec); err == nil {
		t.Fatal("Decode accepted a truncated event type")
	}
	// Flags, as the verification reads them, are unchanged by bit 7.
	if dec.Verification != e.Verification {
		t.Fatalf("verification %+v, want %+v", dec.Verification, e.Verification)
	}
}

// TestAppenderEndEvent: the edge's way to end a record with an event type
// allocates nothing once the buffer has room, and matches AppendTo.
func TestAppenderEndEvent(t *testing.T) {
	e := sample()
	e.RemoteAddr = "[2001:db8::1]:8443"
	e.EventType = "invoice.paid"
	want := e.AppendTo(nil)
	buf := make([]byte, 0, 4096)
	var a Appender
	allocs := testing.AllocsPerRun(100, func() {
		buf = buf[:0]
		buf = a.Begin(buf, e.ReceivedAt, e.Verification.Flags(), e.TenantID, e.SourceID, e.Verification.Verifier)
		PutIdentity(buf, e.Seq, e.ID, e.TenantOrdinal)
		buf = a.Params(buf, len(e.RouteParams))
		for _, p := range e.RouteParams {
			buf = a.Pair(buf, p.Key, p.Value)
		}
		buf = a.Headers(buf, len(e.Headers))
		for _, h := range e.Headers {
			buf = a.Pair(buf, h.Name, h.Value)
		}
		buf = a.Body(buf, e.Body)
		buf = a.EndEvent(buf, e.DedupeKey, e.RemoteAddr, e.EventType)
	})
	if allocs != 0 {
		t.Errorf("EndEvent path: %v allocations", allocs)
	}
	if !bytes.Equal(buf, want) {
		t.Fatalf("Appender with EndEvent\ngot  %x\nwant %x", buf, want)
	}
}
