package amqpsink

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "ankusa.stripe") // the default routing key
	s := newSink(t, b, config.Sink{Exchange: x})
	if !s.Durable() {
		t.Fatal("Durable() = false")
	}

	e := testEnvelope()
	e.Verification.Flagged = true
	e.RouteParams = append(e.RouteParams, envelope.Param{Key: "region", Value: "eu"})
	if err := deliver(s, e, 3); err != nil {
		t.Fatal(err)
	}
	m := b.Drain(q, 1)[0]
	if want := e.AppendJSON(nil); !bytes.Equal(m.Body, want) {
		t.Errorf("body:\n got %s\nwant %s", m.Body, want)
	}
	id := e.ID.String()
	checkProps(t, m, id, "application/json", x, "ankusa.stripe", e.ReceivedAt)
	wantHeaders := amqp.Table{
		HeaderEventID:                id,
		HeaderTenant:                 "acme",
		HeaderSource:                 "stripe",
		HeaderAttempt:                int64(3),
		HeaderFlagged:                true,
		HeaderParamPrefix + "app_id": "a1",
		HeaderParamPrefix + "region": "eu",
	}
	checkHeaders(t, m.Headers, wantHeaders)
	var back envelope.Envelope
	if err := back.UnmarshalJSON(m.Body); err != nil {
		t.Fatalf("the body is not the envelope's JSON form: %v", err)
	}
	if back.ID != e.ID || !bytes.Equal(back.Body, e.Body) {
		t.Errorf("decoded envelope: id %v body %q", back.ID, back.Body)
	}
}

func TestRawRoundTrip(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "raw.acme")
	s := newSink(t, b, config.Sink{Exchange: x, Format: "raw", RoutingKey: "raw.{tenant_id}"})

	e := testEnvelope()
	e.Body = []byte{0, 1, 2, 0xff, 'a', '\n'} // not UTF-8: raw is bytes
	e.Headers = []envelope.Header{{Name: "X-Other", Value: "1"}, {Name: "Content-Type", Value: "application/octet-stream"}}
	e.RouteParams = nil
	if err := deliver(s, e, 1); err != nil {
		t.Fatal(err)
	}
	noType := testEnvelope()
	noType.Headers = nil
	if err := deliver(s, noType, 1); err != nil {
		t.Fatal(err)
	}
	ms := b.Drain(q, 2)
	if !bytes.Equal(ms[0].Body, e.Body) {
		t.Errorf("body %q, want %q", ms[0].Body, e.Body)
	}
	checkProps(t, ms[0], e.ID.String(), "application/octet-stream", x, "raw.acme", e.ReceivedAt)
	checkHeaders(t, ms[0].Headers, amqp.Table{
		HeaderEventID: e.ID.String(), HeaderTenant: "acme", HeaderSource: "stripe", HeaderAttempt: int64(1),
	})
	if ms[1].ContentType != "" || !bytes.Equal(ms[1].Body, noType.Body) {
		t.Errorf("hook without Content-Type: content type %q body %q", ms[1].ContentType, ms[1].Body)
	}
}

func checkProps(t *testing.T, m amqp.Delivery, id, ct, x, key string, receivedAt int64) {
	t.Helper()
	if m.DeliveryMode != amqp.Persistent {
		t.Errorf("delivery mode %d, want persistent (2)", m.DeliveryMode)
	}
	if m.ContentType != ct {
		t.Errorf("content type %q, want %q", m.ContentType, ct)
	}
	if m.MessageId != id || m.AppId != AppID {
		t.Errorf("message id %q app id %q, want %q %q", m.MessageId, m.AppId, id, AppID)
	}
	if want := time.Unix(0, receivedAt).Truncate(time.Second); !m.Timestamp.Equal(want) {
		t.Errorf("timestamp %v, want %v", m.Timestamp, want)
	}
	if m.Exchange != x || m.RoutingKey != key {
		t.Errorf("exchange %q key %q, want %q %q", m.Exchange, m.RoutingKey, x, key)
	}
}

func checkHeaders(t *testing.T, got, want amqp.Table) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %s = %#v, want %#v", k, got[k], v)
		}
	}
}

