package edge

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// connSlack is how far fasthttp's own connection limit (Server.Concurrency)
// sits above limits.max_connections: the listener refuses first, with the
// edge's JSON answer; fasthttp's text/plain refusal stays a backstop.
const connSlack = 64

// maxRejecting bounds the goroutines writing refusals at once; past it a
// connection over the limit is closed without an answer.
const maxRejecting = 256

// ProxyHeaderTimeout bounds how long a trusted peer may take to send its
// PROXY header: a slow sender holds a connection slot no longer.
const ProxyHeaderTimeout = 5 * time.Second

var overloadedResponse = func() []byte {
	a := answers[vOverloaded]
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(a.body)) + "\r\n\r\n" + string(a.body))
}()

// ListenOptions configure the public listener.
type ListenOptions struct {
	// MaxConns bounds open connections (limits.max_connections).
	MaxConns int
	// MaxPerClient bounds the connections of one client address, the
	// PROXY header's sender when there is one (0: MaxConns).
	MaxPerClient int
	// Trusted are the peers that must open with a PROXY header
	// (listen_proxy_protocol.trusted); nil turns the protocol off.
	Trusted []netip.Prefix
	// HeaderTimeout bounds reading a PROXY header (0: ProxyHeaderTimeout).
	HeaderTimeout time.Duration
	// ReadTimeout is limits.read_timeout: what a connection's first
	// request has once its PROXY header is read.
	ReadTimeout time.Duration
	Logger      *zap.Logger
}

// ListenOptionsFrom is the public listener's options from c.
func ListenOptionsFrom(c *config.Config, logger *zap.Logger) ListenOptions {
	return ListenOptions{
		MaxConns:     c.Limits.MaxConnections,
		MaxPerClient: c.Limits.MaxConnectionsPerClient,
		Trusted:      c.ListenProxyProtocol.Prefixes(),
		ReadTimeout:  c.Limits.ReadTimeout.D(),
		Logger:       logger,
	}
}

// limitListener holds the number of open connections at max, and those
// of one client address at perClient. A connection past either is
// answered 503 overloaded (JSON, Retry-After) and closed before fasthttp
// sees it.
type limitListener struct {
	net.Listener
	o         ListenOptions
	max       int64
	open      atomic.Int64
	rejecting atomic.Int64
	clients   clientCounts
	logThr    throttle // PROXY refusals
	capThr    throttle // refusals past a connection bound
}

// LimitListener wraps ln so that at most maxConns connections are open.
func LimitListener(ln net.Listener, maxConns int) net.Listener {
	return NewListener(ln, ListenOptions{MaxConns: maxConns})
}

// NewListener wraps ln with the connection bounds and PROXY protocol of o.
func NewListener(ln net.Listener, o ListenOptions) net.Listener {
	if o.MaxPerClient <= 0 {
		o.MaxPerClient = o.MaxConns
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = ProxyHeaderTimeout
	}
	l := &limitListener{Listener: ln, o: o, max: int64(o.MaxConns)}
	l.clients.max = int32(o.MaxPerClient)
	l.clients.n = make(map[netip.Addr]int32)
	return l
}

// Listen opens the public listener, holding it to maxConns connections.
func Listen(addr string, maxConns int) (net.Listener, error) {
	return ListenWith(addr, ListenOptions{MaxConns: maxConns})
}

// ListenWith opens the public listener with the bounds and PROXY
// protocol of o.
func ListenWith(addr string, o ListenOptions) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (config key listen): %w", addr, err)
	}
	return NewListener(ln, o), nil
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit takes a slot for c, or refuses it (nil). A trusted peer's client
// is known only from its PROXY header: its share is taken on first read.
func (l *limitListener) admit(c net.Conn) *limitedConn {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		l.refuse(c, refusedGlobal, addrPortOf(c.RemoteAddr()))
		return nil
	}
	openConns.Add(1)
	lc := &limitedConn{Conn: c, l: l, peer: addrPortOf(c.RemoteAddr())}
	if l.o.Trusted != nil {
		lc.state = stateWatch
		if l.trusted(lc.peer.Addr()) {
			lc.state = stateProxy
			return lc
		}
	}
	if !l.clients.acquire(lc.peer.Addr()) {
		l.open.Add(-1)
		openConns.Add(-1)
		l.refuse(c, refusedPerClient, lc.peer)
		return nil
	}
	lc.setClient(lc.peer, c.RemoteAddr())
	return lc
}

func (l *limitListener) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range l.o.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refuse answers c 503 overloaded and closes it, off the accept loop.
func (l *limitListener) refuse(c net.Conn, reason int, client netip.AddrPort) {
	l.refused(reason, client)
	if l.rejecting.Add(1) > maxRejecting {
		l.rejecting.Add(-1)
		c.Close()
		return
	}
	go l.reject(c)
}

func (l *limitListener) reject(c net.Conn) {
	defer l.rejecting.Add(-1)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(overloadedResponse)
	c.Close()
}

// refused counts and logs a connection refused past a bound.
func (l *limitListener) refused(reason int, client netip.AddrPort) {
	statusCounters[503].Inc()
	connRejections.Inc()
	connRefused[reason].Inc()
	if l.capThr.allow() {
		l.o.Logger.Warn("connection refused: 503 overloaded", zap.String("limit", refusedLimits[reason]),
			zap.Stringer("client", client))
	}
}

