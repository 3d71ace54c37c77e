package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// broker is this run's own exchange and queue on RabbitMQ, and a consumer
// that counts what arrives in a tally. Nothing else on the broker is
// touched; close deletes both (the queue also expires on its own, five
// minutes after its last consumer, should the run die first).
type broker struct {
	conn     *amqp.Connection
	ch       *amqp.Channel
	url      string
	exchange string
	queue    string
	key      string
	tally    *tally
	done     chan struct{}
}

// openBroker declares a topic exchange and a durable queue bound to every
// routing key of the sink (bench.<tenant>), and consumes from it.
func openBroker(url string) (*broker, error) {
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
	b := &broker{conn: conn, ch: ch, url: url, exchange: prefix + "-x", queue: prefix + "-q", key: "bench.#", tally: newTally(), done: make(chan struct{})}
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
	if err := ch.Qos(4096, 0, false); err != nil {
		b.close()
		return nil, err
	}
	msgs, err := ch.Consume(b.queue, "", false, true, false, false, nil)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("cannot consume from %s: %w", b.queue, err)
	}
	go b.consume(msgs)
	return b, nil
}

func (b *broker) sink() string {
	return fmt.Sprintf(`{id: mq, type: rabbitmq, url: %q, exchange: %q, routing_key: "bench.{tenant_id}"}`, b.url, b.exchange)
}

func (b *broker) tallied() *tally { return b.tally }

// consume counts every message by its message id (the event id) and acks
// them in groups.
func (b *broker) consume(msgs <-chan amqp.Delivery) {
	defer close(b.done)
	n := 0
	for m := range msgs {
		b.tally.record([]byte(m.MessageId), time.Now())
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
