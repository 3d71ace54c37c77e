package amqpsink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// Sink publishes hooks to RabbitMQ with publisher confirms (see the
// package doc). It is safe for concurrent use.
type Sink struct {
	o        Options
	key      *config.Template
	raw      bool
	redacted string // the URL without its password, for messages
	password string // scrubbed from library errors, just in case
	timeout  time.Duration
	log      *zap.Logger

	mu      sync.Mutex
	sess    *session      // the live connection; nil while there is none
	dialing chan struct{} // closed when the running dial attempt ends; nil between attempts
	lastErr error         // why there is no session
	started bool          // the supervisor runs
	closed  bool
	done    chan struct{} // closed by Close
	wg      sync.WaitGroup
}

var _ dispatch.Sink = (*Sink)(nil)

// New checks o and returns the sink. It does not connect: the first
// Deliver does, so a broker that is down at boot does not stop the node.
func New(o Options) (*Sink, error) {
	o.EnsureDefaults()
	key, err := parse(&o)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq sink %q of source %q: %w", o.Spec.ID, o.Source, err)
	}
	s := &Sink{
		o:        o,
		key:      key,
		raw:      o.Spec.Format == "raw",
		redacted: redactURL(o.Spec.URL),
		timeout:  time.Duration(o.Spec.Timeout),
		done:     make(chan struct{}),
	}
	if u, err := url.Parse(o.Spec.URL); err == nil && u.User != nil {
		s.password, _ = u.User.Password()
	}
	s.log = o.Logger.With(zap.String("sink", o.Spec.ID), zap.String("source", o.Source),
		zap.String("url", s.redacted), zap.String("connection_name", o.ConnectionName))
	return s, nil
}

// Check reports what New would refuse in spec, connecting to nothing; an
// error names the key relative to the sink. check-config calls it
// (config.ValidateOptions.CheckSink).
func Check(spec config.Sink) error {
	o := Options{Spec: spec}
	o.EnsureDefaults()
	_, err := parse(&o)
	return err
}

// parse checks o and parses its routing key template.
func parse(o *Options) (*config.Template, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	key, err := config.ParseTemplate(o.Spec.RoutingKey)
	if err != nil {
		return nil, fmt.Errorf("routing_key: %w", err)
	}
	return key, nil
}

// Durable is true: Deliver answers nil only for a message the broker
// confirmed.
func (s *Sink) Durable() bool { return true }

// Deliver publishes one hook and waits for the broker's confirm, for at
// most Spec.Timeout and until ctx is done; the first call also waits for
// the first dial (at most Spec.ConnectTimeout). It returns nil only for a
// basic.ack of a message that was not returned. Every error is a
// *dispatch.Error: retryable, except a hook that cannot be an AMQP message
// (a routing key, content type or header name over 255 bytes), which is
// permanent. An error does not mean the message is not at the broker
// (at-least-once). Deliver does not keep d.
func (s *Sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	d.Status = 0
	m, err := s.build(d)
	if err != nil {
		return permanent(err)
	}
	pc, err := s.channel(ctx)
	if err != nil {
		m.release()
		return retryable(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	w, err := pc.publish(ctx, m)
	exchange, key := m.exchange, m.routingKey
	m.release()
	if err != nil {
		if errors.Is(err, amqp.ErrClosed) { // nothing was written
			err = fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return retryable(fmt.Errorf("cannot publish to %s, routing key %q: %w", exchangeName(exchange), key, err))
	}
	if err := pc.wait(ctx, w); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return retryable(fmt.Errorf("%w from %s within the attempt (timeout %v): %w; the message may still be at the broker",
				ErrNoConfirm, s.redacted, s.timeout, err))
		}
		return retryable(err)
	}
	return nil
}

// channel returns an open channel of the live session (see session).
func (s *Sink) channel(ctx context.Context) (*pubChan, error) {
	ss, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	if r := ss.blocked.Load(); r != nil {
		return nil, fmt.Errorf("%w: the broker blocks publishers (%s): clear its resource alarm (rabbitmqctl status)", ErrNotConnected, *r)
	}
	return ss.pick()
}

// session returns the live session, starting the supervisor on first use
// and waiting for a dial attempt that is under way. Between attempts it
// fails at once with the last connection error.
func (s *Sink) session(ctx context.Context) (*session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if ss := s.sess; ss != nil {
		s.mu.Unlock()
		return ss, nil
	}
	if !s.started {
		s.started = true
		s.dialing = make(chan struct{})
		s.wg.Add(1)
		go s.run()
	}
	wait := s.dialing
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: still connecting to %s: %w", ErrNotConnected, s.redacted, ctx.Err())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.sess != nil:
		return s.sess, nil
	case s.lastErr != nil:
		return nil, fmt.Errorf("%w: %v; reconnecting in the background", ErrNotConnected, s.lastErr)
	}
	return nil, fmt.Errorf("%w: connecting to %s", ErrNotConnected, s.redacted)
}

// run is the supervisor: it dials, serves the session until the
// connection is lost, and dials again after a backoff, until Close.
func (s *Sink) run() {
	defer s.wg.Done()
	fails := 0
	everConnected := false
	for {
		ss, err := s.dial()
		s.mu.Lock()
		close(s.dialing)
		s.dialing = nil
		if s.closed {
			s.mu.Unlock()
			if ss != nil {
				ss.close(time.Duration(s.o.Spec.ConnectTimeout))
			}
			return
		}
		if err != nil {
			s.lastErr = err
		} else {
			s.sess, s.lastErr = ss, nil
		}
		s.mu.Unlock()

		if err != nil {
			fails++
			if fails&(fails-1) == 0 { // 1, 2, 4, 8...: the log stays quiet during a long outage
				s.log.Warn("cannot connect to the broker; retrying", zap.Error(err), zap.Int("attempts", fails))
			}
		} else {
			connectsTotal.Inc()
			if everConnected {
				s.log.Info("reconnected to the broker", zap.Int("attempts", fails))
			} else {
				s.log.Info("connected to the broker", zap.Int("channels", len(ss.slots)))
			}
			everConnected = true
			since := s.o.Now()
			reason, lost := ss.watch(s.done)
			ss.end()
			s.mu.Lock()
			s.sess = nil
			closed := s.closed
			if lost {
				s.lastErr = fmt.Errorf("connection to %s lost: %v", s.redacted, reason)
			}
			s.mu.Unlock()
			if closed || !lost { // Close closes the connection
				return
			}
			connLossTotal.Inc()
			if s.o.Now().Sub(since) >= stableAfter {
				fails = 0
			}
			fails++
			s.log.Warn("connection to the broker lost; reconnecting", zap.Error(reason))
		}
		select {
		case <-time.After(backoff(fails)):
		case <-s.done:
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.dialing = make(chan struct{})
		s.mu.Unlock()
	}
}

// Close closes the connection: in-flight Deliver calls fail (their
// messages may or may not be at the broker). Deliver after Close fails
// with ErrClosed.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	ss := s.sess
	s.mu.Unlock()
	if ss != nil {
		ss.close(time.Duration(s.o.Spec.ConnectTimeout))
	}
	s.wg.Wait()
	return nil
}

// scrub renders a library error without the URL's password.
func (s *Sink) scrub(err error) string {
	msg := withoutURL(err).Error()
	if len(s.password) >= 3 {
		msg = strings.ReplaceAll(msg, s.password, "xxxxx")
	}
	return msg
}