func TestRoutingKeyTemplate(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	qa := b.Queue(nil, x, "hooks.acme.*")
	qb := b.Queue(nil, x, "hooks.globex.a2")
	s := newSink(t, b, config.Sink{Exchange: x, RoutingKey: "hooks.{tenant_id}.{params.app_id}"})

	var want = map[string][]string{}
	for i, tc := range []struct{ tenant, app, q string }{
		{"acme", "a1", qa}, {"globex", "a2", qb}, {"acme", "a9", qa},
	} {
		e := testEnvelope()
		e.TenantID = tc.tenant
		e.RouteParams = []envelope.Param{{Key: "app_id", Value: tc.app}}
		if err := deliver(s, e, 1); err != nil {
			t.Fatalf("hook %d: %v", i, err)
		}
		want[tc.q] = append(want[tc.q], "hooks."+tc.tenant+"."+tc.app)
	}
	for _, q := range []string{qa, qb} {
		ms := b.Drain(q, len(want[q]))
		for i, m := range ms {
			if m.RoutingKey != want[q][i] {
				t.Errorf("queue %s message %d: routing key %q, want %q", q, i, m.RoutingKey, want[q][i])
			}
		}
	}
}

// An unroutable message is acked by RabbitMQ (it decided to drop it): the
// sink must answer an error, never ok.
func TestUnroutable(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	s := newSink(t, b, config.Sink{Exchange: x})

	err := deliver(s, testEnvelope(), 1)
	if !errors.Is(err, ErrUnroutable) {
		t.Fatalf("err = %v, want ErrUnroutable", err)
	}
	if de := dispatch.AsError(err); de.Permanent || !strings.Contains(err.Error(), x) || !strings.Contains(err.Error(), "ankusa.stripe") {
		t.Errorf("err %q (permanent %v): want a retryable error naming the exchange and routing key", err, de.Permanent)
	}
	// Returns do not close the channel: once a queue is bound, the next
	// attempt lands.
	q := b.Queue(nil, x, "ankusa.stripe")
	e := testEnvelope()
	for i := 0; i < 8; i++ { // every channel of the pool
		if err := deliver(s, e, 2); err != nil {
			t.Fatalf("after binding, attempt %d: %v", i, err)
		}
	}
	b.Drain(q, 8)

	// The default exchange with no such queue is unroutable too.
	s2 := newSink(t, b, config.Sink{RoutingKey: b.Name("no-such-queue")})
	if err := deliver(s2, testEnvelope(), 1); !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), "default exchange") {
		t.Fatalf("default exchange: err = %v, want ErrUnroutable", err)
	}
}

// A queue at its max-length with overflow reject-publish nacks.
func TestNack(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	q := b.Queue(amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"}, "")
	s := newSink(t, b, config.Sink{RoutingKey: q}) // the default exchange routes by queue name
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	err := deliver(s, testEnvelope(), 1)
	if !errors.Is(err, ErrNacked) || dispatch.AsError(err).Permanent {
		t.Fatalf("err = %v, want a retryable ErrNacked", err)
	}
	b.Drain(q, 1)
	if err := deliver(s, testEnvelope(), 2); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}

// Publishing to a missing exchange closes the channel (404): the error
// says so, and the sink recovers once the exchange exists.
func TestMissingExchange(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Name("later")
	s := newSink(t, b, config.Sink{Exchange: x, Channels: 2})

	for i := 0; i < 3; i++ {
		err := deliver(s, testEnvelope(), 1)
		if err == nil {
			t.Fatal("ok for a missing exchange")
		}
		if !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no exchange") {
			t.Fatalf("attempt %d: err %q does not name the broker's 404", i, err)
		}
		t.Logf("attempt %d: %v", i, err)
	}

	b.DeclareExchange(x, "direct")
	q := b.Queue(nil, x, "ankusa.stripe")
	e := testEnvelope()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := deliver(s, e, 2)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the exchange was declared: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := b.Drain(q, 1)[0]; m.MessageId != e.ID.String() {
		t.Errorf("message id %q, want %q", m.MessageId, e.ID)
	}
}

func TestConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "ankusa.stripe")
	s := newSink(t, b, config.Sink{Exchange: x})

	const workers, total = 32, 2000
	envs := make([]*envelope.Envelope, total)
	for i := range envs {
		envs[i] = testEnvelope()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, total)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				if err := deliver(s, envs[i], 1); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("delivery failed: %v", err)
	}
	t.Logf("%d confirmed deliveries from %d goroutines in %v", total, workers, time.Since(start))
	if n := b.Count(q); n != total {
		t.Fatalf("queue holds %d, want %d", n, total)
	}
	seen := map[string]bool{}
	for _, m := range b.Drain(q, total) {
		if seen[m.MessageId] {
			t.Fatalf("duplicate %s", m.MessageId)
		}
		seen[m.MessageId] = true
	}
	for _, e := range envs {
		if !seen[e.ID.String()] {
			t.Fatalf("%s confirmed but not in the queue", e.ID)
		}
	}
}

