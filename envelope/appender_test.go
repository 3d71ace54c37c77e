package envelope

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// appendAsTheEdge appends e with a the way the edge appends a hook: the
// names and pairs from views, the body appended piece by piece between
// BeginBody and EndBody, the flags set after the body.
func appendAsTheEdge(t *testing.T, a *Appender, buf []byte, e *Envelope) []byte {
	t.Helper()
	buf = a.Begin(buf, e.ReceivedAt, 0, e.TenantID, e.SourceID, e.Verification.Verifier)
	buf = a.Params(buf, len(e.RouteParams))
	for _, p := range e.RouteParams {
		buf = a.Pair(buf, p.Key, p.Value)
	}
	buf = a.Headers(buf, len(e.Headers))
	for _, h := range e.Headers {
		buf = a.Pair(buf, h.Name, h.Value)
	}
	buf = a.BeginBody(buf)
	for chunk := range slices.Chunk(e.Body, 7) {
		buf = append(buf, chunk...)
	}
	if body := a.EndBody(buf); !bytes.Equal(body, e.Body) {
		t.Fatalf("EndBody = %x, want the body", body)
	}
	a.AddFlags(buf, e.Verification.Flags())
	return a.End(buf, e.DedupeKey)
}

// TestAppenderAsTheEdgeUsesIt: an envelope appended the way the edge
// appends one is AppendTo's encoding of the same hook, keeps what the
// buffer held, and leaves the Appender ready for the next envelope.
func TestAppenderAsTheEdgeUsesIt(t *testing.T) {
	e := goldenEnvelope()
	e.Seq, e.ID, e.TenantOrdinal = 0, ID{}, 0 // the commit loop's to fill in
	want := e.AppendTo(nil)

	frame := []byte("frame header....")
	var a Appender
	buf := appendAsTheEdge(t, &a, bytes.Clone(frame), &e)
	if !bytes.Equal(buf[:len(frame)], frame) || !bytes.Equal(buf[len(frame):], want) {
		t.Fatalf("Appender wrote\n%x\nAppendTo writes\n%x", buf[len(frame):], want)
	}
	if got := a.Flags(buf); got != e.Verification.Flags() {
		t.Fatalf("Flags() = %#x after End, want %#x", got, e.Verification.Flags())
	}
	if next := appendAsTheEdge(t, &a, nil, &e); !bytes.Equal(next, want) {
		t.Fatalf("second envelope\n%x\nwant\n%x", next, want)
	}
}

// TestAppenderOrder: a step out of the layout's order, or a count its
// pairs do not match, panics as a bug instead of writing a record that
// does not decode.
func TestAppenderOrder(t *testing.T) {
	begun := func() (*Appender, []byte) {
		var a Appender
		return &a, a.Begin(nil, 1, 0, "t", "s", "none")
	}
	atHeaders := func(n int) (*Appender, []byte) {
		a, b := begun()
		return a, a.Headers(a.Params(b, 0), n)
	}
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"Params before Begin", func() { var a Appender; a.Params(nil, 0) }},
		{"Pair before Begin", func() { var a Appender; a.Pair(nil, "k", "v") }},
		{"AddFlags before Begin", func() { var a Appender; a.AddFlags(make([]byte, FixedSize), FlagVerified) }},
		{"Flags before Begin", func() { var a Appender; a.Flags(make([]byte, FixedSize)) }},
		{"Begin twice", func() { a, b := begun(); a.Begin(b, 1, 0, "t", "s", "none") }},
		{"Headers before Params", func() { a, b := begun(); a.Headers(b, 0) }},
		{"BeginBody before the pairs", func() { a, b := begun(); a.BeginBody(b) }},
		{"negative params", func() { a, b := begun(); a.Params(b, -1) }},
		{"negative headers", func() { a, b := begun(); a.Headers(a.Params(b, 0), -1) }},
		{"too few params", func() { a, b := begun(); a.Headers(a.Params(b, 1), 0) }},
		{"too many params", func() { a, b := begun(); a.Pair(a.Params(b, 0), "k", "v") }},
		{"too few headers", func() { a, b := atHeaders(2); a.BeginBody(a.Pair(b, "k", "v")) }},
		{"too many headers", func() { a, b := atHeaders(0); a.Pair(b, "k", "v") }},
		{"EndBody before BeginBody", func() { a, b := atHeaders(0); a.EndBody(b) }},
		{"End before the body", func() { a, b := atHeaders(0); a.End(b, "") }},
		{"Body twice", func() { a, b := atHeaders(0); a.Body(a.Body(b, nil), nil) }},
		{"AddFlags after End", func() { a, b := atHeaders(0); b = a.End(a.Body(b, nil), ""); a.AddFlags(b, FlagVerified) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if s, ok := p.(string); !ok || !strings.HasPrefix(s, "BUG: envelope: Appender.") {
					t.Fatalf("recovered %v, want a BUG panic of the Appender", p)
				}
			}()
			tc.run()
		})
	}
}
