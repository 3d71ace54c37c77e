package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestSplitURL(t *testing.T) {
	f := func(u, wantHost, wantTarget string) {
		t.Helper()
		host, target := splitURL([]byte(u))
		if string(host) != wantHost || string(target) != wantTarget {
			t.Fatalf("splitURL(%q) = %q, %q; want %q, %q", u, host, target, wantHost, wantTarget)
		}
	}
	f("http://h:1/a/b?q=1", "h:1", "/a/b?q=1")
	f("http://h:1", "h:1", "/")
	f("http://h:1/", "h:1", "/")
	f("http://h/webhooks/t0/demo", "h", "/webhooks/t0/demo")
	f("https://[::1]:8443/p", "[::1]:8443", "/p")
	f("http://127.0.0.1:8080/x?a=1&b=/c", "127.0.0.1:8080", "/x?a=1&b=/c")
	// A query on a bare host gets the path "/"; a fragment is never sent
	// (RFC 9112 §3.2); user info is not part of Host.
	f("http://h:1?x=1", "h:1", "/?x=1")
	f("http://h:1#f", "h:1", "/")
	f("http://h:1/a#f", "h:1", "/a")
	f("http://h:1/a?q#f", "h:1", "/a?q")
	f("http://u:p@h:1/x", "h:1", "/x")
}

// TestConnectionClose checks that an answer ending its connection
// (Connection: close, a body delimited by the close, HTTP/1.0) is read
// whole and the next request dials again: no transport error, one
// connection per request.
func TestConnectionClose(t *testing.T) {
	const body = `{"id":"evt_1"}`
	f := func(name string, start func(t *testing.T) (url string, accepts func() int64, requests func() int)) {
		t.Run(name, func(t *testing.T) {
			url, accepts, requests := start(t)
			sum := mustRun(t, "-url", url+"/x", "-c", "2", "-n", "50", "-warmup", "0")
			if sum.Status["201"] != 50 || sum.Errors != 0 {
				t.Fatalf("status %v, errors %d %v; want 50 answers 201, no transport error", sum.Status, sum.Errors, sum.ErrorKinds)
			}
			if got := requests(); got != 50 {
				t.Fatalf("server saw %d requests, want 50", got)
			}
			if got := accepts(); got != 1+50 {
				t.Fatalf("server accepted %d connections, want 51: the probe and one per request", got)
			}
		})
	}
	f("fasthttp", func(t *testing.T) (string, func() int64, func() int) {
		ts := startServer(t, &testServer{connClose: true})
		return ts.url, ts.ln.accepts.Load, ts.count
	})
	raw := func(answer string) func(t *testing.T) (string, func() int64, func() int) {
		return func(t *testing.T) (string, func() int64, func() int) {
			rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(_ int, c net.Conn) bool {
				_, _ = io.WriteString(c, answer)
				return false
			})
			return "http://" + rs.addr, rs.accepts.Load, func() int { return len(rs.requests()) }
		}
	}
	f("body until close", raw("HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n"+body))
	f("HTTP/1.0", raw("HTTP/1.0 201 Created\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body))
}

// TestKeepAlive checks that each worker keeps one connection for the run.
func TestKeepAlive(t *testing.T) {
	ts := startServer(t, &testServer{})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "4", "-n", "200", "-warmup", "0")
	if sum.Status["201"] != 200 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d; want 200 answers 201", sum.Status, sum.Errors)
	}
	// Keep-alive: every request of a worker on its one connection. On a
	// busy machine a worker can find the 200 requests gone before it sends
	// one, so fewer than 4 connections may carry requests, never more.
	if got := ts.connections(); got < 1 || got > 4 {
		t.Fatalf("requests came on %d connections, want at most one per worker, 4", got)
	}
	if got := ts.ln.accepts.Load(); got > 1+4 {
		t.Fatalf("server accepted %d connections, want at most 5: the probe and one per worker", got)
	}
}

