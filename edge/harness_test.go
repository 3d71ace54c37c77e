package edge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// The tests in this package run the real public listener on loopback: the
// router from edge.NewRouter behind edge.NewServer, a real WAL on a temp
// directory, and hand-written HTTP/1.1 bytes on a raw TCP connection, so a
// test controls Content-Length, chunked framing and short bodies.

// limitsYAML are the limits every test config starts from: 1MiB bodies, a
// 4KiB header block of at most 20 fields, and timeouts short enough that a
// connection the server forgets to answer fails the test instead of hanging.
const limitsYAML = `limits: {max_body_bytes: 1MiB, max_header_bytes: 4KiB, max_header_count: 20, read_timeout: 3s, write_timeout: 3s, idle_timeout: 3s}
`

// pathConfig serves the path resolver under /webhooks.
const pathConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [webhooks]}
sources:
  demo: {verify: {type: none}}
  acme-billing: {tenant_id: acme, verify: {type: none}}
  small: {verify: {type: none}, max_body_bytes: 100}
  mid: {verify: {type: none}, max_body_bytes: 256KiB}
`

// tenantPathConfig serves the tenantpath resolver under /webhooks.
const tenantPathConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits: {default: {rate: 50, burst: 100}}
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
  acme-billing: {tenant_id: acme, verify: {type: none}}
`

