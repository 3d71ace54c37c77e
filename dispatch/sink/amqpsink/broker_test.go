package amqpsink

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
	"github.com/ankusa/ankusa/internal/sinktest"
)

// The tests run against a real RabbitMQ (internal/rabbittest): each
// declares its own exchanges and queues, deleted at the end.

// newSink returns a sink on the test broker, closed at the end.
func newSink(t *testing.T, b *rabbittest.Broker, spec config.Sink) *Sink {
	t.Helper()
	spec.Type = "rabbitmq"
	if spec.URL == "" {
		spec.URL = rabbittest.URL()
	}
	if spec.ID == "" {
		spec.ID = "s1"
	}
	s, err := New(Options{Spec: spec, Source: "test", Node: "n1",
		ConnectionName: "ankusa/" + b.Name("conn"), Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testEnvelope is a hook with a unique id.
func testEnvelope() *envelope.Envelope { return sinktest.Envelope() }

func deliver(s *Sink, e *envelope.Envelope, attempt int) error {
	return sinktest.Deliver(s, e, attempt, "s1", 10*time.Second)
}
