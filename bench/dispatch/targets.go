package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// target is where the node delivers, the receiver (HTTP) or the broker
// (RabbitMQ), and the tally of what arrived.
type target interface {
	sink() string // the node's sink to it, a YAML flow mapping
	tallied() *tally
	close() error
}

// tally counts deliveries by event id (its seq: a bitset) and measures the
// time from the hook's commit to its delivery, from the id's millisecond
// timestamp (the commit loop's clock, the moment before the 201): the
// latency has millisecond resolution and reads about 0.5 ms high.
type tally struct {
	mu     sync.Mutex
	seen   []uint64     // bit seq: delivered at least once
	unique atomic.Int64 // hooks delivered at least once, read without the lock
	total  int64
	bad    int64 // deliveries without a parsable event id
	hist   *hdrhistogram.Histogram
	last   time.Time // last first delivery
}

func newTally() *tally {
	return &tally{hist: newHist()}
}

// newHist covers 1 µs to 10 min in µs, 3 significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

// record counts one delivery of the hook with the text id.
func (t *tally) record(id []byte, now time.Time) {
	eid, err := envelope.ParseID(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	if err != nil {
		t.bad++
		return
	}
	seq := eid.Seq()
	w := int(seq / 64)
	if w >= len(t.seen) {
		t.seen = append(t.seen, make([]uint64, max(w+1-len(t.seen), len(t.seen)))...)
	}
	bit := uint64(1) << (seq % 64)
	if t.seen[w]&bit != 0 {
		return
	}
	t.seen[w] |= bit
	t.unique.Add(1)
	t.last = now
	lat := now.UnixMicro() - int64(eid.Millis())*1000
	_ = t.hist.RecordValue(max(1, lat))
}

// counts returns unique, every delivery, and deliveries without an id.
func (t *tally) counts() (unique, total, bad int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unique.Load(), t.total, t.bad
}

// latency is the distribution of the latencies recorded since the last
// call, and starts a new one.
func (t *tally) latency() result.Latency {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hist
	t.hist = newHist()
	return result.LatencyOf(h, h.Max())
}

func (t *tally) lastDelivery() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// receiver is a customer's webhook service: it answers 204 to every
// delivery and counts them in its tally. With stamps (the latency runs) it
// also notes when each body first arrived: the handler's first reading of
// the clock, once fasthttp has read the request (a 1 KiB delivery comes in
// one read, so that is its first byte and the parse, a few µs).
type receiver struct {
	addr   string
	srv    *fasthttp.Server
	tally  *tally
	stamps *stamps // nil: not noted
	// conc is the HTTP sink's concurrency (tenant_concurrency a quarter
	// of it); 0 leaves the sink's defaults.
	conc int
}

// startReceiver starts a receiver on a loopback port; st, unless nil,
// notes when each body first arrived.
func startReceiver(st *stamps, conc int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), tally: newTally(), stamps: st, conc: conc}
	r.srv = &fasthttp.Server{Handler: r.handle, Name: "bench-receiver", ReadTimeout: time.Minute, IdleTimeout: time.Minute}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

var eventIDHeader = []byte("x-ankusa-event-id")

func (r *receiver) handle(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	if r.stamps != nil {
		r.stamps.record(ctx.PostBody(), now)
	}
	r.tally.record(ctx.Request.Header.PeekBytes(eventIDHeader), now)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

func (r *receiver) sink() string {
	conc := ""
	if r.conc > 0 {
		conc = fmt.Sprintf(", concurrency: %d, tenant_concurrency: %d", r.conc, max(r.conc/4, 1))
	}
	return fmt.Sprintf(`{id: recv, type: http, url: "http://%s/in/{tenant_id}", secret: "%s", allow_private: true%s}`, r.addr, sinkSecret, conc)
}

func (r *receiver) tallied() *tally { return r.tally }

func (r *receiver) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.ShutdownWithContext(ctx)
	return nil
}

