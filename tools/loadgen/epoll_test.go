//go:build linux

package main

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// epollEngineFor builds an engine for args (parsed as the command line
// would be, with -engine epoll added) without running it.
func epollEngineFor(t *testing.T, args ...string) *epollEngine {
	t.Helper()
	cfg := mustConfig(t, append(args, "-engine", "epoll")...)
	rn, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rn.cancel = func(error) {}
	e, err := newEpollEngine(rn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	e.s, _ = newSchedule(cfg)
	rn.startSchedule(e.s, time.Now())
	return e
}

// TestEpollSteadyStateAllocs drives the engine's request cycle by hand
// against a server side the test plays with raw system calls (so that
// nothing but the engine allocates): build the request, send it, read it
// on the server side, answer, and let the engine read, parse and record
// the answer. Once warm, a request must allocate nothing.
func TestEpollSteadyStateAllocs(t *testing.T) {
	for _, sign := range []string{"none", "stripe", "github", "standardwebhooks"} {
		t.Run(sign, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			args := []string{"-url", "http://" + ln.Addr().String() + "/in/{tenant}", "-c", "1", "-rate", "1000", "-warmup", "0", "-tenants", "50", "-kind", "mixed", "-size", "50%1KiB,50%2KiB"}
			switch sign {
			case "stripe", "github":
				args = append(args, "-sign", sign, "-secret", "whsec_test")
			case "standardwebhooks":
				args = append(args, "-sign", sign, "-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
			}
			e := epollEngineFor(t, args...)
			acked := filepath.Join(t.TempDir(), "acked")
			if e.rn.acked, err = openAcked(acked); err != nil {
				t.Fatal(err)
			}
			defer e.rn.acked.Close()
			e.connectAll(time.Now().Add(5 * time.Second))
			sc, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			f, err := sc.(*net.TCPConn).File() // a blocking fd of the server side
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sfd := int(f.Fd())
			answer := []byte("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"id\":\"evt_0001\"}")
			rbuf := make([]byte, 64<<10)
			i := int64(0)
			cycle := func() {
				due := time.Now()
				e.send(e.popFree(), i, due)
				i++
				// Read the whole request (header block and body), then answer.
				want := len(e.conns[0].out)
				for got := 0; got < want; {
					n, err := unix.Read(sfd, rbuf[got:want])
					if err != nil || n == 0 {
						panic(fmt.Sprintf("server side read: %v", err))
					}
					got += n
				}
				if _, err := unix.Write(sfd, answer); err != nil {
					panic(err)
				}
				for e.inflight > 0 && e.fatal == nil {
					e.poll(1000)
				}
			}
			for range 200 {
				cycle()
			}
			if allocs := testing.AllocsPerRun(2000, cycle); allocs != 0 {
				t.Fatalf("%.2f allocations per request in the steady state, want 0", allocs)
			}
			if e.fatal != nil || e.rec.answered < 2000 || e.rec.status[201] != e.rec.answered || e.rec.errors != 0 {
				t.Fatalf("fatal %v; %d answered, %d 201, %d errors", e.fatal, e.rec.answered, e.rec.status[201], e.rec.errors)
			}
		})
	}
}

// TestEpollCounts: every scheduled request reaches the server once, and
// the answers are counted by status, at the scheduled rate.
func TestEpollCounts(t *testing.T) {
	ts := startServer(t, &testServer{status: answerBySource})
	sum := mustRun(t, "-engine", "epoll", "-url", ts.url+"/in/{source}", "-c", "8", "-rate", "2000", "-d", "1s", "-warmup", "200ms", "-sources", "ok,gone")
	if sum.Mode != "open" || sum.Requests != 2000 || sum.Errors != 0 {
		t.Fatalf("summary %+v, want open, 2000 requests, no errors", sum)
	}
	if got := ts.count(); got != 400+2000 {
		t.Fatalf("server saw %d requests, want 400 warm-up + 2000", got)
	}
	measured := map[string]int64{}
	ts.mu.Lock()
	for path, n := range ts.paths {
		measured[path] = int64(n)
	}
	ts.mu.Unlock()
	if sum.Status["201"]+sum.Status["404"] != 2000 || len(sum.Status) != 2 || sum.Status["404"] < 800 || sum.Status["201"] < 800 ||
		sum.Status["201"] > measured["/in/ok"] || sum.Status["404"] > measured["/in/gone"] {
		t.Fatalf("status %v, server paths %v", sum.Status, measured)
	}
	if sum.ThroughputRPS < 1900 || sum.ThroughputRPS > 2100 {
		t.Fatalf("throughput %v req/s, want 2000 within 5%%", sum.ThroughputRPS)
	}
	ts.mu.Lock()
	arrived := ts.arrived[400:]
	ts.mu.Unlock()
	// The rate over the middle 80% of the window: a stall of the busy
	// machine at either end (the first request late, the last early)
	// moves an end of the window and says nothing of the schedule, while
	// one inside it is caught up and still averages out.
	i0, i1 := len(arrived)/10, len(arrived)*9/10
	if rate := float64(i1-i0) / arrived[i1].Sub(arrived[i0]).Seconds(); rate < 1900 || rate > 2100 {
		t.Fatalf("server saw %.0f req/s over the window, want 2000 within 5%%", rate)
	}
	// Keep-alive: the 8 connections opened at start carry everything.
	if n := ts.ln.accepts.Load(); n != 1+8 {
		t.Fatalf("server accepted %d connections, want 9: the probe and the pool", n)
	}
	lat, from := sum.LatencyUs, sum.FromSendUs
	if lat.P50 <= 0 || lat.P50 > lat.P99 || lat.P99 > lat.Max || from == nil || from.Max > lat.Max || sum.SendLagUs == nil {
		t.Fatalf("latency %+v, from send %+v, send lag %+v", lat, from, sum.SendLagUs)
	}
}

// TestEpollAcked: -acked holds one line per measured 201, with the id the
// server gave and the sha256 of the body it received, whatever the
// answer's framing (Content-Length or chunked).
func TestEpollAcked(t *testing.T) {
	f := func(t *testing.T, chunked bool) {
		var n atomic.Int64
		ts := startServer(t, &testServer{status: func(*fasthttp.RequestCtx) int {
			if n.Add(1)%5 == 0 {
				return fasthttp.StatusServiceUnavailable
			}
			return fasthttp.StatusCreated
		}})
		url := ts.url
		if chunked {
			url = chunkingProxy(t, ts.url)
		}
		path := filepath.Join(t.TempDir(), "acked.txt")
		sum := mustRun(t, "-engine", "epoll", "-url", url+"/x", "-c", "3", "-rate", "1000", "-n", "500", "-warmup", "100ms",
			"-acked", path, "-kind", "mixed", "-size", "50%1KiB,50%4KiB", "-sign", "stripe", "-secret", "whsec_x")
		lines := readLines(t, path)
		if int64(len(lines)) != sum.Status["201"] || sum.Status["201"] < 350 || sum.Status["503"] < 50 || sum.Errors != 0 {
			t.Fatalf("%d lines, status %v, errors %d %v: want one line per measured 201", len(lines), sum.Status, sum.Errors, sum.ErrorKinds)
		}
		seen := map[string]bool{}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		for _, line := range lines {
			id, hash, ok := strings.Cut(line, " ")
			want, stored := ts.bodies[id]
			if !ok || !stored || seen[id] || hash != hex.EncodeToString(want[:]) {
				t.Fatalf("line %q: not an id the server answered 201 once for a body of that hash", line)
			}
			seen[id] = true
		}
		if len(ts.bodies) <= len(lines) {
			t.Fatalf("server answered %d 201s, %d lines: want the warm-up's left out", len(ts.bodies), len(lines))
		}
	}
	t.Run("content-length", func(t *testing.T) { f(t, false) })
	t.Run("chunked", func(t *testing.T) { f(t, true) })
}

// chunkingProxy forwards each request to target over one connection per
// client connection and re-frames the answer's body as chunks of at most
// 7 bytes, written a few at a time. It returns its own URL.
func chunkingProxy(t *testing.T, target string) string {
	t.Helper()
	ln := listenLoopback(t, "127.0.0.1")
	client := &fasthttp.HostClient{Addr: strings.TrimPrefix(target, "http://")}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		ctx.Request.CopyTo(req)
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		if err := client.Do(req, resp); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		ctx.SetStatusCode(resp.StatusCode())
		body := append([]byte(nil), resp.Body()...)
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for len(body) > 0 {
				n := min(7, len(body))
				_, _ = w.Write(body[:n])
				_ = w.Flush() // one chunk per flush
				body = body[n:]
			}
		})
	}}
	go srv.Serve(ln) //nolint:errcheck // ends when the listener closes
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// TestEpollConnectionClose: an answer that ends its connection
// (Connection: close, a body delimited by the close, HTTP/1.0) is read
// whole and the next request on the slot dials again.
func TestEpollConnectionClose(t *testing.T) {
	const body = `{"id":"evt_1"}`
	f := func(name string, start func(t *testing.T) (url string, accepts func() int64, requests func() int)) {
		t.Run(name, func(t *testing.T) {
			url, accepts, requests := start(t)
			sum := mustRun(t, "-engine", "epoll", "-url", url+"/x", "-c", "2", "-rate", "500", "-n", "50", "-warmup", "0")
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
	f("after 100 Continue", raw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body))
}

// TestEpollServerHangsUpMidAnswer: a server closing the connection before
// its answer is complete costs one transport error of the right kind per
// request, never a resend; once it behaves, the run goes on on a fresh
// connection. The server misbehaves on its first 3 requests.
func TestEpollServerHangsUpMidAnswer(t *testing.T) {
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
			sum := mustRun(t, "-engine", "epoll", "-url", "http://"+rs.addr+"/x", "-c", "1", "-rate", "200", "-n", "8", "-warmup", "0")
			if sum.Errors != bad || sum.ErrorKinds[wantKind] != bad || sum.Status["201"] != 8-bad {
				t.Fatalf("errors %d %v, status %v; want %d of kind %s, then %d answers 201",
					sum.Errors, sum.ErrorKinds, sum.Status, bad, wantKind, 8-bad)
			}
			reqs := rs.requests()
			if len(reqs) != 8 {
				t.Fatalf("server read %d requests, want 8: nothing is resent", len(reqs))
			}
			// Connection 1 is the probe, 2 the one opened at start, 2 to 4
			// the hung-up ones.
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
	f("malformed", "HTTP/1.1 2x1 Created\r\n\r\n", false, "other")
}

// TestEpollTimeout: a request without an answer fails as a timeout after
// -timeout (not before, not much after), its connection is closed so a
// late answer cannot be taken for the next request's, and the run goes on.
func TestEpollTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	var stalledAt atomic.Int64
	rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(n int, c net.Conn) bool {
		if n == 0 {
			stalledAt.Store(time.Now().UnixNano())
			return true // never answered; the connection stays open until the client closes it
		}
		return answer201(c)
	})
	start := time.Now()
	sum := mustRun(t, "-engine", "epoll", "-url", "http://"+rs.addr+"/x", "-c", "1", "-rate", "20", "-n", "3", "-warmup", "0", "-timeout", timeout.String())
	if sum.Errors != 1 || sum.ErrorKinds["timeout"] != 1 || sum.Status["201"] != 2 {
		t.Fatalf("errors %d %v, status %v; want 1 timeout, then 2 answers 201", sum.Errors, sum.ErrorKinds, sum.Status)
	}
	reqs := rs.requests()
	if len(reqs) != 3 || reqs[0].conn != 2 || reqs[1].conn != 3 || reqs[2].conn != 3 {
		t.Fatalf("%d requests; want 3, the first on connection 2, the others on a new one, 3", len(reqs))
	}
	// Requests 1 and 2 were due at 50 and 100 ms but wait for the only
	// connection: the run lasts the timeout and a bit.
	if took := time.Since(start); took < timeout || took > timeout+timeout/2+500*time.Millisecond {
		t.Fatalf("run took %v, want about the %v timeout", took, timeout)
	}
	// Their latency counts from their schedule: about the timeout, less
	// 50 ms for the second.
	if sum.LatencyUs.Max < (timeout - 60*time.Millisecond).Microseconds() {
		t.Fatalf("max latency %d µs: the requests that waited for the connection should count from their due time", sum.LatencyUs.Max)
	}
}

