package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// delivery is what a sink received for one event id: the sha256 of the
// first body, the time of the first delivery, how many deliveries, and
// whether any of them differed from the first.
type delivery struct {
	sum    [32]byte
	first  time.Time
	n      int
	differ bool
}

// record is the deliveries of one sink by event id. Safe for concurrent
// use.
type record struct {
	name string

	mu      sync.Mutex
	byID    map[string]*delivery
	total   int64
	noID    int64
	lastAdd time.Time
}

func newRecord(name string) *record {
	return &record{name: name, byID: map[string]*delivery{}}
}

func (r *record) add(id string, body []byte, at time.Time) {
	sum := sha256.Sum256(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if id == "" {
		r.noID++
		return
	}
	d, ok := r.byID[id]
	if !ok {
		r.byID[id] = &delivery{sum: sum, first: at, n: 1}
		r.lastAdd = at
		return
	}
	d.n++
	d.differ = d.differ || d.sum != sum
}

// get is the delivery of id, if any (a copy).
func (r *record) get(id string) (delivery, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.byID[id]
	if !ok {
		return delivery{}, false
	}
	return *d, true
}

// receiverMode is what the receiver does with a delivery.
type receiverMode int

const (
	answerOK   receiverMode = iota // 204, recorded
	answer5xx                      // 503, not recorded
	answerHang                     // hold the request until the mode changes, then 503
)

// receiver is the customer's webhook service the HTTP sink delivers to.
// It records each delivery it answers 204 to (event id from
// x-ankusa-event-id, body hash); the scheduler switches it to 503s or to
// hanging.
type receiver struct {
	addr string
	srv  *http.Server
	rec  *record

	mu      sync.Mutex
	mode    receiverMode
	changed chan struct{} // closed when the mode changes
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{addr: ln.Addr().String(), rec: newRecord("http"), changed: make(chan struct{})}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) setMode(m receiverMode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	mode, changed := r.mode, r.changed
	r.mu.Unlock()
	switch mode {
	case answer5xx:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case answerHang:
		select {
		case <-changed:
		case <-req.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.rec.add(req.Header.Get("x-ankusa-event-id"), body, time.Now())
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) close() {
	r.setMode(answerOK) // release hanging handlers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}

// soakExchange and soakQueue are the topology on the private RabbitMQ:
// a durable topic exchange and a durable queue bound to every key.
const (
	soakExchange = "soak"
	soakQueue    = "soak-deliveries"
)

// consumer reads every message of the private RabbitMQ's soak queue and
// records it (event id from the message id, body hash), acking each after
// recording. It redials while the broker is down.
type consumer struct {
	url string
	rec *record
	tl  *timeline

	cancel context.CancelFunc
	done   chan struct{}
}

// declare creates the exchange and the queue, so that the node's first
// publish finds them.
func declare(url string) error {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		return fmt.Errorf("cannot reach the private RabbitMQ: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.ExchangeDeclare(soakExchange, "topic", true, false, false, false, nil); err != nil {
		return fmt.Errorf("cannot declare exchange %s: %w", soakExchange, err)
	}
	if _, err := ch.QueueDeclare(soakQueue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("cannot declare queue %s: %w", soakQueue, err)
	}
	if err := ch.QueueBind(soakQueue, "#", soakExchange, false, nil); err != nil {
		return fmt.Errorf("cannot bind %s: %w", soakQueue, err)
	}
	return nil
}

func startConsumer(url string, tl *timeline) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{url: url, rec: newRecord("amqp"), tl: tl, cancel: cancel, done: make(chan struct{})}
	go c.loop(ctx)
	return c
}

func (c *consumer) loop(ctx context.Context) {
	defer close(c.done)
	for ctx.Err() == nil {
		err := c.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !strings.Contains(err.Error(), "connection refused") {
			c.tl.event("amqp consumer: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// consume reads from one connection until it closes or ctx ends.
func (c *consumer) consume(ctx context.Context) error {
	conn, err := amqp.DialConfig(c.url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(512, 0, false); err != nil {
		return err
	}
	msgs, err := ch.Consume(soakQueue, "", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("cannot consume %s: %w", soakQueue, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			c.rec.add(m.MessageId, m.Body, time.Now())
			_ = m.Ack(false)
		}
	}
}

func (c *consumer) close() {
	c.cancel()
	<-c.done
}
