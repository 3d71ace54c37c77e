package envelope

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestRemoteAddr: the sender's address follows the dedupe key behind
// flag bit 3 and round-trips through the binary and JSON forms; without
// one the record is byte for byte the layout before it (the golden file
// pins that), and a record cut inside it is corrupt.
func TestRemoteAddr(t *testing.T) {
	for _, addr := range []string{"203.0.113.7:51234", "[2001:db8::1]:443"} {
		e := sample()
		e.RemoteAddr = addr
		enc := e.AppendTo(nil)
		if enc[OffFlags]&FlagRemoteAddr == 0 {
			t.Fatalf("%s: flag bit 3 not set", addr)
		}
		if got := e.EncodedLen(); got != len(enc) {
			t.Errorf("%s: EncodedLen %d, AppendTo wrote %d", addr, got, len(enc))
		}
		var got Envelope
		if rest, err := Decode(enc, &got); err != nil || len(rest) != 0 {
			t.Fatalf("%s: Decode: %v, %d bytes left", addr, err, len(rest))
		}
		if got.RemoteAddr != addr || got.Verification != e.Verification || got.DedupeKey != e.DedupeKey {
			t.Errorf("%s: decoded %+v", addr, got)
		}
		js := e.AppendJSON(nil)
		if want := `,"dedupe_key":"evt_1","remote_addr":"` + addr + `"}`; !strings.HasSuffix(string(js), want) {
			t.Errorf("%s: JSON %s does not end %s", addr, js, want)
		}
		var back Envelope
		if err := back.UnmarshalJSON(js); err != nil || back.RemoteAddr != addr {
			t.Errorf("%s: UnmarshalJSON: %v, remote_addr %q", addr, err, back.RemoteAddr)
		}
		_, err := Decode(enc[:len(enc)-1], &got)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decode of a record cut inside the address: %v, want ErrCorrupt", addr, err)
		}
	}
	e := sample()
	enc := e.AppendTo(nil)
	if enc[OffFlags]&FlagRemoteAddr != 0 || bytes.Contains(e.AppendJSON(nil), []byte("remote_addr")) {
		t.Errorf("an envelope without a remote address carries one: flags %#x, %s", enc[OffFlags], e.AppendJSON(nil))
	}
}

// TestEndFrom: EndFrom with an empty address is End; with one it sets
// the flag on the envelope being ended, and Flags shows it.
func TestEndFrom(t *testing.T) {
	var a, b Appender
	one := a.End(a.Body(a.Headers(a.Params(a.Begin(nil, 1, 0, "t", "s", "none"), 0), 0), nil), "k")
	two := b.EndFrom(b.Body(b.Headers(b.Params(b.Begin(nil, 1, 0, "t", "s", "none"), 0), 0), nil), "k", "")
	if !bytes.Equal(one, two) {
		t.Errorf("EndFrom(\"\") = %x, End = %x", two, one)
	}
	var c Appender
	buf := c.EndFrom(c.Body(c.Headers(c.Params(c.Begin(nil, 1, FlagVerified, "t", "s", "none"), 0), 0), nil), "k", "1.2.3.4:5")
	if c.Flags(buf) != FlagVerified|FlagRemoteAddr {
		t.Errorf("Flags after EndFrom = %#x", c.Flags(buf))
	}
}