// TestRequestOnTheWire checks the request line and headers loadgen writes
// by hand, as a strict HTTP/1.1 parser (net/http) reads them.
func TestRequestOnTheWire(t *testing.T) {
	rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(_ int, c net.Conn) bool { return answer201(c) })
	sum := mustRun(t, "-url", "http://"+rs.addr+"/x/{tenant}/{source}?q=1", "-c", "2", "-n", "40", "-warmup", "0",
		"-tenants", "3", "-tenant-prefix", "acme", "-sources", "a,b", "-size", "50%1KiB,50%4KiB")
	if sum.Status["201"] != 40 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 40 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	reqs := rs.requests()
	if len(reqs) != 40 {
		t.Fatalf("server read %d requests, want 40", len(reqs))
	}
	target := regexp.MustCompile(`^/x/acme[012]/[ab]\?q=1$`)
	sizes := map[int]int{}
	for i, r := range reqs {
		q := r.req
		switch {
		case q.Method != "POST" || q.Proto != "HTTP/1.1" || !target.MatchString(q.RequestURI):
			t.Fatalf("request %d: request line %q %q %q, want POST /x/acme<i>/<a|b>?q=1 HTTP/1.1", i, q.Method, q.RequestURI, q.Proto)
		case q.Host != rs.addr:
			t.Fatalf("request %d: Host %q, want %q", i, q.Host, rs.addr)
		case len(q.Header.Values("Content-Type")) != 1 || q.Header.Get("Content-Type") != "application/json":
			t.Fatalf("request %d: Content-Type %q, want one application/json", i, q.Header.Values("Content-Type"))
		case len(q.TransferEncoding) != 0 || q.ContentLength != int64(len(r.body)):
			t.Fatalf("request %d: Transfer-Encoding %q, Content-Length %d, body read %d bytes", i, q.TransferEncoding, q.ContentLength, len(r.body))
		case !json.Valid(r.body):
			t.Fatalf("request %d: body is not JSON: %.200q", i, r.body)
		}
		sizes[len(r.body)]++
	}
	if sizes[1024]+sizes[4096] != 40 || sizes[1024] == 0 || sizes[4096] == 0 {
		t.Fatalf("body sizes %v, want a mix of 1024 and 4096", sizes)
	}
}

// TestTenantInHostVariesHostOnly checks that a {tenant} in the host name
// changes the Host header only: every request goes to the address of the
// first expansion, on the workers' keep-alive connections. The tenants
// 10, 11, 12 make hosts 127.0.0.10 to .12, of which the server listens on
// .10 only.
func TestTenantInHostVariesHostOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.10:0")
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.10 (Linux routes all of 127/8 to loopback; this test needs it): %v", err)
	}
	rs := startRaw(t, ln, func(_ int, c net.Conn) bool { return answer201(c) })
	_, port, _ := net.SplitHostPort(rs.addr)
	sum := mustRun(t, "-url", "http://127.0.0.{tenant}:"+port+"/in/{tenant}", "-c", "2", "-n", "60", "-warmup", "0",
		"-tenants", "3", "-tenant-prefix", "1")
	if sum.Status["201"] != 60 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 60 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	hosts, conns := map[string]int{}, map[int64]bool{}
	for i, r := range rs.requests() {
		tenant := strings.TrimPrefix(r.req.URL.Path, "/in/")
		if want := "127.0.0." + tenant + ":" + port; r.req.Host != want {
			t.Fatalf("request %d for tenant %s: Host %q, want %q", i, tenant, r.req.Host, want)
		}
		hosts[r.req.Host]++
		conns[r.conn] = true
	}
	if len(hosts) != 3 {
		t.Fatalf("Host headers %v, want the 3 tenants' hosts", hosts)
	}
	if got := rs.accepts.Load(); len(conns) > 2 || got != int64(1+len(conns)) {
		t.Fatalf("%d connections accepted, %d carried requests; want the probe and at most one per worker", got, len(conns))
	}
}

// TestHTTPSUntrustedCertificate checks a run against a server whose
// certificate loadgen cannot verify (it has no flag for a CA): the start-up
// probe's handshake fails, the run stops before any load with the reason,
// and the server's handler never runs.
func TestHTTPSUntrustedCertificate(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a handshake error per request
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// The start-up probe completes a TLS handshake: an untrusted
	// certificate stops the run at once with the reason, before any load.
	code, stdout, stderr := runWithin(t, 10*time.Second, "-url", srv.URL+"/x", "-c", "2", "-n", "20", "-warmup", "0", "-json")
	if code != exitFatal || stdout != "" || !strings.Contains(stderr, "TLS handshake") || !strings.Contains(stderr, "certificate") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want %d, no summary, the certificate error", code, stdout, stderr, exitFatal)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the handler ran %d times through an unverified connection", n)
	}
}

