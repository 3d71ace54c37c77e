package kafkasink

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// TestEventTypeHeader: a hook's event type is the record's
// ankusa-event-type header (the sink's ankusa-* naming); a hook without
// one has none. Building the record connects to nothing.
func TestEventTypeHeader(t *testing.T) {
	s := newSink(t, []string{"127.0.0.1:1"}, config.Sink{Topic: "hooks"})
	for _, et := range []string{"invoice.paid", ""} {
		e := testEnvelope()
		e.EventType = et
		r, bp, err := s.build(&dispatch.Delivery{Envelope: e, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		n, val := 0, ""
		for _, h := range r.Headers {
			if h.Key == HeaderEventType {
				n, val = n+1, string(h.Value)
			}
		}
		if et == "" && n != 0 || et != "" && (n != 1 || val != et) {
			t.Errorf("event type %q: %d headers, value %q", et, n, val)
		}
		putBuf(bp)
	}
}
