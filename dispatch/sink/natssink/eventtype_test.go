package natssink

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// TestEventTypeHeader: a hook's event type is the message's
// ankusa-event-type header (the sink's ankusa-* naming); a hook without
// one has none. Building the message connects to nothing.
func TestEventTypeHeader(t *testing.T) {
	s := newSink(t, "nats://127.0.0.1:1", config.Sink{Stream: "HOOKS", Subject: "hooks.{tenant_id}"})
	for _, et := range []string{"invoice.paid", ""} {
		e := testEnvelope()
		e.EventType = et
		m, err := s.build(&dispatch.Delivery{Envelope: e, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, present := m.Header[HeaderEventType]
		if et == "" && present || et != "" && (len(got) != 1 || got[0] != et) {
			t.Errorf("event type %q: header %q (present %v)", et, got, present)
		}
	}
}
