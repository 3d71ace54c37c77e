package amqpsink

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// TestEventTypeHeader: a hook's event type is the message's
// x-ankusa-event-type header; a hook without one has none.
func TestEventTypeHeader(t *testing.T) {
	s := offlineSink(t, config.Sink{})
	for _, et := range []string{"invoice.paid", ""} {
		e := testEnvelope()
		e.EventType = et
		m, err := s.build(&dispatch.Delivery{Envelope: e, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, present := m.pub.Headers[HeaderEventType]
		if et == "" && present || et != "" && got != et {
			t.Errorf("event type %q: header %v (present %v)", et, got, present)
		}
		if err := m.pub.Headers.Validate(); err != nil {
			t.Error(err)
		}
		m.release()
	}
}
