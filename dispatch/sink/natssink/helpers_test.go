package natssink

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/natstest"
	"github.com/ankusa/ankusa/internal/sinktest"
)

// newSink makes a nats sink on the server at u (spec.Type, URL and ID are
// filled when unset) and closes it when the test ends.
func newSink(t *testing.T, u string, spec config.Sink) *Sink {
	t.Helper()
	spec.Type = "nats"
	if spec.URL == "" {
		spec.URL = u
	}
	if spec.ID == "" {
		spec.ID = "s1"
	}
	s, err := New(Options{Spec: spec, Source: "test", Node: "n1", Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// streamOn makes a stream of the test's own on the server at u holding
// "<prefix>.>" and returns its name, the subject template
// "<prefix>.{tenant_id}.{source_id}" and a client.
func streamOn(t *testing.T, u string, cfg jetstream.StreamConfig) (stream, subject string, c *natstest.Client) {
	t.Helper()
	stream, prefix := natstest.Names(t, u)
	c = natstest.Connect(t, u)
	cfg.Name = stream
	if cfg.Subjects == nil {
		cfg.Subjects = []string{prefix + ".>"}
	}
	c.CreateStream(cfg)
	return stream, prefix + ".{tenant_id}.{source_id}", c
}

// testEnvelope is a hook with a unique id.
func testEnvelope() *envelope.Envelope { return sinktest.Envelope() }

func deliver(s *Sink, e *envelope.Envelope, attempt int) error {
	return sinktest.Deliver(s, e, attempt, "s1", 10*time.Second)
}

// deliverUntil retries e (attempts counting up) until Deliver answers nil
// or the deadline passes, as the dispatcher would; it returns the attempts
// made and the last error.
func deliverUntil(s *Sink, e *envelope.Envelope, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for attempt := 1; ; attempt++ {
		err := deliver(s, e, attempt)
		if err == nil || time.Now().After(deadline) {
			return attempt, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
