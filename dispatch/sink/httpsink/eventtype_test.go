package httpsink

import (
	"context"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// TestEventTypeHeader: a hook with an event type is delivered with
// x-ankusa-event-type; one without has no such header.
func TestEventTypeHeader(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/in", AllowPrivate: true})
	for _, et := range []string{"invoice.paid", ""} {
		e := testEnvelope()
		e.EventType = et
		if err := s.Deliver(context.Background(), &dispatch.Delivery{Envelope: e, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		got := rc.last(t)
		vals, present := got.Header["X-Ankusa-Event-Type"]
		if et == "" && present || et != "" && (len(vals) != 1 || vals[0] != et) {
			t.Fatalf("event type %q: x-ankusa-event-type %q (present %v)", et, vals, present)
		}
	}
}