// TestEpollEarlyAnswer: a server that refuses a body by its Content-Length
// answers 413 and closes without reading it; the write fails, yet the
// answer is there and is what counts.
func TestEpollEarlyAnswer(t *testing.T) {
	sum := mustRun(t, "-engine", "epoll", "-url", "http://"+earlyAnswerServer(t)+"/x", "-c", "1", "-rate", "50", "-n", "10", "-warmup", "0", "-size", "4MiB")
	if sum.Status["413"] != 10 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 10 answers 413 (the server answered every request)", sum.Status, sum.Errors, sum.ErrorKinds)
	}
}

// TestEpollIdleConnectionClosedByServer: at a low rate a connection sits
// idle past the server's keep-alive timeout and the server closes it; the
// engine sees the close and the next request goes on a fresh connection.
func TestEpollIdleConnectionClosedByServer(t *testing.T) {
	ts := startServer(t, &testServer{idle: 50 * time.Millisecond})
	sum := mustRun(t, "-engine", "epoll", "-url", ts.url+"/x", "-rate", "20", "-c", "2", "-n", "12", "-warmup", "0")
	if sum.Status["201"] != 12 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 12 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	if n := ts.connections(); n < 8 {
		t.Fatalf("%d connections carried 12 requests; the server's idle timeout should have closed most", n)
	}
}