// TestHTTPSTrustedCertificate runs loadgen in a child process whose
// SSL_CERT_FILE trusts the test server's certificate (the system roots
// are loaded once per process, so this cannot be done in the test's own).
// Requests must verify against the address's IP and keep their
// connections.
func TestHTTPSTrustedCertificate(t *testing.T) {
	var mu sync.Mutex
	remotes, hosts := map[string]int{}, map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		remotes[r.RemoteAddr]++
		hosts[r.Host]++
		mu.Unlock()
		if !json.Valid(body) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the probe connects and hangs up
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runChild(t, []string{"SSL_CERT_FILE=" + certFile},
		"-url", srv.URL+"/x", "-c", "2", "-n", "40", "-warmup", "0", "-json")
	var sum Summary
	if err := json.Unmarshal([]byte(stdout), &sum); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v\nstdout %s\nstderr %s", code, err, stdout, stderr)
	}
	if sum.Status["201"] != 40 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 40 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) != 2 {
		t.Fatalf("requests came on %d connections %v, want one per worker, 2", len(remotes), remotes)
	}
	if addr := srv.Listener.Addr().String(); len(hosts) != 1 || hosts[addr] != 40 {
		t.Fatalf("Host headers %v, want %s", hosts, addr)
	}
}

// TestServerHangsUpMidAnswer checks that a server closing the connection
// before its answer is complete costs one transport error of the right
// kind per request, never a resend, and that once the server behaves the
// run goes on on a fresh connection. The server misbehaves on its first 3
// requests.
func TestServerHangsUpMidAnswer(t *testing.T) {
	const bad = 3
	f := func(name, partial string, reset bool, wantKind string) {
		t.Run(name, func(t *testing.T) {
			rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(n int, c net.Conn) bool {
				if n >= bad {
					return answer201(c)
				}
				_, _ = io.WriteString(c, partial)
				if reset {
					_ = c.(*net.TCPConn).SetLinger(0) // close sends RST
				}
				return false
			})
			sum := mustRun(t, "-url", "http://"+rs.addr+"/x", "-c", "1", "-n", "8", "-warmup", "0")
			if sum.Errors != bad || sum.ErrorKinds[wantKind] != bad || sum.Status["201"] != 8-bad {
				t.Fatalf("errors %d %v, status %v; want %d of kind %s, then %d answers 201",
					sum.Errors, sum.ErrorKinds, sum.Status, bad, wantKind, 8-bad)
			}
			reqs := rs.requests()
			if len(reqs) != 8 {
				t.Fatalf("server read %d requests, want 8: nothing is resent", len(reqs))
			}
			// Connection 1 is the probe, 2 to 4 the hung-up ones.
			for i, r := range reqs {
				if want := min(int64(i)+2, bad+2); r.conn != want {
					t.Fatalf("request %d came on connection %d, want %d", i, r.conn, want)
				}
			}
		})
	}
	const head = "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
	f("no answer", "", false, "closed")
	f("partial status line", "HTTP/1.1 20", false, "closed")
	f("partial header", head+"Content-Le", false, "closed")
	f("partial body", head+"Content-Length: 100\r\n\r\n{\"id\":", false, "closed")
	f("partial chunk", head+"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"id\":", false, "closed")
	f("reset mid-header", head+"Content-Le", true, "reset")
}

