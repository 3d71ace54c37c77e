package edge

import (
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// connSlack is how far fasthttp's own connection limit (Server.Concurrency)
// sits above limits.max_connections: the listener refuses first, with the
// edge's JSON answer; fasthttp's text/plain refusal stays a backstop.
const connSlack = 64

// maxRejecting bounds the goroutines writing refusals at once; past it a
// connection over the limit is closed without an answer.
const maxRejecting = 256

var overloadedResponse = func() []byte {
	a := answers[vOverloaded]
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(a.body)) + "\r\n\r\n" + string(a.body))
}()

// limitListener holds the number of open connections at max. A connection
// past it is answered 503 overloaded (JSON, Retry-After) and closed before
// fasthttp sees it.
type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	rejecting atomic.Int64
}

// LimitListener wraps ln so that at most maxConns connections are open.
func LimitListener(ln net.Listener, maxConns int) net.Listener {
	return &limitListener{Listener: ln, max: int64(maxConns)}
}

// Listen opens the public listener, holding it to maxConns connections.
func Listen(addr string, maxConns int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (config key listen): %w", addr, err)
	}
	return LimitListener(ln, maxConns), nil
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		statusCounters[503].Inc()
		connRejections.Inc()
		if l.rejecting.Add(1) > maxRejecting {
			l.rejecting.Add(-1)
			c.Close()
			continue
		}
		go l.reject(c)
	}
}

func (l *limitListener) reject(c net.Conn) {
	defer l.rejecting.Add(-1)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(overloadedResponse)
	c.Close()
}

type limitedConn struct {
	net.Conn
	l      *limitListener
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if !c.closed.Swap(true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}
