package edge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// serveEcho serves, behind a listener of o, a handler that answers each
// request with the client address the listener recorded.
func serveEcho(t *testing.T, o ListenOptions) string {
	t.Helper()
	ln, err := ListenWith("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.WriteString(clientAddr(ctx)) }}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

const getReq = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

type echoConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialEcho(t *testing.T, addr, first string) *echoConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, first); err != nil {
		t.Fatal(err)
	}
	return &echoConn{c: c, br: bufio.NewReader(c)}
}

// answer reads one response: status and body, or status 0 when the
// connection closed without one.
func (e *echoConn) answer(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(e.br, nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func loopback() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }

// TestListenerProxy: a trusted peer's PROXY header (v1 or v2) names the
// client; LOCAL names none, leaving the peer; a trusted peer without a
// header, or too slow with it, is closed unanswered and counted.
func TestListenerProxy(t *testing.T) {
	addr := serveEcho(t, ListenOptions{MaxConns: 10, Trusted: loopback(), HeaderTimeout: 300 * time.Millisecond})
	for _, tc := range []struct{ name, hdr, want string }{
		{"v1", "PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\n", "203.0.113.7:51234"},
		{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 7 443\r\n", "[2001:db8::1]:7"},
		{"v2", string(proxyV2(0x21, 0x11, v2TCP4("198.51.100.9", 40000), nil)), "198.51.100.9:40000"},
	} {
		c := dialEcho(t, addr, tc.hdr+getReq)
		if st, body := c.answer(t); st != 200 || body != tc.want {
			t.Errorf("%s: %d %q, want 200 %q", tc.name, st, body, tc.want)
		}
		// The header comes once: the next request is plain HTTP.
		_, _ = io.WriteString(c.c, getReq)
		if st, body := c.answer(t); st != 200 || body != tc.want {
			t.Errorf("%s, second request: %d %q", tc.name, st, body)
		}
	}
	c := dialEcho(t, addr, string(proxyV2(0x20, 0x00, nil, nil))+getReq)
	if st, body := c.answer(t); st != 200 || body != c.c.LocalAddr().String() {
		t.Errorf("v2 LOCAL: %d %q, want the peer %s", st, body, c.c.LocalAddr())
	}
	for _, tc := range []struct {
		name, first string
		reason      int
	}{
		{"no header", getReq, proxyMalformed},
		{"malformed header", "PROXY TCP4 1.2.3.4 5.6.7.8 080 1\r\n" + getReq, proxyMalformed},
		{"slow header", "PROXY TCP4 1.2", proxyIncomplete},
	} {
		before := proxyRefused[tc.reason].Get()
		start := time.Now()
		c := dialEcho(t, addr, tc.first)
		if st, msg := c.answer(t); st != 0 {
			t.Errorf("%s: answered %d, want the connection closed (%s)", tc.name, st, msg)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: closed after %v", tc.name, d)
		}
		if got := proxyRefused[tc.reason].Get(); got != before+1 {
			t.Errorf("%s: ankusa_edge_proxy_refused_total{reason=%q} went %d → %d", tc.name, proxyReasons[tc.reason], before, got)
		}
	}
}

// TestListenerUntrusted: a PROXY header from a peer not trusted is
// refused and counted; plain HTTP from it is served, its client the peer.
func TestListenerUntrusted(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	addr := serveEcho(t, ListenOptions{MaxConns: 10, Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Logger: zap.New(core)})
	for _, hdr := range []string{"PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\n", string(proxyV2(0x21, 0x11, v2TCP4("1.2.3.4", 1), nil))} {
		before := proxyRefused[proxyUntrusted].Get()
		c := dialEcho(t, addr, hdr+getReq)
		if st, _ := c.answer(t); st != 0 {
			t.Errorf("PROXY header %q from an untrusted peer answered %d", hdr[:6], st)
		}
		if got := proxyRefused[proxyUntrusted].Get(); got != before+1 {
			t.Errorf("untrusted refusals went %d → %d", before, got)
		}
	}
	// Logged through a throttle: one line for the two refusals.
	if l := logs.FilterField(zap.String("reason", "untrusted")).All(); len(l) != 1 {
		t.Errorf("%d log lines for two refusals within a second, want 1", len(l))
	}
	// A request sent a byte at a time is told from a PROXY header.
	c := dialEcho(t, addr, "P")
	time.Sleep(50 * time.Millisecond)
	_, _ = io.WriteString(c.c, getReq[1:])
	if st, body := c.answer(t); st != 200 || body != c.c.LocalAddr().String() {
		t.Errorf("plain request from an untrusted peer: %d %q", st, body)
	}
}

// TestListenerPerClient: a client holding its share of connections has
// the next one refused 503 overloaded and counted, while another client
// is served; a share given back is taken again.
func TestListenerPerClient(t *testing.T) {
	addr := serveEcho(t, ListenOptions{MaxConns: 10, MaxPerClient: 2, Trusted: loopback()})
	claim := func(ip string) string { return "PROXY TCP4 " + ip + " 10.0.0.1 1000 443\r\n" + getReq }
	var held []*echoConn
	for range 2 {
		c := dialEcho(t, addr, claim("192.0.2.1"))
		if st, _ := c.answer(t); st != 200 {
			t.Fatalf("within the share: %d", st)
		}
		held = append(held, c)
	}
	before := connRefused[refusedPerClient].Get()
	c := dialEcho(t, addr, claim("192.0.2.1"))
	if st, body := c.answer(t); st != 503 || body != string(answers[vOverloaded].body) {
		t.Errorf("past the share: %d %q, want 503 overloaded", st, body)
	}
	if got := connRefused[refusedPerClient].Get(); got != before+1 {
		t.Errorf("per-client refusals went %d → %d", before, got)
	}
	if st, _ := dialEcho(t, addr, claim("192.0.2.2")).answer(t); st != 200 {
		t.Errorf("another client: %d, want 200", st)
	}
	held[0].c.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, _ := dialEcho(t, addr, claim("192.0.2.1")).answer(t)
		if st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a share given back is not taken again: %d", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListenerPerClientDirect: without the PROXY protocol the peer is
// the client, and its share is enforced at accept, with a log line.
func TestListenerPerClientDirect(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	addr := serveEcho(t, ListenOptions{MaxConns: 10, MaxPerClient: 1, Logger: zap.New(core)})
	first := dialEcho(t, addr, getReq)
	if st, body := first.answer(t); st != 200 || body != first.c.LocalAddr().String() {
		t.Fatalf("first: %d %q", st, body)
	}
	before := connRefused[refusedPerClient].Get()
	if st, _ := dialEcho(t, addr, getReq).answer(t); st != 503 {
		t.Errorf("second connection of one client: %d, want 503", st)
	}
	if got := connRefused[refusedPerClient].Get(); got != before+1 {
		t.Errorf("per-client refusals went %d → %d", before, got)
	}
	if l := logs.FilterField(zap.String("limit", "limits.max_connections_per_client")).All(); len(l) != 1 {
		t.Errorf("%d log lines for the refusal, want 1: %v", len(l), logs.All())
	}
}