// TestEpollRefused: a server that goes away mid-run costs one "refused"
// error per scheduled request, not a busy loop, and the run ends on time.
func TestEpollRefused(t *testing.T) {
	ln := listenLoopback(t, "127.0.0.1")
	addr := ln.Addr().String()
	go func() {
		c, err := ln.Accept() // the probe
		if err == nil {
			c.Close()
		}
		c, err = ln.Accept() // the pool's one connection
		ln.Close()
		if err == nil {
			c.Close()
		}
	}()
	sum := mustRun(t, "-engine", "epoll", "-url", "http://"+addr+"/x", "-c", "1", "-rate", "200", "-n", "40", "-warmup", "0")
	if sum.Requests != 40 || sum.Errors != 40 || sum.ErrorKinds["refused"] < 38 || sum.DurationS > 1 {
		t.Fatalf("%d requests, errors %d %v, %v s; want 40 failed requests, nearly all refused, in 0.2 s", sum.Requests, sum.Errors, sum.ErrorKinds, sum.DurationS)
	}
}

// TestEpollMaxErrors: against a server that hangs up on every connection,
// -max-errors stops the run early with the reason, the summary printed.
func TestEpollMaxErrors(t *testing.T) {
	ln := listenLoopback(t, "127.0.0.1")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"-engine", "epoll", "-url", "http://" + ln.Addr().String() + "/x", "-c", "2", "-rate", "200", "-d", "10s", "-warmup", "0", "-max-errors", "20", "-json"}, &stdout, &stderr)
	if code != exitFatal || !strings.Contains(stderr.String(), "-max-errors reached") || time.Since(start) > 5*time.Second {
		t.Fatalf("exit %d after %v, stderr %q; want %d and -max-errors reached, well before the 10 s", code, time.Since(start), stderr.String(), exitFatal)
	}
	var sum Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no JSON summary after -max-errors: %v\n%s", err, stdout.String())
	}
	if sum.Errors < 19 || sum.ErrorKinds["closed"]+sum.ErrorKinds["reset"] < 19 || sum.Status["201"] != 0 {
		t.Fatalf("errors %d, kinds %v, status %v", sum.Errors, sum.ErrorKinds, sum.Status)
	}
}

