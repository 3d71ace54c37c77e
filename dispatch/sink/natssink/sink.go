package natssink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// streamRecheck is how long a failed stream check answers for itself
// before the next Deliver asks the server again.
const streamRecheck = time.Second

// Sink publishes hooks to a JetStream stream and answers ok only for a
// PubAck from it (see the package doc). It is safe for concurrent use.
type Sink struct {
	o        Options
	st       *settings
	raw      bool
	redacted string   // the URL without its credentials, for messages
	secrets  []string // scrubbed from library errors, just in case
	timeout  time.Duration
	log      *zap.Logger

	// Counters that thin out repeated log lines (1, 2, 4, 8...).
	authFails, connFails, wrongStream atomic.Int64
	// lastDenied is the server's last permissions violation, which names
	// the subject: an attempt that ends without a PubAck says so when
	// its subject is the one named, and the violation is recent.
	lastDenied atomic.Pointer[denied]

	mu      sync.Mutex
	c       *conn
	dialing chan struct{} // closed when the running dial ends; nil between dials
	dialErr error         // why the last dial made no connection
	closed  bool

	streamOK    atomic.Bool
	streamMu    sync.Mutex
	streamErr   error // the last stream check's failure (a *dispatch.Error)
	streamErrAt time.Time
}

// denied is a permissions violation the server reported.
type denied struct {
	msg string
	at  time.Time
}

// deniedFor is how long a permissions violation explains a missing
// PubAck of its subject.
const deniedFor = time.Minute

// conn is the sink's one connection and its JetStream context.
type conn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

var _ dispatch.Sink = (*Sink)(nil)

// New checks o and returns the sink. It does not connect: the first
// Deliver does, so a server that is down at boot does not stop the node.
func New(o Options) (*Sink, error) {
	o.EnsureDefaults()
	st, err := o.settings()
	if err != nil {
		return nil, fmt.Errorf("nats sink %q of source %q: %w", o.Spec.ID, o.Source, err)
	}
	s := &Sink{
		o:        o,
		st:       st,
		raw:      o.Spec.Format == "raw",
		redacted: redactURL(o.Spec.URL),
		timeout:  time.Duration(o.Spec.Timeout),
	}
	// The url holds no credentials (config refuses them there).
	if a := o.Spec.Auth; a != nil {
		s.secrets = append(s.secrets, a.Password.Value, a.Token.Value)
	}
	s.log = o.Logger.With(zap.String("sink", o.Spec.ID), zap.String("source", o.Source),
		zap.String("url", s.redacted), zap.String("stream", o.Spec.Stream),
		zap.String("connection_name", o.ConnectionName))
	return s, nil
}

// Check reports what New would refuse in spec, connecting to nothing; an
// error names the key relative to the sink. check-config calls it
// (config.ValidateOptions.CheckSink).
func Check(spec config.Sink) error {
	o := Options{Spec: spec}
	o.EnsureDefaults()
	return o.Validate()
}

// Durable is true: Deliver answers nil only for a PubAck from the stream.
func (s *Sink) Durable() bool { return true }