// broker is this run's own exchange and queue on RabbitMQ, and a consumer
// that counts what arrives in a tally. Nothing else on the broker is
// touched; close deletes both (the queue also expires on its own, five
// minutes after its last consumer, should the run die first).
type broker struct {
	conn     *amqp.Connection
	url      string
	exchange string
	queue    string
	key      string
	tally    *tally
}

// openBroker declares a topic exchange and a durable queue bound to every
// routing key of the sink (bench.<tenant>), and consumes from it: with
// no-ack unless ack (the broker forgets a message as it hands it over),
// else acknowledging in groups under a prefetch of 4096. The acking
// consumer costs the broker about twice the CPU per message of the no-ack
// one on this machine (bench/RESULTS.md, issue 23): a broker that shares
// the two cores with the node then takes that CPU from the sink's
// drain, which measures this process, not the sink.
func openBroker(url string, ack bool) (*broker, error) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		return nil, fmt.Errorf("RabbitMQ at %s is not reachable (make services starts it; -no-amqp skips these runs): %w", redact(url), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, err
	}
	prefix := fmt.Sprintf("ankusa-bench-dispatch-%d-%08x", os.Getpid(), rand.Uint32())
	b := &broker{conn: conn, url: url, exchange: prefix + "-x", queue: prefix + "-q", key: "bench.#", tally: newTally()}
	if err := ch.ExchangeDeclare(b.exchange, "topic", false, false, false, false, nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("cannot declare exchange %s: %w", b.exchange, err)
	}
	if _, err := ch.QueueDeclare(b.queue, true, false, false, false, amqp.Table{"x-expires": int32(5 * 60 * 1000)}); err != nil {
		b.close()
		return nil, fmt.Errorf("cannot declare queue %s: %w", b.queue, err)
	}
	if err := ch.QueueBind(b.queue, b.key, b.exchange, false, nil); err != nil {
		b.close()
		return nil, fmt.Errorf("cannot bind %s to %s: %w", b.queue, b.exchange, err)
	}
	if ack {
		if err := ch.Qos(4096, 0, false); err != nil {
			b.close()
			return nil, err
		}
	}
	msgs, err := ch.Consume(b.queue, "", !ack, true, false, false, nil)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("cannot consume from %s: %w", b.queue, err)
	}
	go b.consume(msgs, ack)
	return b, nil
}

func (b *broker) sink() string {
	return fmt.Sprintf(`{id: mq, type: rabbitmq, url: %q, exchange: %q, routing_key: "bench.{tenant_id}"}`, b.url, b.exchange)
}

func (b *broker) tallied() *tally { return b.tally }

// consume counts every message by its message id (the event id) and, if
// ack, acks them in groups.
func (b *broker) consume(msgs <-chan amqp.Delivery, ack bool) {
	n := 0
	for m := range msgs {
		b.tally.record([]byte(m.MessageId), time.Now())
		if !ack {
			continue
		}
		if n++; n%256 == 0 {
			_ = m.Ack(true)
		} else if len(msgs) == 0 {
			_ = m.Ack(true)
			n = 0
		}
	}
}

// close deletes the queue and the exchange (on a channel of its own: a
// failed declare closes the channel it ran on) and closes the connection.
func (b *broker) close() error {
	var errs []error
	if ch, err := b.conn.Channel(); err != nil {
		errs = append(errs, fmt.Errorf("cannot delete %s and %s: %w", b.queue, b.exchange, err))
	} else {
		if _, err := ch.QueueDelete(b.queue, false, false, false); err != nil {
			errs = append(errs, fmt.Errorf("cannot delete queue %s: %w", b.queue, err))
		}
		if err := ch.ExchangeDelete(b.exchange, false, false); err != nil {
			errs = append(errs, fmt.Errorf("cannot delete exchange %s: %w", b.exchange, err))
		}
	}
	if err := b.conn.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// redact drops the password from an amqp URL for messages.
func redact(url string) string {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return "(unparsable URL)"
	}
	u.Password = "xxx"
	return u.String()
}