// TestEpollRequestOnTheWire: the epoll engine sends what the go engine
// sends, as a strict HTTP/1.1 parser (net/http) reads it, signature
// included.
func TestEpollRequestOnTheWire(t *testing.T) {
	rs := startRaw(t, listenLoopback(t, "127.0.0.1"), func(_ int, c net.Conn) bool { return answer201(c) })
	sum := mustRun(t, "-engine", "epoll", "-url", "http://"+rs.addr+"/x/{tenant}/{source}?q=1", "-c", "2", "-rate", "400", "-n", "40", "-warmup", "0",
		"-tenants", "3", "-tenant-prefix", "acme", "-sources", "a,b", "-size", "50%1KiB,50%4KiB", "-sign", "stripe", "-secret", "whsec_k")
	if sum.Status["201"] != 40 || sum.Errors != 0 {
		t.Fatalf("status %v, errors %d %v; want 40 answers 201", sum.Status, sum.Errors, sum.ErrorKinds)
	}
	reqs := rs.requests()
	if len(reqs) != 40 {
		t.Fatalf("server read %d requests, want 40", len(reqs))
	}
	sizes := map[int]int{}
	for i, r := range reqs {
		q := r.req
		if q.Method != "POST" || q.Proto != "HTTP/1.1" || !strings.HasPrefix(q.RequestURI, "/x/acme") || !strings.HasSuffix(q.RequestURI, "?q=1") ||
			q.Host != rs.addr || q.Header.Get("Content-Type") != "application/json" || q.ContentLength != int64(len(r.body)) {
			t.Fatalf("request %d: %s %s %s, Host %q, headers %v", i, q.Method, q.RequestURI, q.Proto, q.Host, q.Header)
		}
		ts, v1, ok := strings.Cut(strings.TrimPrefix(q.Header.Get("Stripe-Signature"), "t="), ",v1=")
		mac := hmac.New(sha256.New, []byte("whsec_k"))
		mac.Write([]byte(ts + "."))
		mac.Write(r.body)
		if !ok || v1 != hex.EncodeToString(mac.Sum(nil)) {
			t.Fatalf("request %d: Stripe-Signature %q does not sign the body", i, q.Header.Get("Stripe-Signature"))
		}
		sizes[len(r.body)]++
	}
	if sizes[1024] == 0 || sizes[4096] == 0 || sizes[1024]+sizes[4096] != 40 {
		t.Fatalf("body sizes %v, want a mix of 1024 and 4096", sizes)
	}
}

