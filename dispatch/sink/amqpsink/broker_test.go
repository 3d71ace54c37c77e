package amqpsink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// The tests run against a real RabbitMQ: ANKUSA_AMQP_URL, default the
// local one (scripts/ensure-rabbitmq.sh starts it for make test). Each
// test declares its own exchanges and queues under a unique prefix and
// deletes them at the end; queues also expire on their own (x-expires)
// if a test dies first.

func brokerURL() string {
	if u := os.Getenv("ANKUSA_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// needOrSkip skips the test, or fails it when CI=true: CI must not pass
// by skipping what it was meant to run.
func needOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}

// broker is a test's own connection for topology and consuming.
type broker struct {
	t         *testing.T
	conn      *amqp.Connection
	prefix    string
	n         int
	queues    []string
	exchanges []string
}

func newBroker(t *testing.T) *broker {
	t.Helper()
	conn, err := amqp.DialConfig(brokerURL(), amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		needOrSkip(t, "RabbitMQ at %s is not reachable: %v (run scripts/ensure-rabbitmq.sh)", redactURL(brokerURL()), err)
	}
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	b := &broker{t: t, conn: conn, prefix: fmt.Sprintf("ankusa-test-%s-%08x", name, rand.Uint32())}
	t.Cleanup(b.cleanup)
	return b
}

// do runs f on a fresh channel: a failed declare closes its channel.
func (b *broker) do(f func(ch *amqp.Channel) error) error {
	ch, err := b.conn.Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	return f(ch)
}

func (b *broker) name(kind string) string {
	b.n++
	return fmt.Sprintf("%s-%s%d", b.prefix, kind, b.n)
}

// exchange declares a new exchange of the kind (direct, topic...).
func (b *broker) exchange(kind string) string {
	b.t.Helper()
	x := b.name("x")
	if err := b.do(func(ch *amqp.Channel) error { return ch.ExchangeDeclare(x, kind, false, false, false, false, nil) }); err != nil {
		b.t.Fatalf("declare exchange %s: %v", x, err)
	}
	b.exchanges = append(b.exchanges, x)
	return x
}

// queue declares a new durable queue bound to exchange x with each key
// (none: not bound).
func (b *broker) queue(args amqp.Table, x string, keys ...string) string {
	b.t.Helper()
	q := b.name("q")
	a := amqp.Table{"x-expires": int32(5 * 60 * 1000)}
	for k, v := range args {
		a[k] = v
	}
	err := b.do(func(ch *amqp.Channel) error {
		if _, err := ch.QueueDeclare(q, true, false, false, false, a); err != nil {
			return err
		}
		for _, k := range keys {
			if err := ch.QueueBind(q, k, x, false, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.t.Fatalf("declare queue %s: %v", q, err)
	}
	b.queues = append(b.queues, q)
	return q
}

// count is the number of ready messages in q.
func (b *broker) count(q string) int {
	b.t.Helper()
	var n int
	if err := b.do(func(ch *amqp.Channel) error {
		st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		n = st.Messages
		return err
	}); err != nil {
		b.t.Fatalf("inspect queue %s: %v", q, err)
	}
	return n
}

// drain consumes every message of q (it must hold n) and checks none is
// left.
func (b *broker) drain(q string, n int) []amqp.Delivery {
	b.t.Helper()
	var got []amqp.Delivery
	err := b.do(func(ch *amqp.Channel) error {
		if err := ch.Qos(500, 0, false); err != nil {
			return err
		}
		msgs, err := ch.Consume(q, "", false, true, false, false, nil)
		if err != nil {
			return err
		}
		deadline := time.After(10 * time.Second)
		for len(got) < n {
			select {
			case m, ok := <-msgs:
				if !ok {
					return fmt.Errorf("consumer closed after %d of %d", len(got), n)
				}
				got = append(got, m)
				if err := m.Ack(false); err != nil {
					return err
				}
			case <-deadline:
				return fmt.Errorf("got %d of %d messages", len(got), n)
			}
		}
		return nil
	})
	if err != nil {
		b.t.Fatalf("drain %s: %v", q, err)
	}
	if left := b.count(q); left != 0 {
		b.t.Fatalf("queue %s: %d messages left after draining %d", q, left, n)
	}
	return got
}

func (b *broker) cleanup() {
	for _, q := range b.queues {
		_ = b.do(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range b.exchanges {
		_ = b.do(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
	_ = b.conn.Close()
}

// newSink returns a sink on the test broker, closed at the end.
func (b *broker) newSink(spec config.Sink) *Sink {
	b.t.Helper()
	spec.Type = "rabbitmq"
	if spec.URL == "" {
		spec.URL = brokerURL()
	}
	if spec.ID == "" {
		spec.ID = "s1"
	}
	s, err := New(Options{Spec: spec, Source: "test", Node: "n1",
		ConnectionName: "ankusa/" + b.name("conn"), Logger: zaptest.NewLogger(b.t)})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = s.Close() })
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

// rabbitmqctls are the rabbitmqctl commands to try, in order:
// ANKUSA_RABBITMQCTL, the one scripts/ensure-rabbitmq.sh writes for the
// node it started (that node's HOME holds its cookie), then the system's.
func rabbitmqctls() []string {
	var c []string
	if p := os.Getenv("ANKUSA_RABBITMQCTL"); p != "" {
		c = append(c, p)
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	c = append(c, tmp+"/ankusa-rabbitmq/rabbitmqctl")
	if p, err := exec.LookPath("rabbitmqctl"); err == nil {
		c = append(c, p)
	}
	c = append(c, "/usr/sbin/rabbitmqctl")
	var have []string
	for _, p := range c {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && !slices.Contains(have, p) {
			have = append(have, p)
		}
	}
	return have
}

// serverConn finds the connection whose client property connection_name
// is cn, asking each rabbitmqctl in turn, and returns the rabbitmqctl that
// knows it, its Erlang pid (what close_connection takes in RabbitMQ 3.x)
// and its broker name ("127.0.0.1:54321 -> 127.0.0.1:5672").
func serverConn(t *testing.T, cn string) (ctl, pid, name string) {
	t.Helper()
	ctls := rabbitmqctls()
	if len(ctls) == 0 {
		needOrSkip(t, "rabbitmqctl is not installed")
	}
	want := `{"connection_name","` + cn + `"}`
	var tried []string
	for _, ctl := range ctls {
		out, err := exec.Command(ctl, "-q", "--no-table-headers", "list_connections", "pid", "name", "client_properties").CombinedOutput()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v: %.300s", ctl, err, out))
			continue
		}
		n := 0
		for line := range strings.Lines(string(out)) {
			f := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 3)
			if len(f) == 3 && strings.Contains(f[2], want) {
				pid, name = f[0], f[1]
				n++
			}
		}
		if n == 1 {
			return ctl, pid, name
		}
		tried = append(tried, fmt.Sprintf("%s: %d connections named %q", ctl, n, cn))
	}
	t.Fatalf("cannot find the sink's connection %q:\n%s", cn, strings.Join(tried, "\n"))
	return "", "", ""
}