// refuseProxy counts and logs a connection refused for its PROXY header.
func (l *limitListener) refuseProxy(c *limitedConn, reason int, err error) error {
	proxyRefused[reason].Inc()
	if l.logThr.allow() {
		l.o.Logger.Warn("connection refused: PROXY protocol", zap.String("reason", proxyReasons[reason]),
			zap.Stringer("peer", c.peer), zap.Error(err))
	}
	// Closed here: fasthttp would answer a read error with a 400 of its own.
	_ = c.Conn.Close()
	return fmt.Errorf("PROXY protocol from %s: %s: %w", c.peer, proxyReasons[reason], err)
}

// clientCounts counts open connections per client address.
type clientCounts struct {
	mu  sync.Mutex
	max int32
	n   map[netip.Addr]int32
}

func (cc *clientCounts) acquire(a netip.Addr) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n[a] >= cc.max {
		return false
	}
	cc.n[a]++
	return true
}

func (cc *clientCounts) release(a netip.Addr) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.n[a] <= 1 {
		delete(cc.n, a)
		return
	}
	cc.n[a]--
}

// States of a limitedConn before its first bytes reach fasthttp.
const (
	stateReady = iota // bytes go straight through
	stateProxy        // a trusted peer: a PROXY header comes first
	stateWatch        // an untrusted peer: a PROXY header is refused
)

// limitedConn is one admitted connection. Only fasthttp's serving
// goroutine reads it, so state needs no lock.
type limitedConn struct {
	net.Conn
	l      *limitListener
	peer   netip.AddrPort
	state  int
	client netip.Addr // holds a share of clientCounts when valid
	// addr is the client's address, the PROXY header's sender when there
	// is one, as the envelope records it; remote is it as a net.Addr.
	addr   string
	remote net.Addr
	closed atomic.Bool
}

var errClientShare = errors.New("the client holds limits.max_connections_per_client connections")

func (c *limitedConn) setClient(src netip.AddrPort, remote net.Addr) {
	c.client, c.addr = src.Addr(), src.String()
	c.remote = remote
	if remote == nil {
		c.remote = net.TCPAddrFromAddrPort(src)
	}
}

// ClientAddr is the client's address, "ip:port", the sender a PROXY
// header named or else the peer.
func (c *limitedConn) ClientAddr() string { return c.addr }

// RemoteAddr is the client's address (see ClientAddr).
func (c *limitedConn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.Conn.RemoteAddr()
}

func (c *limitedConn) Read(p []byte) (int, error) {
	switch c.state {
	case stateProxy:
		return c.readProxy(p)
	case stateWatch:
		return c.readWatch(p)
	}
	return c.Conn.Read(p)
}

// readProxy reads the PROXY header a trusted peer must open with, within
// the header timeout, takes the client's share, and returns the bytes
// that followed the header.
func (c *limitedConn) readProxy(p []byte) (int, error) {
	start := time.Now()
	_ = c.Conn.SetReadDeadline(start.Add(c.l.o.HeaderTimeout))
	n, h, err := c.readHeader(p)
	if err != nil {
		reason := proxyMalformed
		if errors.Is(err, errProxyIncomplete) || isTimeout(err) {
			reason = proxyIncomplete
		}
		return 0, c.l.refuseProxy(c, reason, err)
	}
	src := h.src
	if !src.IsValid() {
		src = c.peer
	}
	if !c.l.clients.acquire(src.Addr().Unmap()) {
		c.l.refusedShare(c, src)
		return 0, errClientShare
	}
	c.setClient(netip.AddrPortFrom(src.Addr().Unmap(), src.Port()), nil)
	c.state = stateReady
	if d := c.l.o.ReadTimeout; d > 0 {
		_ = c.Conn.SetReadDeadline(start.Add(d))
	} else {
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	n = copy(p, p[h.n:n])
	if n == 0 {
		return c.Conn.Read(p)
	}
	return n, nil
}

// readHeader reads into p until it holds a whole PROXY header.
func (c *limitedConn) readHeader(p []byte) (int, proxyHeader, error) {
	n := 0
	for {
		h, err := parseProxy(p[:n])
		if !errors.Is(err, errProxyIncomplete) {
			return n, h, err
		}
		if n == len(p) {
			return n, h, errProxyMalformed
		}
		m, rerr := c.Conn.Read(p[n:])
		n += m
		if rerr != nil && m == 0 {
			if rerr == io.EOF {
				return n, h, errProxyIncomplete
			}
			return n, h, rerr
		}
	}
}

// readWatch reads an untrusted peer's first bytes, far enough to tell
// whether they open a PROXY header, which is refused: only a trusted
// balancer may name another sender.
func (c *limitedConn) readWatch(p []byte) (int, error) {
	n := 0
	for {
		looks, decided := proxyPrefix(p[:n])
		if looks {
			return 0, c.l.refuseProxy(c, proxyUntrusted, errors.New("PROXY header from an untrusted peer"))
		}
		if decided || n == len(p) {
			c.state = stateReady
			return n, nil
		}
		m, err := c.Conn.Read(p[n:])
		n += m
		if err != nil {
			if n > 0 {
				c.state = stateReady
				return n, nil
			}
			return 0, err
		}
	}
}

// refusedShare answers a proxied connection whose client holds its whole
// share: the same 503 as the listener's refusals, written here since the
// connection is already fasthttp's.
func (l *limitListener) refusedShare(c *limitedConn, client netip.AddrPort) {
	l.refused(refusedPerClient, client)
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Conn.Write(overloadedResponse)
	// Closed here: fasthttp would answer a read error with a 400 of its own.
	_ = c.Conn.Close()
}

func (c *limitedConn) Close() error {
	if !c.closed.Swap(true) {
		c.l.open.Add(-1)
		openConns.Add(-1)
		if c.client.IsValid() {
			c.l.clients.release(c.client)
		}
	}
	return c.Conn.Close()
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}
