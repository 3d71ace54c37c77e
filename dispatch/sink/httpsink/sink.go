package httpsink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// Client settings that are not config keys.
const (
	userAgent = "ankusa"
	// readBufferSize is the connection's read buffer, which bounds an
	// answer's header.
	readBufferSize = 8 << 10
	// callAttempts is fasthttp's attempts per Do: one more when the
	// receiver closed a kept-alive connection (retryStaleConn).
	callAttempts = 2
)

// Sink delivers hooks over HTTP. It is safe for concurrent use.
type Sink struct {
	opts           Options
	url            *urlTemplate
	headers        []headerTemplate
	signer         *signer
	envelopeFormat bool
	client         *fasthttp.Client
	// dialContext connects to a checked address; tests redirect it.
	dialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	closed atomic.Bool
	conns  conns
}

var (
	_ dispatch.Sink     = (*Sink)(nil)
	_ dispatch.Targeter = (*Sink)(nil)
)

// New returns a sink for o. It parses the url, header and secret
// templates; an error names the key ("url: ...", "headers.X-Foo: ...",
// "secret: ...") relative to the sink, and never holds the secret.
func New(o Options) (*Sink, error) {
	o.EnsureDefaults()
	s := &Sink{opts: o, envelopeFormat: o.Spec.Format == FormatEnvelope}
	if err := s.parse(); err != nil {
		return nil, err
	}
	s.dialContext = (&net.Dialer{}).DialContext
	s.conns.set = make(map[*trackedConn]struct{})
	s.client = s.newClient()
	if o.Spec.AllowPrivate {
		// The logger names the source and the sink (cli gives it them).
		o.Logger.Info("http sink: the SSRF guard is off (allow_private: true)")
	}
	return s, nil
}

// Check reports what New would refuse in spec, building nothing: the
// config's sink rules, the url, the header templates and the secret. An
// error names the key relative to the sink. check-config calls it
// (config.ValidateOptions.CheckSink), so that a config serve would refuse
// once it builds the sink is refused at load.
func Check(spec config.Sink) error {
	o := Options{Spec: spec}
	o.EnsureDefaults()
	return (&Sink{opts: o}).parse()
}

// parse checks s.opts and parses its templates into s.
func (s *Sink) parse() error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	var err error
	if s.url, err = parseURL(s.opts.Spec.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if s.headers, err = parseHeaders(s.opts.Spec.Headers); err != nil {
		return err
	}
	if s.signer, err = newSigner(s.opts.Spec.Secret.Value); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	return nil
}

func (s *Sink) newClient() *fasthttp.Client {
	sp := &s.opts.Spec
	return &fasthttp.Client{
		Name:                      userAgent,
		DialTimeout:               s.dial,
		TLSConfig:                 &tls.Config{MinVersion: tls.VersionTLS12},
		MaxConnsPerHost:           sp.Concurrency,
		MaxConnWaitTimeout:        time.Duration(sp.Timeout),
		MaxIdemponentCallAttempts: callAttempts,
		RetryIfErr:                retryStaleConn,
		ReadBufferSize:            readBufferSize,
		DisablePathNormalizing:    true,
		StreamResponseBody:        true,
	}
}

// Deliver makes one attempt: it POSTs the hook to the expanded url and
// maps the answer (package doc). d.Status is set to the receiver's
// status when there was an answer, else 0. It returns when the answer is
// read, the attempt's timeout (the sink's timeout or ctx's deadline,
// whichever is earlier) passes, or ctx is done.
func (s *Sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	d.Status = 0
	if s.closed.Load() {
		return &dispatch.Error{Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return &dispatch.Error{Err: fmt.Errorf("cannot deliver: %w", err)}
	}
	a := acquireAttempt()
	if err := s.buildRequest(a, d); err != nil {
		releaseAttempt(a)
		return err
	}
	start := time.Now()
	a.deadline = start.Add(time.Duration(s.opts.Spec.Timeout))
	dl, byCtx := ctx.Deadline()
	if byCtx = byCtx && dl.Before(a.deadline); byCtx {
		a.deadline = dl
	}
	budget := a.deadline.Sub(start)
	if !s.run(ctx.Done(), a) {
		return cancelled(ctx, budget)
	}
	var err error
	if a.err != nil {
		err = s.transportError(a, budget, byCtx)
	} else {
		d.Status = a.status
		err = answerError(a)
	}
	releaseAttempt(a)
	return err
}

func cancelled(ctx context.Context, budget time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &dispatch.Error{Err: fmt.Errorf("timeout after %v (the dispatcher's deadline)", budget.Round(time.Millisecond))}
	}
	return &dispatch.Error{Err: fmt.Errorf("the attempt was cancelled: %w", context.Cause(ctx))}
}

// Durable is false: a 2xx from a receiver is not a durability promise
// Ankusa can check.
func (s *Sink) Durable() bool { return false }

// Target is the receiver of e's hook, scheme://host:port, for the
// dispatcher's per-receiver circuit breaker.
func (s *Sink) Target(e *envelope.Envelope) string {
	if s.url.static != nil {
		return s.url.target
	}
	var buf, out [256]byte
	url := tmpl.AppendTo(buf[:0], s.url.t, e)
	return string(s.url.appendTarget(out[:0], url))
}

// Close closes the sink's connections, in use or idle; attempts in
// flight fail with a retryable error, and Deliver refuses new ones.
func (s *Sink) Close() error {
	s.closed.Store(true)
	s.closeConns()
	s.client.CloseIdleConnections()
	return nil
}