// TestTimeoutClosesConnection checks that a request that timed out closes
// its connection: the answer it may still get must not be read as the
// next request's, so the next request goes on a new connection.
func TestTimeoutClosesConnection(t *testing.T) {
	rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(n int, c net.Conn) bool {
		if n == 0 {
			return true // never answered; the connection stays open until the client closes it
		}
		return answer201(c)
	})
	sum := mustRun(t, "-url", "http://"+rs.addr+"/x", "-c", "1", "-n", "3", "-warmup", "0", "-timeout", "50ms")
	if sum.Errors != 1 || sum.ErrorKinds["timeout"] != 1 || sum.Status["201"] != 2 {
		t.Fatalf("errors %d %v, status %v; want 1 timeout, then 2 answers 201", sum.Errors, sum.ErrorKinds, sum.Status)
	}
	reqs := rs.requests()
	if len(reqs) != 3 || reqs[0].conn != 2 || reqs[1].conn != 3 || reqs[2].conn != 3 {
		var conns []int64
		for _, r := range reqs {
			conns = append(conns, r.conn)
		}
		t.Fatalf("requests came on connections %v, want [2 3 3] (1 is the probe)", conns)
	}
}

// TestDeadlineBounds checks that a request that gets no answer waits at
// least the timeout and at most 9/8 of it, whether the connection's
// deadline is kept (enough of it left) or moved.
func TestDeadlineBounds(t *testing.T) {
	const timeout = 200 * time.Millisecond
	const late = 50 * time.Millisecond // timer and scheduler lateness under -race
	f := func(name string, answered int, gap time.Duration) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(n int, c net.Conn) bool {
				if n < answered {
					return answer201(c)
				}
				return true // stall
			})
			tmpl, err := compileURL("http://"+rs.addr+"/x", "t0", "demo")
			if err != nil {
				t.Fatal(err)
			}
			hc := newHTTPConn(tmpl, timeout, 0)
			defer hc.close()
			body := []byte(`{}`)
			h := &fasthttp.RequestHeader{}
			h.SetMethod(fasthttp.MethodPost)
			h.SetRequestURI("/x")
			h.SetHost(rs.addr)
			h.SetContentLength(len(body))
			resp := &fasthttp.Response{}
			for range answered {
				if err := hc.do(h, body, resp, time.Now()); err != nil || resp.StatusCode() != fasthttp.StatusCreated {
					t.Fatalf("answered request: %v, status %d", err, resp.StatusCode())
				}
			}
			time.Sleep(gap)
			sent := time.Now()
			err = hc.do(h, body, resp, sent)
			waited := time.Since(sent)
			if classify(err) != kindTimeout {
				t.Fatalf("stalled request: %v (kind %s), want a timeout", err, kindNames[classify(err)])
			}
			if waited < timeout || waited > timeout+timeout/8+late {
				t.Fatalf("stalled request waited %v, want %v to %v", waited, timeout, timeout+timeout/8)
			}
			if hc.c != nil {
				t.Fatal("the connection is still open after a timeout")
			}
		})
	}
	f("fresh connection", 0, 0)
	f("deadline kept, back to back", 1, 0)
	f("deadline kept, a tenth in", 1, timeout/10)
	f("deadline moved, half in", 1, timeout/2)
	f("deadline moved, past it", 1, 3*timeout/2)
}

// runWithin runs the command line and fails the test if it does not
// return within limit.
func runWithin(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &out, &errOut) }()
	select {
	case code = <-done:
		return code, out.String(), errOut.String()
	case <-time.After(limit):
		t.Fatalf("run(%q) still running after %v", args, limit)
		return 0, "", ""
	}
}

// childArgsEnv carries the command line, as JSON, to TestRunHelperProcess.
const childArgsEnv = "LOADGEN_TEST_CHILD_ARGS"

