package natssink

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/natstest"
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