// TestEpollSameBytes: for the same run seed, the epoll engine's request
// buffer is byte for byte what the go engine writes (its header block,
// then the body), signature included.
func TestEpollSameBytes(t *testing.T) {
	for _, sign := range []string{"none", "stripe", "github", "standardwebhooks"} {
		args := []string{"-url", "http://127.0.0.1:1/in/{tenant}/{source}", "-c", "1", "-rate", "100", "-tenants", "30", "-tenant-dist", "zipf", "-sources", "a,b,c", "-kind", "mixed", "-size", "60%1KiB,40%3KiB"}
		switch sign {
		case "stripe", "github":
			args = append(args, "-sign", sign, "-secret", "s3cret")
		case "standardwebhooks":
			args = append(args, "-sign", sign, "-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		}
		e := epollEngineFor(t, args...)
		w := e.rn.newWorker(0) // the go engine's worker 0: same seed, same draws
		at := time.Now().Add(time.Hour)
		for i := range int64(50) {
			e.build(i, at)
			pb := w.prepare()
			w.signer.Sign(w.hdr, w.body, at, w.token[:], pb)
			want := append(append([]byte(nil), w.hdr.Header()...), w.body...)
			if !bytes.Equal(e.stage, want) || e.stageHdr != len(w.hdr.Header()) {
				t.Fatalf("-sign %s, request %d:\nepoll %.300q\ngo    %.300q", sign, i, e.stage, want)
			}
		}
	}
}

// earlyAnswerServer answers every request with a 413 and closes before
// reading the body, as fasthttp does past MaxRequestBodySize.
func earlyAnswerServer(t *testing.T) string {
	ln := listenLoopback(t, "127.0.0.1")
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() // unread body: the close sends RST
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return // the probe, or the pool's connection left unused
				}
				_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
			}()
		}
	}()
	return ln.Addr().String()
}

// TestEpollFlags: the engine's flag combinations that cannot work are
// refused with the reason.
func TestEpollFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-engine", "epoll", "-url", "http://h/x"}, "give -rate"},
		{[]string{"-engine", "epoll", "-rate", "10", "-url", "https://h/x"}, "plain http only"},
		{[]string{"-engine", "epoll", "-rate", "10", "-spin", "1ms", "-url", "http://h/x"}, "-spin"},
		{[]string{"-engine", "uring", "-rate", "10", "-url", "http://h/x"}, "must be go or epoll"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}