// Deliver publishes one hook and waits for its PubAck, for at most
// Spec.Timeout and until ctx is done (the first call's wait includes the
// first connection attempt and the stream check). It returns nil only
// for a PubAck from Spec.Stream (a duplicate's included: the message is
// there). Every error is a *dispatch.Error; the package doc lists which
// are permanent and which say the server answered. An error does not mean
// the message is not in the stream (at-least-once; a retry within the
// duplicate window is dropped by the stream). Deliver does not keep d.
func (s *Sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	d.Status = 0
	m, err := s.build(d)
	if err != nil {
		return permanent(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		notConnectedTotal.Inc()
		return retryable(err, false)
	}
	if !c.nc.IsConnected() {
		notConnectedTotal.Inc()
		return retryable(fmt.Errorf("%w to %s: %s; reconnecting in the background", ErrNotConnected, s.redacted, s.lastError(c)), false)
	}
	if err := s.ensureStream(ctx, c); err != nil {
		return err
	}
	ack, err := c.js.PublishMsg(ctx, m, jetstream.WithRetryAttempts(0))
	if err != nil {
		return s.classify(c, m, err)
	}
	if ack.Stream != s.o.Spec.Stream {
		refusedTotal.Inc()
		err := fmt.Errorf("%w: subject %q is bound to stream %q, not %q (stream): the message is in %s (sequence %d); fix subject or stream",
			ErrRefused, m.Subject, ack.Stream, s.o.Spec.Stream, ack.Stream, ack.Sequence)
		if n := s.wrongStream.Add(1); n&(n-1) == 0 {
			s.log.Error("PubAck from another stream", zap.Error(err), zap.Int64("times", n))
		}
		return retryable(err, true)
	}
	if ack.Duplicate {
		duplicateTotal.Inc()
	}
	ackedTotal.Inc()
	return nil
}

// classify maps a failed publish to the dispatcher's error (the package
// doc's table).
func (s *Sink) classify(c *conn, m *nats.Msg, err error) error {
	size := len(m.Data)
	for k, vs := range m.Header {
		size += len(k) + len(vs[0]) + 4
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		tooLargeTotal.Inc()
		return permanent(fmt.Errorf("%w: %d bytes with its headers, over the server's max_payload of %d bytes (%s): deliver large bodies by reference (claim) or raise max_payload",
			ErrTooLarge, size, c.nc.MaxPayload(), s.redacted))
	case errors.As(err, &apiErr):
		switch {
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
			tooLargeTotal.Inc()
			return permanent(fmt.Errorf("%w: %d bytes with its headers, over stream %s's max_msg_size: %s",
				ErrTooLarge, size, s.o.Spec.Stream, apiErr.Description))
		case strings.Contains(apiErr.Description, "maximum bytes exceeded"),
			strings.Contains(apiErr.Description, "maximum messages"):
			refusedTotal.Inc()
			return retryable(fmt.Errorf("%w: stream %s is full (%s; its discard policy is new): consume it or raise its limits",
				ErrRefused, s.o.Spec.Stream, apiErr.Description), true)
		}
		refusedTotal.Inc()
		return retryable(fmt.Errorf("%w: publish to %q (stream %s): %s", ErrRefused, m.Subject, s.o.Spec.Stream, s.scrub(apiErr)), true)
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		noRespondersTotal.Inc()
		return retryable(fmt.Errorf("%w: no stream at %s holds subject %q (no responders): is %q among stream %s's subjects, and is the stream there?",
			ErrNoStream, s.redacted, m.Subject, m.Subject, s.o.Spec.Stream), true)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, nats.ErrTimeout):
		noAckTotal.Inc()
		if d := s.lastDenied.Load(); d != nil && s.o.Now().Sub(d.at) < deniedFor && strings.Contains(d.msg, `"`+m.Subject+`"`) {
			return retryable(fmt.Errorf("%w within %v from %s: the server refuses the credentials' permission to publish (%s): fix the user's permissions",
				ErrNoAck, s.timeout, s.redacted, d.msg), false)
		}
		return retryable(fmt.Errorf("%w within %v from %s (%v); the message may still be in the stream",
			ErrNoAck, s.timeout, s.redacted, err), false)
	case errors.Is(err, nats.ErrBadSubject):
		return permanent(fmt.Errorf("subject %q: %v", m.Subject, err))
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionDraining):
		notConnectedTotal.Inc()
		return retryable(fmt.Errorf("%w to %s: %s; the message was not sent", ErrNotConnected, s.redacted, s.scrub(err)), false)
	}
	return retryable(fmt.Errorf("publish to %q at %s: %s", m.Subject, s.redacted, s.scrub(err)), false)
}

