package amqpsink

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// pubChan is one AMQP channel in confirm mode and the publishes on it that
// wait for their confirms. Publishes are serialized by sem only for the
// write; any number wait for confirms at once.
type pubChan struct {
	ch   *amqp.Channel
	slot *slot
	sem  chan struct{} // one token: the holder publishes next

	closed atomic.Bool // set once the channel is gone (fast check for pick)

	mu      sync.Mutex
	pending map[uint64]*waiter // by delivery tag
	err     error              // why the channel closed, once closed
}

// waiter is one publish waiting for its confirm. The confirm goroutine
// sets the outcome and closes done under pubChan.mu, after taking the
// waiter out of pending; whoever takes it out owns its outcome.
type waiter struct {
	tag                  uint64
	exchange, key, msgID string

	done     chan struct{}
	acked    bool
	returned bool
	retCode  uint16
	retText  string
	closeErr error // set when the channel closed before the confirm
}

func newPubChan(ch *amqp.Channel, sl *slot) *pubChan {
	return &pubChan{ch: ch, slot: sl, sem: make(chan struct{}, 1), pending: map[uint64]*waiter{}}
}

// publish writes m and returns its waiter. m's body may be released once
// it returns.
func (pc *pubChan) publish(ctx context.Context, m *message) (*waiter, error) {
	select {
	case pc.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-pc.sem }()
	// With sem held nobody else publishes on this channel, so the tag the
	// library gives this publish is the next sequence number. The waiter
	// is registered before the write: the confirm may be read before the
	// publish call returns. (GetNextPublishSeqNo takes a library lock that
	// the reader goroutine holds while it hands over confirms, so it is
	// never called under pc.mu, which the confirm goroutine needs.)
	tag := pc.ch.GetNextPublishSeqNo()
	w := &waiter{tag: tag, exchange: m.exchange, key: m.routingKey, msgID: m.messageID, done: make(chan struct{})}
	pc.mu.Lock()
	if pc.err != nil {
		err := pc.err
		pc.mu.Unlock()
		return nil, fmt.Errorf("%w: channel closed: %w", ErrNotConnected, err)
	}
	pc.pending[tag] = w
	pc.mu.Unlock()
	dc, err := pc.ch.PublishWithDeferredConfirmWithContext(ctx, m.exchange, m.routingKey, true, false, m.pub)
	if err == nil && (dc == nil || dc.DeliveryTag != tag) {
		// Confirms of this channel can no longer be matched to publishes:
		// drop it (its waiters fail, the channel is reopened).
		err = fmt.Errorf("BUG: delivery tag mismatch (want %d), channel dropped", tag)
		_ = pc.ch.Close()
	}
	if err != nil {
		pc.forget(w)
		return nil, err
	}
	return w, nil
}

// forget takes w out of pending if the confirm goroutine has not; it
// reports whether it did (then w's outcome is the caller's).
func (pc *pubChan) forget(w *waiter) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.pending[w.tag] == w {
		delete(pc.pending, w.tag)
		return true
	}
	return false
}

// wait waits for w's confirm until ctx is done. It returns nil only for a
// basic.ack of a message that was not returned.
func (pc *pubChan) wait(ctx context.Context, w *waiter) error {
	select {
	case <-w.done:
	case <-ctx.Done():
		if pc.forget(w) {
			noConfirmTotal.Inc()
			return ctx.Err()
		}
		<-w.done // completed meanwhile; closed under pc.mu, so already closed
	}
	switch {
	case w.closeErr != nil:
		noConfirmTotal.Inc()
		return fmt.Errorf("%w: channel closed before the confirm: %w", ErrNoConfirm, w.closeErr)
	case w.returned:
		returnedTotal.Inc()
		return fmt.Errorf("%w: no queue bound to %s with routing key %q, the broker returned the message (%d %s)",
			ErrUnroutable, exchangeName(w.exchange), w.key, w.retCode, w.retText)
	case !w.acked:
		nackedTotal.Inc()
		return fmt.Errorf("%w: %s, routing key %q (a queue refused it, e.g. overflow reject-publish, or the broker failed to store it)",
			ErrNacked, exchangeName(w.exchange), w.key)
	}
	publishedTotal.Inc()
	return nil
}

// run reads the channel's confirms and returns until the channel closes,
// then fails what is still pending. The library hands a message's return
// over before its confirm, from one goroutine: draining the returns
// before applying each confirm sees every return before its ack.
func (pc *pubChan) run(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			pc.returned(&r)
		case c, ok := <-confirms:
			if !ok {
				pc.die(closeReason(closes))
				return
			}
			for drained := false; !drained && returns != nil; {
				select {
				case r, ok := <-returns:
					if !ok {
						returns = nil
					} else {
						pc.returned(&r)
					}
				default:
					drained = true
				}
			}
			pc.confirmed(c)
		}
	}
}

// closeReason is the error the channel closed with. The library closes
// the close listener (after sending the error, if any) before the confirm
// listener, so this does not block; the timer only guards against a
// change of that order.
func closeReason(closes <-chan *amqp.Error) error {
	select {
	case e := <-closes:
		if e != nil {
			return e
		}
	case <-time.After(time.Second):
	}
	return errors.New("channel closed")
}

// returned marks every unconfirmed publish that r may be (see doc.go).
func (pc *pubChan) returned(r *amqp.Return) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, w := range pc.pending {
		if w.msgID == r.MessageId && w.exchange == r.Exchange && w.key == r.RoutingKey {
			w.returned, w.retCode, w.retText = true, r.ReplyCode, r.ReplyText
		}
	}
}

func (pc *pubChan) confirmed(c amqp.Confirmation) {
	pc.mu.Lock()
	w := pc.pending[c.DeliveryTag]
	if w != nil {
		delete(pc.pending, c.DeliveryTag)
		w.acked = c.Ack
		close(w.done)
	}
	pc.mu.Unlock()
	if c.Ack && pc.slot.fails.Load() != 0 {
		pc.slot.fails.Store(0)
	}
}

// die fails every pending publish with err; publishes after it fail at
// once.
func (pc *pubChan) die(err error) {
	pc.closed.Store(true)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.err = err
	for tag, w := range pc.pending {
		delete(pc.pending, tag)
		w.closeErr = err
		close(w.done)
	}
}

func exchangeName(x string) string {
	if x == "" {
		return "the default exchange"
	}
	return fmt.Sprintf("exchange %q", x)
}
