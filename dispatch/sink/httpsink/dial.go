package httpsink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/dispatch"
)

// dial is the fasthttp client's DialTimeout: it resolves the receiver's
// host with Options.LookupIP, has the SSRF guard check every address
// (unless allow_private), and connects to a checked address itself, so
// the connection goes where the guard looked. fasthttp returns dial
// errors to Do as they are; ours are *dispatch.Error, which the outcome
// mapping passes on.
//
// timeout is what is left of the attempt (0 when fasthttp dials for a
// waiting request); connecting takes at most the smaller of it and
// connect_timeout.
func (s *Sink) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if s.closed.Load() {
		return nil, &dispatch.Error{Err: ErrClosed}
	}
	limit, what := time.Duration(s.opts.Spec.ConnectTimeout), "connect_timeout"
	if timeout > 0 && timeout < limit {
		limit, what = timeout, "the attempt's timeout"
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &dispatch.Error{Permanent: true, Err: fmt.Errorf("cannot split %q into host and port: %w", addr, err)}
	}
	ips, err := s.resolve(ctx, host, limit, what)
	if err != nil {
		return nil, err
	}
	conn, err := s.connect(ctx, addr, ips, port, limit, what)
	if err != nil {
		return nil, err
	}
	return s.track(conn)
}

// resolve returns the addresses to connect to for host, all of them
// checked by the SSRF guard unless the sink allows private targets.
func (s *Sink) resolve(ctx context.Context, host string, limit time.Duration, what string) ([]net.IP, error) {
	guard := !s.opts.Spec.AllowPrivate
	if ip := net.ParseIP(host); ip != nil {
		ips := []net.IP{ip}
		if guard {
			return ips, checkIPs(host, ips, true)
		}
		return ips, nil
	}
	if guard {
		if reason := blockedName(host); reason != "" {
			return nil, refuseName(host, reason)
		}
	}
	ips, err := s.opts.LookupIP(ctx, host)
	switch {
	case ctx.Err() != nil:
		return nil, &dispatch.Error{Err: fmt.Errorf("cannot resolve host %q within %v (%s)", host, limit, what)}
	case err != nil:
		return nil, &dispatch.Error{Err: fmt.Errorf("cannot resolve host %q: %w", host, err)}
	case len(ips) == 0:
		return nil, &dispatch.Error{Err: fmt.Errorf("cannot resolve host %q: no addresses", host)}
	}
	if guard {
		return ips, checkIPs(host, ips, false)
	}
	return ips, nil
}

// connect connects to the first of ips that answers.
func (s *Sink) connect(ctx context.Context, addr string, ips []net.IP, port string, limit time.Duration, what string) (net.Conn, error) {
	var err error
	for _, ip := range ips {
		var conn net.Conn
		conn, err = s.dialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	var ne net.Error
	switch {
	case ctx.Err() != nil || errors.As(err, &ne) && ne.Timeout():
		err = fmt.Errorf("cannot connect to %s within %v (%s)", addr, limit, what)
	case errors.Is(err, syscall.ECONNREFUSED):
		err = fmt.Errorf("connection refused by %s", addr)
	default:
		err = fmt.Errorf("cannot connect to %s: %w", addr, err)
	}
	return nil, &dispatch.Error{Err: err}
}

// conns tracks the sink's open connections, so Close can end the ones
// in use, which fasthttp's client cannot.
type conns struct {
	mu  sync.Mutex
	set map[*trackedConn]struct{}
}

type trackedConn struct {
	net.Conn
	s      *Sink
	closed atomic.Bool
}

func (c *trackedConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.s.conns.mu.Lock()
	delete(c.s.conns.set, c)
	c.s.conns.mu.Unlock()
	return c.Conn.Close()
}

func (s *Sink) track(conn net.Conn) (net.Conn, error) {
	c := &trackedConn{Conn: conn, s: s}
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	if s.closed.Load() {
		conn.Close()
		return nil, &dispatch.Error{Err: ErrClosed}
	}
	s.conns.set[c] = struct{}{}
	return c, nil
}

// closeConns closes every connection of the sink, idle or in use.
func (s *Sink) closeConns() {
	s.conns.mu.Lock()
	all := make([]*trackedConn, 0, len(s.conns.set))
	for c := range s.conns.set {
		all = append(all, c)
	}
	s.conns.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}