// conn returns the connection, dialling it on first use (and again after
// Close of the connection by the client, which MaxReconnects(-1) should
// never do). A dial returns after one attempt at each server: while they
// are down, the client keeps reconnecting in the background and the
// connection is there, not connected.
func (s *Sink) conn(ctx context.Context) (*conn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if c := s.c; c != nil && !c.nc.IsClosed() {
			s.mu.Unlock()
			return c, nil
		}
		if s.dialing == nil {
			s.dialing = make(chan struct{})
			go s.dial(s.dialing)
		}
		wait := s.dialing
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: still connecting to %s: %w", ErrNotConnected, s.redacted, ctx.Err())
		}
		s.mu.Lock()
		c, err := s.c, s.dialErr
		s.mu.Unlock()
		if c == nil {
			if err == nil {
				err = ErrClosed
			}
			return nil, fmt.Errorf("%w: %s", ErrNotConnected, s.scrub(err))
		}
		if !c.nc.IsClosed() {
			return c, nil
		}
	}
}

// dial makes the connection and closes done.
func (s *Sink) dial(done chan struct{}) {
	c, err := s.connect()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	s.dialing = nil
	if s.closed {
		if c != nil {
			c.nc.Close()
		}
		return
	}
	if old := s.c; old != nil {
		old.nc.Close()
	}
	s.c, s.dialErr = c, err
	if err != nil {
		s.log.Error("cannot make the NATS connection", zap.String("error", s.scrub(err)))
	}
}

