package envelope

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode checks that Decode never panics, answers ErrCorrupt for what
// it refuses, and decodes only what its input can hold. Seeds: f.Add below
// and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	full := sample()
	f.Add(full.AppendTo(nil))
	g := goldenEnvelope()
	f.Add(g.AppendTo(nil))
	g2 := goldenEnvelopeV2()
	f.Add(g2.AppendTo(nil))
	typed := full
	typed.EventType = "push"
	f.Add(typed.AppendTo(nil))
	f.Add((&Envelope{}).AppendTo(nil))
	f.Add(full.AppendTo(nil)[:FixedSize+3])
	f.Add([]byte{})
	f.Add([]byte{KindTenant})
	f.Add(append(appendFixed(nil, 0, 0), 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, src []byte) {
		checkDecode(t, src)
	})
}

// FuzzParseID checks that ParseID never panics, refuses with ErrBadID, and
// that what it accepts prints back as the canonical form of the input.
func FuzzParseID(f *testing.F) {
	f.Add("evt_01KB8J27QV003G00000000001A")
	f.Add("evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
	f.Add("evt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ")
	f.Add("evt_o1kb8j27qv003g0000000000iL")
	f.Add("evt_")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID([]byte(s))
		if err != nil {
			if !errors.Is(err, ErrBadID) || !id.IsZero() {
				t.Fatalf("ParseID(%q) = %v, %v", s, id, err)
			}
			return
		}
		if len(s) != IDTextLen || s[:4] != "evt_" {
			t.Fatalf("ParseID(%q) accepted a wrong shape", s)
		}
		canon := id.String()
		if !equalCrockford(canon[4:], s[4:]) {
			t.Fatalf("ParseID(%q).String() = %q", s, canon)
		}
		again, err := ParseID([]byte(canon))
		if err != nil || again != id {
			t.Fatalf("ParseID(%q) = %v, %v", canon, again, err)
		}
		if text := id.AppendText(nil); !bytes.Equal(text, []byte(canon)) {
			t.Fatalf("AppendText = %q, String = %q", text, canon)
		}
	})
}

// equalCrockford compares a canonical text with an input that may use
// lower case and the aliases O, I and L.
func equalCrockford(canon, in string) bool {
	for i := 0; i < len(canon); i++ {
		c := in[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		switch c {
		case 'O':
			c = '0'
		case 'I', 'L':
			c = '1'
		}
		if c != canon[i] {
			return false
		}
	}
	return true
}