// runChild runs the command line in a child process (this test binary,
// through TestRunHelperProcess) with env added to the environment.
func runChild(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	js, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRunHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childArgsEnv+"="+string(js)), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("cannot run the child: %v", err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestRunHelperProcess is not a test: in a child started by runChild it
// runs loadgen with the command line in its environment and exits with
// its code.
func TestRunHelperProcess(t *testing.T) {
	js := os.Getenv(childArgsEnv)
	if js == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(js), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// rawServer is an HTTP/1.1 server written by hand, so that a test can
// answer byte by byte, stall or hang up mid-answer. It reads each request
// whole (net/http's strict parser) and records it; answer then writes the
// reply to request n (0-based, in arrival order) on c and reports whether
// to keep the connection. A connection kept without an answer stalls until
// the client closes it.
type rawServer struct {
	addr    string
	answer  func(n int, c net.Conn) (keep bool)
	accepts atomic.Int64

	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	open   map[net.Conn]bool
	reqs   []rawRequest
}

// rawRequest is a request as the server read it.
type rawRequest struct {
	conn int64 // the connection's accept number, from 1 (loadgen's probe)
	req  *http.Request
	body []byte
}

// listenLoopback listens on host (a loopback address), any port.
func listenLoopback(t *testing.T, host string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startRaw serves on ln until the test ends.
func startRaw(t *testing.T, ln net.Listener, answer func(n int, c net.Conn) bool) *rawServer {
	rs := &rawServer{addr: ln.Addr().String(), answer: answer, ln: ln, open: map[net.Conn]bool{}}
	rs.wg.Go(rs.acceptLoop)
	t.Cleanup(rs.close)
	return rs
}

func (rs *rawServer) acceptLoop() {
	for {
		c, err := rs.ln.Accept()
		if err != nil {
			return
		}
		id := rs.accepts.Add(1)
		rs.mu.Lock()
		if rs.closed {
			rs.mu.Unlock()
			_ = c.Close()
			return
		}
		rs.open[c] = true
		rs.mu.Unlock()
		rs.wg.Go(func() { rs.serveConn(c, id) })
	}
}

func (rs *rawServer) serveConn(c net.Conn, id int64) {
	defer func() {
		rs.mu.Lock()
		delete(rs.open, c)
		rs.mu.Unlock()
		_ = c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		rs.mu.Lock()
		n := len(rs.reqs)
		rs.reqs = append(rs.reqs, rawRequest{conn: id, req: req, body: body})
		rs.mu.Unlock()
		if !rs.answer(n, c) {
			return
		}
	}
}

// requests returns the requests read so far, in arrival order.
func (rs *rawServer) requests() []rawRequest {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]rawRequest(nil), rs.reqs...)
}

func (rs *rawServer) close() {
	_ = rs.ln.Close()
	rs.mu.Lock()
	rs.closed = true
	for c := range rs.open {
		_ = c.Close()
	}
	rs.mu.Unlock()
	rs.wg.Wait()
}

// answer201 writes a 201 with an id and keeps the connection.
func answer201(c net.Conn) bool {
	const body = `{"id":"evt_1"}`
	_, err := io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	return err == nil
}

// TestIdleConnectionClosedByServer: in open loop at a low rate a worker's
// connection sits idle longer than the server's keep-alive timeout, and
// the server closes it. The next request must go on a fresh connection,
// not be lost on the closed one.
func TestIdleConnectionClosedByServer(t *testing.T) {
	ts := startServer(t, &testServer{idle: 50 * time.Millisecond})
	sum := mustRun(t, "-url", ts.url+"/x", "-rate", "20", "-c", "2", "-n", "12", "-warmup", "0")
	if sum.Status["201"] != 12 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 12 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	// Each worker waits 100 ms between requests, past the 50 ms timeout:
	// about one connection per request.
	if n := ts.connections(); n < 8 {
		t.Fatalf("%d connections carried 12 requests; the server's idle timeout should have closed most", n)
	}
}

// TestSpin: with -spin the worker polls for the answer before parking; an
// answer that comes within the spin and one that comes after it (the
// worker then parks as usual) are both read whole, and nothing is lost or
// sent twice.
func TestSpin(t *testing.T) {
	var n atomic.Int64
	ts := startServer(t, &testServer{before: func() {
		if n.Add(1)%2 == 0 {
			time.Sleep(5 * time.Millisecond) // past the 1 ms spin
		}
	}})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "2", "-n", "40", "-warmup", "0", "-spin", "1ms")
	if sum.Status["201"] != 40 || sum.Errors != 0 || n.Load() != 40 {
		t.Fatalf("status %v, errors %d %v, server saw %d; want 40 answers 201 to 40 requests", sum.Status, sum.Errors, sum.ErrorKinds, n.Load())
	}
	sum = mustRun(t, "-url", ts.url+"/x", "-rate", "200", "-c", "1", "-n", "20", "-warmup", "0", "-spin", "2ms")
	if sum.Status["201"] != 20 || sum.Errors != 0 {
		t.Fatalf("open loop with -spin: status %v, errors %d %v", sum.Status, sum.Errors, sum.ErrorKinds)
	}
}