// connect creates the connection with its options: reconnecting forever,
// failing publishes at once while disconnected (no reconnect buffer: what
// Deliver could not send is retried by the dispatcher, not sent later
// behind its back), credentials and TLS from the spec.
func (s *Sink) connect() (*conn, error) {
	spec := s.o.Spec
	opts := []nats.Option{
		nats.Name(s.o.ConnectionName),
		nats.Timeout(time.Duration(spec.ConnectTimeout)),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(s.o.ReconnectWait),
		nats.IgnoreAuthErrorAbort(),
		nats.ReconnectBufSize(-1),
		nats.PingInterval(10 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.ConnectHandler(func(*nats.Conn) {
			connectsTotal.Inc()
			s.log.Info("connected to NATS")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			connectsTotal.Inc()
			s.connFails.Store(0)
			s.authFails.Store(0)
			s.log.Info("reconnected to NATS", zap.String("server", redactURL(nc.ConnectedUrlRedacted())))
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			disconnectsTotal.Inc()
			if err != nil {
				s.log.Warn("disconnected from NATS; reconnecting", zap.String("error", s.scrub(err)))
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { s.connError(err) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { s.connError(err) }),
		nats.ClosedHandler(func(*nats.Conn) { s.log.Debug("NATS connection closed") }),
	}
	if a := spec.Auth; a != nil {
		switch {
		case a.Username != "":
			opts = append(opts, nats.UserInfo(a.Username, a.Password.Value))
		case a.Token.IsSet():
			opts = append(opts, nats.Token(a.Token.Value))
		case a.CredsFile != "":
			opts = append(opts, nats.UserCredentials(a.CredsFile))
		}
	}
	if s.st.tls != nil {
		opts = append(opts, nats.Secure(s.st.tls.Clone()))
	}
	nc, err := nats.Connect(spec.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.redacted, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream context on %s: %w", s.redacted, err)
	}
	return &conn{nc: nc, js: js}, nil
}

// connError logs a failed connection attempt or an asynchronous error of
// the connection, fewer as they repeat (the 1st, 2nd, 4th, 8th...). An
// authorization failure is an error: only the operator can fix it.
func (s *Sink) connError(err error) {
	if err == nil {
		return
	}
	if isAuthError(err) {
		if strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			s.lastDenied.Store(&denied{msg: s.scrub(err), at: s.o.Now()})
		}
		authErrorsTotal.Inc()
		if n := s.authFails.Add(1); n&(n-1) == 0 {
			s.log.Error("NATS refuses the sink's credentials; fix auth (or the url's user info); retrying",
				zap.String("error", s.scrub(err)), zap.Int64("times", n))
		}
		return
	}
	if n := s.connFails.Add(1); n&(n-1) == 0 {
		s.log.Warn("NATS connection error", zap.String("error", s.scrub(err)), zap.Int64("times", n))
	}
}

// isAuthError reports whether err is the server refusing the credentials
// or their permissions.
func isAuthError(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) ||
		errors.Is(err, nats.ErrPermissionViolation) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "authorization violation") || strings.Contains(msg, "authentication") ||
		strings.Contains(msg, "permissions violation")
}

// lastError is why the connection is down, for a Deliver that fails on it.
func (s *Sink) lastError(c *conn) string {
	err := c.nc.LastError()
	switch {
	case err == nil:
		return "no server answers (status " + c.nc.Status().String() + ")"
	case isAuthError(err):
		return s.scrub(err) + " (the server refuses the credentials: fix auth)"
	}
	return s.scrub(err)
}

// ensureStream checks once that the stream is there, creating it when
// create_stream asks and it is missing (never updating an existing one:
// it is the operator's). A failed check answers for itself for
// streamRecheck, so a missing stream does not cost a request per hook.
func (s *Sink) ensureStream(ctx context.Context, c *conn) error {
	if s.streamOK.Load() {
		return nil
	}
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if s.streamOK.Load() {
		return nil
	}
	if s.streamErr != nil && s.o.Now().Sub(s.streamErrAt) < streamRecheck {
		return s.streamErr
	}
	err := s.checkStream(ctx, c)
	if err != nil {
		s.streamErr, s.streamErrAt = err, s.o.Now()
		return err
	}
	s.streamErr = nil
	s.streamOK.Store(true)
	return nil
}

func (s *Sink) checkStream(ctx context.Context, c *conn) error {
	name := s.o.Spec.Stream
	_, err := c.js.Stream(ctx, name)
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	answered := errors.As(err, &apiErr)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		if errors.Is(err, context.DeadlineExceeded) {
			return retryable(fmt.Errorf("%w: no answer within %v to the stream check of %s at %s", ErrNoAck, s.timeout, name, s.redacted), false)
		}
		return retryable(fmt.Errorf("cannot check stream %s at %s: %s", name, s.redacted, s.scrub(err)), answered)
	}
	cs := s.o.Spec.CreateStream
	if cs == nil {
		s.log.Error("the stream does not exist; create it, or set create_stream")
		return retryable(fmt.Errorf("%w: stream %s does not exist at %s: create it (or set create_stream)", ErrNoStream, name, s.redacted), true)
	}
	cfg := jetstream.StreamConfig{
		Name:       name,
		Subjects:   s.st.subjects,
		Storage:    jetstream.FileStorage,
		Replicas:   cs.Replicas,
		MaxBytes:   int64(cs.MaxBytes),
		MaxAge:     time.Duration(cs.MaxAge),
		Duplicates: time.Duration(cs.DuplicateWindow),
	}
	if cs.Storage == "memory" {
		cfg.Storage = jetstream.MemoryStorage
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if _, err := c.js.CreateStream(ctx, cfg); err != nil {
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // made by someone else meanwhile
			return nil
		}
		s.log.Error("cannot create the stream (create_stream)", zap.String("error", s.scrub(err)))
		return retryable(fmt.Errorf("%w: stream %s does not exist at %s and create_stream cannot make it: %s",
			ErrNoStream, name, s.redacted, s.scrub(err)), errors.As(err, &apiErr))
	}
	streamsMadeTotal.Inc()
	s.log.Info("created the stream (create_stream)", zap.Strings("subjects", cfg.Subjects),
		zap.String("storage", cs.Storage), zap.Int("replicas", cs.Replicas))
	return nil
}

// Close closes the connection: in-flight Deliver calls fail (their
// messages may or may not be in the stream). Deliver after Close fails
// with ErrClosed.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	c := s.c
	s.c = nil
	wait := s.dialing
	s.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
	if wait != nil { // dial closes what it made once it sees closed
		<-wait
	}
	return nil
}

// scrub renders a library error without the credentials.
func (s *Sink) scrub(err error) string {
	msg := err.Error()
	for _, sec := range s.secrets {
		if len(sec) >= 3 {
			msg = strings.ReplaceAll(msg, sec, "xxxxx")
		}
	}
	return msg
}
