package admin

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// limitListener caps the admin listener's open connections. One accepted
// past the cap is answered 503 overloaded and closed at once, so a client
// learns why instead of waiting in the kernel's backlog, and it holds
// nothing of the server: the answer is written by one of at most
// maxRejecters short-lived goroutines (each bounded by rejectDeadline), and
// past those the connection is closed unanswered.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	rejecters chan struct{}
}

const (
	maxRejecters   = 16
	rejectDeadline = time.Second
)

var overloadedConns = metrics.NewCounter(`ankusa_admin_connections_refused_total`)

// overloadedAnswer is the whole answer to a connection past the cap.
const overloadedAnswer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Length: 94\r\n\r\n" +
	`{"error":"overloaded","message":"the admin listener holds admin.max_connections connections"}` + "\n"

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: int64(max), rejecters: make(chan struct{}, maxRejecters)}
}

// Accept returns the next connection within the cap, answering those past
// it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		overloadedConns.Inc()
		l.reject(c)
	}
}

// reject answers c 503 and closes it, without blocking Accept.
func (l *limitListener) reject(c net.Conn) {
	select {
	case l.rejecters <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.rejecters }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(rejectDeadline))
		if _, err := c.Write([]byte(overloadedAnswer)); err != nil {
			return
		}
		// Half-close and read what the client sent, so closing does not
		// reset the connection before it reads the answer.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		var buf [512]byte
		for {
			if _, err := c.Read(buf[:]); err != nil {
				return
			}
		}
	}()
}

// countedConn gives its place back when closed (once, however often
// Close is called).
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
