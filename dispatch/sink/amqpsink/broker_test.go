package amqpsink

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
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

var testSeq atomic.Uint64

// testEnvelope is a hook with a unique id.
func testEnvelope() *envelope.Envelope {
	seq := testSeq.Add(1)
	now := time.Now()
	return &envelope.Envelope{
		Seq:         seq,
		ID:          envelope.MakeID(uint64(now.UnixMilli()), 7, seq),
		TenantID:    "acme",
		SourceID:    "stripe",
		ReceivedAt:  now.UnixNano(),
		RouteParams: []envelope.Param{{Key: "app_id", Value: "a1"}},
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json; charset=utf-8"},
			{Name: "Stripe-Signature", Value: "t=1,v1=abc"},
		},
		Body:         []byte(`{"id":"evt_1","n":` + fmt.Sprint(seq) + `}`),
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
}

func deliver(s *Sink, e *envelope.Envelope, attempt int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Deliver(ctx, &dispatch.Delivery{Envelope: e, Attempt: attempt, SinkID: "s1"})
}
