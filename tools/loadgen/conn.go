package main

import (
	"bufio"
	"crypto/tls"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// connBufSize is the size of a connection's read buffer.
const connBufSize = 16 << 10

// httpConn is one worker's keep-alive connection. The worker writes each
// request (a fasthttp.RequestHeader and the body) in one writev and reads
// the answer with fasthttp's Response.Read on buffers it owns: no connection pool, no lock, no
// per-request timer. A shared fasthttp.Client cost about 30% more client
// CPU per request here, which on a machine whose cores the server shares
// comes out of the server's throughput.
//
// Every request goes to the address of the URL template's first expansion
// (a {tenant} in the host name varies the Host header only). A transport
// error closes the connection; the next request dials again. Nothing is
// ever resent.
type httpConn struct {
	addr    string
	tlsName string // server name for https, "" for http
	timeout time.Duration
	spin    time.Duration // -spin: busy-poll this long for the answer before parking

	c         net.Conn
	raw       syscall.Conn // the TCP connection under c (c itself for http)
	br        *bufio.Reader
	idleSince time.Time   // when the last answer was read; zero on a new connection
	iov       [2][]byte   // header block, body
	bufs      net.Buffers // over iov: one writev per request
	deadline  time.Time
}

func newHTTPConn(t *urlTemplate, timeout, spin time.Duration) *httpConn {
	hc := &httpConn{addr: t.probeAddr, timeout: timeout, spin: spin}
	if t.tls {
		hc.tlsName, _, _ = net.SplitHostPort(t.probeAddr)
	}
	return hc
}

// do sends the request (header h, body) and reads its answer into resp. now is a recent clock
// reading. Each request gets at least the timeout: the connection's
// deadline is moved only when less than that remains, by the timeout and
// an eighth, so a request never waits more than 9/8 of it.
func (hc *httpConn) do(h *fasthttp.RequestHeader, body []byte, resp *fasthttp.Response, now time.Time) error {
	if hc.c == nil {
		if err := hc.dial(); err != nil {
			return err
		}
	}
	if hc.deadline.Sub(now) < hc.timeout {
		hc.deadline = now.Add(hc.timeout + hc.timeout/8)
		if err := hc.c.SetDeadline(hc.deadline); err != nil {
			hc.close()
			return err
		}
	}
	if !hc.idleSince.IsZero() && now.Sub(hc.idleSince) > staleAfter && !hc.alive() {
		// The server closed the idle connection (its keep-alive timeout);
		// sending on it would lose the request. Nothing was sent yet.
		hc.close()
		if err := hc.dial(); err != nil {
			return err
		}
	}
	hc.iov[0], hc.iov[1] = h.Header(), body
	hc.bufs = hc.iov[:]
	_, err := hc.bufs.WriteTo(hc.c)
	if err != nil {
		// A server may answer before reading the whole body (a 413 by
		// Content-Length) and close: the write fails, the answer is there.
		if rerr := resp.Read(hc.br); rerr == nil {
			hc.close()
			return nil
		}
		hc.close()
		return err
	}
	if hc.spin > 0 {
		spinUntilReadable(hc.raw, now.Add(hc.spin))
	}
	err = resp.Read(hc.br)
	if err != nil || resp.ConnectionClose() {
		hc.close()
		return err
	}
	hc.idleSince = time.Now()
	return nil
}

// staleAfter is how long a connection may sit idle before its next
// request checks that the server has not closed it (one non-blocking
// peek, a system call).
const staleAfter = 10 * time.Millisecond

// alive reports whether the idle connection is still usable: nothing is
// waiting in it (no EOF, no reset, no unsolicited answer such as a 408
// before a close).
func (hc *httpConn) alive() bool {
	if hc.br.Buffered() > 0 {
		return false
	}
	return peekIdle(hc.raw)
}

func (hc *httpConn) dial() error {
	c, err := net.DialTimeout("tcp", hc.addr, hc.timeout)
	if err != nil {
		return err
	}
	hc.raw = c.(*net.TCPConn)
	if hc.tlsName != "" {
		c = tls.Client(c, &tls.Config{ServerName: hc.tlsName})
	}
	hc.c = c
	if hc.br == nil {
		hc.br = bufio.NewReaderSize(c, connBufSize)
	} else {
		hc.br.Reset(c)
	}
	hc.deadline, hc.idleSince = time.Time{}, time.Time{}
	return nil
}

// close drops the connection; the next request dials a new one.
func (hc *httpConn) close() {
	if hc.c != nil {
		_ = hc.c.Close()
		hc.c = nil
	}
}