// loadConfig parses, defaults and validates a config the way check-config
// does; a config the appliance would refuse fails the test.
func loadConfig(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), config.ValidateOptions{
		ResolverKnown: edge.ResolverKnown,
		VerifierKnown: func(n string) bool { return n == "none" },
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// node is one public listener with its router and WAL.
type node struct {
	addr   string
	router *edge.Router
	walDir string
	wal    *wal.WAL
}

// nodeOption changes the router options before the node starts.
type nodeOption func(*edge.Options)

// startNode serves cfg on 127.0.0.1:0 with a real WAL in a temp directory.
// Everything is stopped when the test ends.
func startNode(t testing.TB, cfg *config.Config, opts ...nodeOption) *node {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wal")
	w, err := wal.Open(wal.Options{
		FS:            vfs.Default,
		Dir:           dir,
		MaxFileBytes:  int64(cfg.WAL.MaxFileBytes),
		MaxBatchBytes: int64(cfg.WAL.MaxBatchBytes),
		Node:          7,
		OnFatal:       func(err error) { t.Errorf("wal fatal: %v", err) },
	})
	if err != nil {
		t.Fatalf("wal.Open: %v", err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	o := edge.Options{
		Resolver:      res,
		Sources:       source.NewStatic(cfg),
		WAL:           w,
		Limits:        cfg.Limits,
		RoutesEnabled: cfg.Routes.Enabled,
		Logger:        zap.NewNop(),
	}
	for _, f := range opts {
		f(&o)
	}
	r := edge.NewRouter(o)
	ln, err := edge.Listen("127.0.0.1:0", cfg.Limits.MaxConnections)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := edge.NewServer(r, cfg.Limits, zap.NewNop())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		// Every connection is closed and every handler has returned: what
		// was reserved has been released, whatever the exit path.
		if got := r.PipelineBytes(); got != 0 {
			t.Errorf("PipelineBytes() = %d after shutdown, want 0", got)
		}
		if o.Queues != nil {
			if hooks, bytes := o.Queues.Totals(); hooks != 0 || bytes != 0 || o.Queues.Active() != 0 {
				t.Errorf("tenant queues hold %d hooks, %d bytes, %d tenants after shutdown, want none", hooks, bytes, o.Queues.Active())
			}
		}
		if err := w.Close(); err != nil {
			t.Errorf("wal close: %v", err)
		}
	})
	return &node{addr: ln.Addr().String(), router: r, walDir: dir, wal: w}
}

// stored reads every envelope committed to the node's WAL, in order.
func (n *node) stored(t testing.TB) []envelope.Envelope {
	t.Helper()
	var out []envelope.Envelope
	err := wal.ReadDir(vfs.Default, n.walDir, func(r *wal.Record) error {
		if r.Kind != envelope.KindEnvelope {
			return nil
		}
		var e envelope.Envelope
		if _, err := envelope.Decode(r.Payload, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("read wal: %v", err)
	}
	return out
}

// result is one exchange on a fresh connection.
type result struct {
	raw    []byte // every byte the server sent, up to its close or the deadline
	status int
	header http.Header
	body   []byte
	code   string // the JSON error code, if the body is one
	// connClose: the response said Connection: close (net/http moves the
	// header into Response.Close).
	connClose bool
	closed    bool // the server closed the connection after the response
	elapsed   time.Duration
	err       error // reading the response failed
}

func (r *result) String() string {
	return fmt.Sprintf("status=%d code=%q closed=%v err=%v raw=%q", r.status, r.code, r.closed, r.err, trim(r.raw, 400))
}

func trim(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// exchange describes what a client does on its connection.
type exchange struct {
	req        []byte // written as the response is read
	closeWrite bool   // half-close after req: the server sees EOF
	// waitClose waits for the server to close after the response, up to the
	// deadline, so raw holds everything the server sent.
	waitClose bool
	deadline  time.Duration
}

// roundTrip dials addr, writes ex.req, and reads one response. It never
// hangs: every read has a deadline (default 5s).
func roundTrip(t testing.TB, addr string, ex exchange) *result {
	t.Helper()
	if ex.deadline == 0 {
		ex.deadline = 5 * time.Second
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(ex.deadline))
	// Write concurrently: the server may answer and close before it has read
	// everything, and the client must still see the answer.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := c.Write(ex.req); err != nil {
			return
		}
		if ex.closeWrite {
			_ = c.(*net.TCPConn).CloseWrite()
		}
	}()
	defer wg.Wait()
	res := &result{}
	var raw bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &raw))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		res.err = err
		res.raw = raw.Bytes()
		res.elapsed = time.Since(start)
		return res
	}
	res.elapsed = time.Since(start)
	res.status = resp.StatusCode
	res.header = resp.Header
	res.connClose = resp.Close
	res.body, res.err = io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error, Message string }
	if json.Unmarshal(res.body, &e) == nil {
		res.code = e.Error
	}
	if ex.waitClose || resp.Close {
		_, err := io.Copy(io.Discard, br)
		res.closed = err == nil || errors.Is(err, net.ErrClosed) || isReset(err)
	}
	res.raw = raw.Bytes()
	return res
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// post builds a POST with a Content-Length body and extra header lines.
func post(path, body string, headers ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: hooks.test\r\n", path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// rawReq builds a request from a request line, header lines and a body,
// adding nothing: framing is the caller's.
func rawReq(line string, headers []string, body string) []byte {
	var b strings.Builder
	b.WriteString(line + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return []byte(b.String())
}

// chunked frames body as chunks of size n, with the terminating chunk when
// end is true.
func chunked(body []byte, n int, end bool) string {
	var b strings.Builder
	for len(body) > 0 {
		k := min(n, len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, body[:k])
		body = body[k:]
	}
	if end {
		b.WriteString("0\r\n\r\n")
	}
	return b.String()
}

// manyHeaders returns n header lines "X-Pad-i: v" whose values are size
// bytes long.
func manyHeaders(n, size int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("X-Pad-%d: %s", i, strings.Repeat("v", size))
	}
	return out
}

// wantAnswer checks status, JSON code and content type of an answer.
func wantAnswer(t testing.TB, name string, r *result, status int, code string) {
	t.Helper()
	if r.err != nil && r.status == 0 {
		t.Errorf("%s: no response: %v (raw %q)", name, r.err, trim(r.raw, 200))
		return
	}
	if r.status != status {
		t.Errorf("%s: status %d, want %d (%s)", name, r.status, status, r)
	}
	if code != "" {
		if r.code != code {
			t.Errorf("%s: error code %q, want %q (body %q)", name, r.code, code, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: content-type %q, want application/json", name, ct)
		}
	}
}

// wantClose checks that an answer given before the body was read closes the
// connection and says so.
func wantClose(t testing.TB, name string, r *result) {
	t.Helper()
	if !r.connClose {
		t.Errorf("%s: answer without Connection: close (%s)", name, r)
	}
	if !r.closed {
		t.Errorf("%s: server did not close the connection (%s)", name, r)
	}
}

// fasthttpHeader parses a raw request header block into h, as the server
// does before HeaderReceived.
func fasthttpHeader(t testing.TB, h *fasthttp.RequestHeader, raw []byte) {
	t.Helper()
	if err := h.Read(bufio.NewReader(bytes.NewReader(raw))); err != nil {
		t.Fatalf("parse header: %v", err)
	}
}

// rawConn is a client connection kept across requests.
type rawConn struct {
	conn net.Conn
	br   *bufio.Reader
}

// dialRaw opens a connection with a 5s deadline on everything.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return &rawConn{conn: c, br: bufio.NewReader(c)}
}

// read reads one response.
func (c *rawConn) read(t testing.TB) *result {
	t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	res := &result{status: resp.StatusCode, header: resp.Header, connClose: resp.Close}
	res.body, res.err = io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Error string }
	if json.Unmarshal(res.body, &e) == nil {
		res.code = e.Error
	}
	return res
}

// closedByServer reports whether the server closes the connection (before
// the deadline) without sending anything more.
func (c *rawConn) closedByServer(t testing.TB) bool {
	t.Helper()
	n, err := io.Copy(io.Discard, c.br)
	return n == 0 && (err == nil || isReset(err))
}