// New does not connect; a broker that is down makes Deliver fail fast and
// retryably, without the password in the message.
func TestUnreachableBroker(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-secret"
	s, err := New(Options{Spec: config.Sink{ID: "s1", Type: "rabbitmq", URL: "amqp://ankusa:" + pw + "@127.0.0.1:1/",
		ConnectTimeout: config.Duration(time.Second)}, Source: "src", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.o.ConnectionName != "ankusa/n1/src/s1" {
		t.Errorf("connection name %q", s.o.ConnectionName)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		err := deliver(s, testEnvelope(), 1)
		if !errors.Is(err, ErrNotConnected) || dispatch.AsError(err).Permanent {
			t.Fatalf("err = %v, want a retryable ErrNotConnected", err)
		}
		if strings.Contains(err.Error(), pw) {
			t.Fatalf("the password is in the error: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Deliver took %v", d)
		}
		if i == 0 {
			t.Log(err)
		}
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := deliver(s, testEnvelope(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestDeliverAfterClose(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "ankusa.stripe")
	s := newSink(t, b, config.Sink{Exchange: x})
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := deliver(s, testEnvelope(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Deliver(ctx, &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}); err == nil {
		t.Fatal("ok after Close")
	}
	b.Drain(q, 1)
}

// Routable and unroutable publishes interleaved on one channel: returns
// carry no delivery tag, yet each must fail exactly its own publish.
func TestReturnsMultiplexed(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	q := b.Queue(nil, x, "ok.*")
	s := newSink(t, b, config.Sink{Exchange: x, Channels: 1, RoutingKey: "{params.k}.{tenant_id}"})

	const workers, total = 32, 1000
	var next atomic.Int64
	var okRoutable, badOK, wrongErr atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				e := testEnvelope()
				k := "ok"
				if i%3 == 0 {
					k = "no"
				}
				e.RouteParams = []envelope.Param{{Key: "k", Value: k}}
				err := deliver(s, e, 1)
				switch {
				case k == "ok" && err == nil:
					okRoutable.Add(1)
				case k == "no" && errors.Is(err, ErrUnroutable):
				case k == "no" && err == nil:
					badOK.Add(1)
				default:
					wrongErr.Add(1)
					t.Errorf("key %s: %v", k, err)
				}
			}
		})
	}
	wg.Wait()
	if badOK.Load() != 0 || wrongErr.Load() != 0 {
		t.Fatalf("%d unroutable messages reported ok, %d routable ones failed", badOK.Load(), wrongErr.Load())
	}
	b.Drain(q, int(okRoutable.Load()))
}

// Many publishes in flight on one channel get their confirms in batches
// (the broker acks and nacks with multiple set): a queue that takes only
// its first max messages nacks the rest, and exactly the deliveries whose
// message is in the queue answer nil; every other one is a retryable
// ErrNacked.
func TestNackInBatchFailsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	const max, workers, total = 100, 64, 400
	q := b.Queue(amqp.Table{"x-max-length": int32(max), "x-overflow": "reject-publish"}, "")
	s := newSink(t, b, config.Sink{RoutingKey: q, Channels: 1})

	envs := make([]*envelope.Envelope, total)
	for i := range envs {
		envs[i] = testEnvelope()
	}
	results := make([]error, total)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				results[i] = deliver(s, envs[i], 1)
			}
		})
	}
	wg.Wait()
	ok := map[string]bool{}
	for i, err := range results {
		switch {
		case err == nil:
			ok[envs[i].ID.String()] = true
		case !errors.Is(err, ErrNacked) || dispatch.AsError(err).Permanent || !dispatch.AsError(err).Answered:
			t.Fatalf("delivery %d: %v, want nil or a retryable, answered ErrNacked", i, err)
		}
	}
	if len(ok) != max {
		t.Fatalf("%d deliveries confirmed, want %d (the queue's max-length)", len(ok), max)
	}
	for _, m := range b.Drain(q, max) {
		if !ok[m.MessageId] {
			t.Fatalf("%s is in the queue but its delivery failed", m.MessageId)
		}
		delete(ok, m.MessageId)
	}
	if len(ok) != 0 {
		t.Fatalf("%d deliveries confirmed but not in the queue", len(ok))
	}
}
