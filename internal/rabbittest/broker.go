package rabbittest

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// URL is the broker the tests use: ANKUSA_AMQP_URL, default the local
// one.
func URL() string {
	if u := os.Getenv("ANKUSA_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// Need skips the test, or fails it when CI=true, saying what is missing:
// CI must not pass by skipping what it was meant to run.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}

// redacted is u without its password, for messages.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// Broker is a test's own connection to the broker, for topology and for
// consuming what the code under test published. Its methods fail the
// test on an error, so call them from the test's goroutine.
type Broker struct {
	t      testing.TB
	conn   *amqp.Connection
	prefix string // of every name, unique to the Broker

	mu        sync.Mutex
	n         int
	queues    []string
	exchanges []string
}

// New connects to the broker (Need when it cannot) under the client
// property connection_name "ankusa-test/<test name>". What the Broker
// declares is deleted, and its connection closed, when the test ends.
func New(t testing.TB) *Broker {
	t.Helper()
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(ConnectionName(t))
	conn, err := amqp.DialConfig(URL(), amqp.Config{Dial: amqp.DefaultDial(3 * time.Second), Properties: props})
	if err != nil {
		Need(t, "RabbitMQ at %s is not reachable: %v (run scripts/ensure-rabbitmq.sh)", redacted(URL()), err)
	}
	name := strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	b := &Broker{t: t, conn: conn, prefix: fmt.Sprintf("ankusa-test-%s-%08x", name, rand.Uint32())}
	t.Cleanup(b.cleanup)
	return b
}

// ConnectionName is the connection_name of the Broker of test t.
func ConnectionName(t testing.TB) string { return "ankusa-test/" + t.Name() }

// Do runs f on a fresh channel, closed afterwards: a failed declare closes
// its channel.
func (b *Broker) Do(f func(ch *amqp.Channel) error) error {
	ch, err := b.conn.Channel()
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	return f(ch)
}

// Name returns a new name under the Broker's prefix, "<prefix>-<kind><n>";
// it declares nothing.
func (b *Broker) Name(kind string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	return fmt.Sprintf("%s-%s%d", b.prefix, kind, b.n)
}

// Exchange declares a new exchange of the kind (direct, topic...).
func (b *Broker) Exchange(kind string) string {
	b.t.Helper()
	x := b.Name("x")
	b.DeclareExchange(x, kind)
	return x
}

// DeclareExchange declares exchange x of the kind, transient, and deletes
// it when the test ends.
func (b *Broker) DeclareExchange(x, kind string) {
	b.t.Helper()
	b.mu.Lock()
	if !slices.Contains(b.exchanges, x) {
		b.exchanges = append(b.exchanges, x)
	}
	b.mu.Unlock()
	if err := b.Do(func(ch *amqp.Channel) error { return ch.ExchangeDeclare(x, kind, false, false, false, false, nil) }); err != nil {
		b.t.Fatalf("declare exchange %s: %v", x, err)
	}
}

// DeleteExchange deletes exchange x now.
func (b *Broker) DeleteExchange(x string) {
	b.t.Helper()
	if err := b.Do(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) }); err != nil {
		b.t.Fatalf("delete exchange %s: %v", x, err)
	}
}

// Queue declares a new durable queue with args (besides an x-expires of
// 5 minutes) bound to exchange x with each key (none: not bound).
func (b *Broker) Queue(args amqp.Table, x string, keys ...string) string {
	b.t.Helper()
	q := b.Name("q")
	a := amqp.Table{"x-expires": int32(5 * 60 * 1000)}
	for k, v := range args {
		a[k] = v
	}
	if err := b.Do(func(ch *amqp.Channel) error { _, err := ch.QueueDeclare(q, true, false, false, false, a); return err }); err != nil {
		b.t.Fatalf("declare queue %s: %v", q, err)
	}
	b.mu.Lock()
	b.queues = append(b.queues, q)
	b.mu.Unlock()
	for _, k := range keys {
		b.Bind(q, x, k)
	}
	return q
}

// Bind binds queue q to exchange x with key.
func (b *Broker) Bind(q, x, key string) {
	b.t.Helper()
	if err := b.Do(func(ch *amqp.Channel) error { return ch.QueueBind(q, key, x, false, nil) }); err != nil {
		b.t.Fatalf("bind queue %s to %s with %q: %v", q, x, key, err)
	}
}

// Count is the number of ready messages in q.
func (b *Broker) Count(q string) int {
	b.t.Helper()
	var n int
	if err := b.Do(func(ch *amqp.Channel) error {
		st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		n = st.Messages
		return err
	}); err != nil {
		b.t.Fatalf("inspect queue %s: %v", q, err)
	}
	return n
}

// Consume starts an exclusive consumer of q on a channel of its own with
// prefetch messages in flight, acknowledging them itself if autoAck.
// stop closes the channel, which ends the deliveries; it may be called
// more than once and is called when the test ends.
func (b *Broker) Consume(q string, prefetch int, autoAck bool) (deliveries <-chan amqp.Delivery, stop func()) {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatalf("consume %s: %v", q, err)
	}
	stop = sync.OnceFunc(func() { _ = ch.Close() })
	b.t.Cleanup(stop)
	if err := ch.Qos(prefetch, 0, false); err != nil {
		b.t.Fatalf("consume %s: qos: %v", q, err)
	}
	d, err := ch.Consume(q, "", autoAck, true, false, false, nil)
	if err != nil {
		b.t.Fatalf("consume %s: %v", q, err)
	}
	return d, stop
}

// Drain consumes every message of q, which must hold n within 10 s, and
// checks that none is left.
func (b *Broker) Drain(q string, n int) []amqp.Delivery {
	b.t.Helper()
	msgs, stop := b.Consume(q, 500, false)
	var got []amqp.Delivery
	err := func() error {
		// Closing the channel before Count puts back what was in flight
		// to this consumer beyond the n, so Count sees it.
		defer stop()
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
	}()
	if err != nil {
		b.t.Fatalf("drain %s: %v", q, err)
	}
	if left := b.Count(q); left != 0 {
		b.t.Fatalf("queue %s: %d messages left after draining %d", q, left, n)
	}
	return got
}

func (b *Broker) cleanup() {
	b.mu.Lock()
	queues, exchanges := slices.Clone(b.queues), slices.Clone(b.exchanges)
	b.mu.Unlock()
	for _, q := range queues {
		_ = b.Do(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err })
	}
	for _, x := range exchanges {
		_ = b.Do(func(ch *amqp.Channel) error { return ch.ExchangeDelete(x, false, false) })
	}
	_ = b.conn.Close()
}
