package amqpsink

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	backoffpkg "github.com/ankusa/ankusa/internal/backoff"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"
)

// Reconnect backoff: attempt n waits a random time in
// [0, min(backoffCap, backoffBase * 2^n)] (full jitter). A connection
// that lived stableAfter resets the count.
const (
	backoffBase = 100 * time.Millisecond
	backoffCap  = 30 * time.Second
	stableAfter = 10 * time.Second
)

func backoff(n int) time.Duration { return backoffpkg.Full(n, backoffBase, backoffCap) }

// session is one connection and its channel pool. It is replaced, not
// repaired, when the connection is lost; a channel that closes alone is
// reopened in its slot.
type session struct {
	s      *Sink
	conn   *amqp.Connection
	slots  []slot
	next   atomic.Uint32
	closes chan *amqp.Error
	blocks chan amqp.Blocking
	// blocked is the reason while the broker blocks publishers
	// (connection.blocked: a memory or disk alarm).
	blocked atomic.Pointer[string]
	// chanErr is the last reason a channel closed.
	chanErr atomic.Pointer[string]
	done    chan struct{} // closed once the connection is gone
	endOnce sync.Once
	wg      sync.WaitGroup
}

// slot is one place of the pool; its channel changes when reopened.
type slot struct {
	cur atomic.Pointer[pubChan]
	// fails counts channel closes since the slot's last ack: the
	// reopen backoff grows while every new channel dies at once (a
	// missing exchange).
	fails atomic.Int32
}

// dial connects and opens the channel pool.
func (s *Sink) dial() (*session, error) {
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName(s.o.ConnectionName)
	conn, err := amqp.DialConfig(s.o.Spec.URL, amqp.Config{
		Heartbeat:  heartbeat,
		Properties: props,
		Dial:       amqp.DefaultDial(time.Duration(s.o.Spec.ConnectTimeout)),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s (url, connect_timeout): %s", s.redacted, s.scrub(err))
	}
	ss := &session{
		s:      s,
		conn:   conn,
		slots:  make([]slot, s.o.Spec.Channels),
		closes: conn.NotifyClose(make(chan *amqp.Error, 1)),
		blocks: conn.NotifyBlocked(make(chan amqp.Blocking, 4)),
		done:   make(chan struct{}),
	}
	for i := range ss.slots {
		if err := ss.openChannel(i); err != nil {
			ss.close(time.Duration(s.o.Spec.ConnectTimeout))
			return nil, fmt.Errorf("connected to %s but %s", s.redacted, s.scrub(err))
		}
	}
	return ss, nil
}

// openChannel opens slot i's channel in confirm mode and starts its
// confirm goroutine.
func (ss *session) openChannel(i int) error {
	ch, err := ss.conn.Channel()
	if err != nil {
		return fmt.Errorf("cannot open a channel: %w", err)
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	returns := ch.NotifyReturn(make(chan amqp.Return, 64))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 256))
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return fmt.Errorf("cannot put a channel in confirm mode: %w", err)
	}
	pc := newPubChan(ch, &ss.slots[i])
	ss.slots[i].cur.Store(pc)
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		pc.run(confirms, returns, closes)
		ss.reopen(i, pc)
	}()
	return nil
}

// pick returns an open channel, round-robin.
func (ss *session) pick() (*pubChan, error) {
	n := uint32(len(ss.slots))
	start := ss.next.Add(1)
	for i := range n {
		if pc := ss.slots[(start+i)%n].cur.Load(); pc != nil && !pc.closed.Load() {
			return pc, nil
		}
	}
	last := "none"
	if p := ss.chanErr.Load(); p != nil {
		last = *p
	}
	return nil, fmt.Errorf("%w: all %d channels are closed and being reopened (last close: %s)", ErrNotConnected, n, last)
}

// reopen runs after slot i's channel pc closed: unless the whole
// connection is going, it opens a new channel after a backoff.
func (ss *session) reopen(i int, pc *pubChan) {
	if ss.conn.IsClosed() || ss.isDone() {
		return // the supervisor redials
	}
	channelLossTotal.Inc()
	reason := pc.err.Error()
	ss.chanErr.Store(&reason)
	sl := &ss.slots[i]
	for {
		n := int(sl.fails.Add(1))
		d := backoff(n)
		ss.s.log.Warn("amqp channel closed by the broker; reopening it",
			zap.Int("channel", i), zap.String("reason", reason), zap.Duration("after", d))
		select {
		case <-time.After(d):
		case <-ss.done:
			return
		}
		err := ss.openChannel(i)
		if err == nil {
			return
		}
		if ss.conn.IsClosed() {
			return
		}
		reason = err.Error()
	}
}

func (ss *session) isDone() bool {
	select {
	case <-ss.done:
		return true
	default:
		return false
	}
}

// watch follows the connection until it closes (the broker's reason) or
// stop is closed (nil, false).
func (ss *session) watch(stop <-chan struct{}) (reason error, lost bool) {
	for {
		select {
		case e, ok := <-ss.closes:
			if ok && e != nil {
				return e, true
			}
			return fmt.Errorf("connection closed"), true
		case b, ok := <-ss.blocks:
			if !ok {
				ss.blocks = nil
				continue
			}
			if b.Active {
				r := b.Reason
				ss.blocked.Store(&r)
				ss.s.log.Warn("the broker blocks publishing (resource alarm)", zap.String("reason", r))
			} else {
				ss.blocked.Store(nil)
				ss.s.log.Info("the broker unblocked publishing")
			}
		case <-stop:
			return nil, false
		}
	}
}

// close closes the connection (pending publishes fail) and waits for the
// channel goroutines.
func (ss *session) close(timeout time.Duration) {
	_ = ss.conn.CloseDeadline(time.Now().Add(timeout))
	ss.end()
	ss.wg.Wait()
}

// end marks the session gone: no channel is reopened after it.
func (ss *session) end() { ss.endOnce.Do(func() { close(ss.done) }) }
