package edge_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHeaderBlockBounds checks a header block against
// limits.max_header_bytes (4KiB here) and against the transport's read
// buffer (the limit plus 8KiB): the router answers 400 invalid_header up
// to the buffer, fasthttp 431 past it, and neither leaves the connection
// hanging.
func TestHeaderBlockBounds(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct {
		name   string
		req    []byte
		status int
		code   string
	}{
		{"at the limit", withHeaderBlock("/webhooks/demo", "x", 4096), 201, ""},
		{"one past the limit", withHeaderBlock("/webhooks/demo", "x", 4097), 400, "invalid_header"},
		{"inside the transport slack", withHeaderBlock("/webhooks/demo", "x", 11<<10), 400, "invalid_header"},
		{"far past the transport cap", withHeaderBlock("/webhooks/demo", "x", 64<<10), 431, "invalid_header"},
		{"far past the cap, unknown source", withHeaderBlock("/webhooks/nope", "x", 64<<10), 431, "invalid_header"},
		{"a 1MiB header line", withHeaderBlock("/webhooks/demo", "x", 1<<20), 431, "invalid_header"},
		{"many small fields past the cap", post("/webhooks/demo", "x", manyHeaders(4000, 1)...), 431, "invalid_header"},
		{"a request line past the cap", post("/webhooks/"+strings.Repeat("a", 32<<10), "x"), 431, "invalid_header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := roundTrip(t, n.addr, exchange{req: tc.req, deadline: 3 * time.Second})
			wantAnswer(t, tc.name, r, tc.status, tc.code)
			if tc.status != 201 {
				wantClose(t, tc.name, r)
			}
			if r.elapsed > time.Second {
				t.Errorf("answered after %v", r.elapsed)
			}
		})
	}
}

// TestMissingContentLength: a POST with neither Content-Length nor
// Transfer-Encoding has an empty body (RFC 9112 §6.3); it is stored as an
// empty hook, and bytes after the header block are the next request.
func TestMissingContentLength(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	r := roundTrip(t, n.addr, exchange{req: rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h"}, "")})
	wantAnswer(t, "no length", r, 201, "")
	if e := findStored(t, n.stored(t), r.body); len(e.Body) != 0 {
		t.Errorf("stored body %q, want empty", e.Body)
	}
	// What follows is parsed as a request, not kept as the body.
	r = roundTrip(t, n.addr, exchange{req: rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h"}, "not a body\r\n\r\n"), closeWrite: true})
	wantAnswer(t, "no length, trailing bytes", r, 201, "")
	if e := findStored(t, n.stored(t), r.body); len(e.Body) != 0 {
		t.Errorf("stored body %q, want empty", e.Body)
	}
}

// TestLyingContentLength: a body that ends (the client half-closes) before
// its declared length is 400 invalid_body and nothing is committed, both
// when fasthttp's prefetch of the first 8KiB notices and when the router's
// reader does.
func TestLyingContentLength(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct {
		name     string
		declared int
		sent     int
	}{
		{"declares 1000, sends 10", 1000, 10},
		{"declares 1000, sends none", 1000, 0},
		{"declares 8193, sends 8192", 8193, 8192},
		{"declares 100000, sends 9000", 100000, 9000},
		{"declares 1MiB, sends 1MiB-1", 1 << 20, 1<<20 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", fmt.Sprintf("Content-Length: %d", tc.declared)}, strings.Repeat("b", tc.sent))
			r := roundTrip(t, n.addr, exchange{req: req, closeWrite: true})
			wantAnswer(t, tc.name, r, 400, "invalid_body")
			wantClose(t, tc.name, r)
			if got := len(n.stored(t)); got != 0 {
				t.Errorf("a short body committed %d records", got)
			}
		})
	}
	wantPipelineIdle(t, n)
}

// TestOversizedAnsweredFromHeaders: a declared length past the bound is
// refused from the header alone: the client, which has sent one body byte
// and waits, gets 413 at once, with Connection: close, and the server
// closes.
func TestOversizedAnsweredFromHeaders(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct{ name, path, length string }{
		{"2MiB against 1MiB", "/webhooks/demo", "2097152"},
		{"1GiB against 1MiB", "/webhooks/demo", "1073741824"},
		{"past the source's own 100 bytes", "/webhooks/small", "101"},
		{"unknown source", "/webhooks/nope", "2097152"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rawReq("POST "+tc.path+" HTTP/1.1", []string{"Host: h", "Content-Length: " + tc.length}, "x")
			r := roundTrip(t, n.addr, exchange{req: req})
			wantAnswer(t, tc.name, r, 413, "payload_too_large")
			wantClose(t, tc.name, r)
			if r.elapsed > time.Second {
				t.Errorf("413 took %v; it must come from the headers alone", r.elapsed)
			}
		})
	}
	// A sender that keeps writing its whole body still reads the 413.
	req := rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Content-Length: 4194304"}, strings.Repeat("z", 4<<20))
	r := roundTrip(t, n.addr, exchange{req: req})
	wantAnswer(t, "sender keeps writing", r, 413, "payload_too_large")
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("413s committed %d records", got)
	}
}

// TestChunkedBounds: a chunked body is bounded too, by the node's limit and
// by the source's; at the bound it is stored whole, past it 413 with
// Connection: close, and nothing is committed.
func TestChunkedBounds(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	chunkedReq := func(path string, body []byte, size int, end bool) []byte {
		return rawReq("POST "+path+" HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, chunked(body, size, end))
	}
	mib := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for _, tc := range []struct {
		name   string
		req    []byte
		status int
		body   []byte // stored, for a 201
	}{
		{"at the node limit", chunkedReq("/webhooks/demo", mib, 64<<10, true), 201, mib},
		{"one byte past the node limit", chunkedReq("/webhooks/demo", append(mib[:len(mib):len(mib)], 'x'), 64<<10, true), 413, nil},
		{"one chunk past the node limit", chunkedReq("/webhooks/demo", append(mib[:len(mib):len(mib)], mib[:1000]...), 1000, true), 413, nil},
		{"a single 2MiB chunk", chunkedReq("/webhooks/demo", append(mib[:len(mib):len(mib)], mib...), 2<<20, true), 413, nil},
		{"past the node limit, never ended", chunkedReq("/webhooks/demo", append(mib[:len(mib):len(mib)], mib...), 32<<10, false), 413, nil},
		{"at the source limit", chunkedReq("/webhooks/small", mib[:100], 7, true), 201, mib[:100]},
		{"past the source limit", chunkedReq("/webhooks/small", mib[:101], 7, true), 413, nil},
		{"empty", chunkedReq("/webhooks/demo", nil, 1, true), 201, []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(n.stored(t))
			r := roundTrip(t, n.addr, exchange{req: tc.req})
			if tc.status == 201 {
				wantAnswer(t, tc.name, r, 201, "")
				if e := findStored(t, n.stored(t), r.body); !bytes.Equal(e.Body, tc.body) {
					t.Errorf("stored %d bytes, want the %d sent", len(e.Body), len(tc.body))
				}
				return
			}
			wantAnswer(t, tc.name, r, tc.status, "payload_too_large")
			wantClose(t, tc.name, r)
			if got := len(n.stored(t)) - before; got != 0 {
				t.Errorf("a 413 committed %d records", got)
			}
		})
	}
	wantPipelineIdle(t, n)
}

// TestMalformedChunked: broken chunked framing is 400 invalid_body, with
// Connection: close, and nothing is committed.
func TestMalformedChunked(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct{ name, body string }{
		{"size not hex", "zz\r\nabc\r\n0\r\n\r\n"},
		{"size overflows", "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n"},
		{"negative size", "-5\r\nabcde\r\n0\r\n\r\n"},
		{"data longer than the size", "3\r\nabcdef\r\n0\r\n\r\n"},
		{"no CRLF after the data", "3\r\nabcXY0\r\n\r\n"},
		{"bare LF framing", "3\nabc\n0\n\n"},
		{"ends inside a chunk", "a\r\nabc"},
		{"ends before the last chunk", "3\r\nabc\r\n"},
		{"ends before the final CRLF", "3\r\nabc\r\n0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, tc.body)
			r := roundTrip(t, n.addr, exchange{req: req, closeWrite: true})
			wantAnswer(t, tc.name, r, 400, "invalid_body")
			wantClose(t, tc.name, r)
			if got := len(n.stored(t)); got != 0 {
				t.Errorf("malformed chunked framing committed %d records", got)
			}
		})
	}
	wantPipelineIdle(t, n)
}

// TestExpectContinue: a refusal decided from the header goes out instead
// of "100 Continue", so the client never sends the body; an accepted
// request gets 100 Continue, then its 201.
func TestExpectContinue(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct {
		name, path, length string
		status             int
		code               string
	}{
		{"unknown source", "/webhooks/nope", "5", 404, "not_found"},
		{"bad shape", "/webhooks/a/b", "5", 404, "not_found"},
		{"oversized", "/webhooks/demo", "2097152", 413, "payload_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, n.addr)
			head := rawReq("POST "+tc.path+" HTTP/1.1", []string{"Host: h", "Expect: 100-continue", "Content-Length: " + tc.length}, "")
			if _, err := c.conn.Write(head); err != nil {
				t.Fatal(err)
			}
			r := c.read(t)
			wantAnswer(t, tc.name, r, tc.status, tc.code)
			wantCloseConn(t, tc.name, r, c)
		})
	}
	t.Run("accepted", func(t *testing.T) {
		c := dialRaw(t, n.addr)
		head := rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Expect: 100-continue", "Content-Length: 5"}, "")
		if _, err := c.conn.Write(head); err != nil {
			t.Fatal(err)
		}
		line, err := c.br.ReadString('\n')
		if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("want 100 Continue first, got %q (%v)", line, err)
		}
		if blank, _ := c.br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("100 Continue not followed by a blank line: %q", blank)
		}
		if _, err := c.conn.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		r := c.read(t)
		wantAnswer(t, "accepted", r, 201, "")
		if e := findStored(t, n.stored(t), r.body); string(e.Body) != "hello" {
			t.Errorf("stored %q, want hello", e.Body)
		}
	})
}

// wantCloseConn is wantClose for a kept connection.
func wantCloseConn(t testing.TB, name string, r *result, c *rawConn) {
	t.Helper()
	if !r.connClose {
		t.Errorf("%s: answer without Connection: close (%s)", name, r)
	}
	if !c.closedByServer(t) {
		t.Errorf("%s: server did not close the connection", name)
	}
}

// TestAbsurdTargets: request targets no resolver accepts are 404, however
// odd; one too long for the transport's buffer is refused by the
// transport; one fasthttp cannot parse is 400.
func TestAbsurdTargets(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct {
		name   string
		target string
		status int
		code   string
	}{
		{"8KB path", "/webhooks/" + strings.Repeat("a", 8000), 404, "not_found"},
		{"dot-dot", "/webhooks/../demo", 404, "not_found"},
		{"dot", "/webhooks/./demo", 404, "not_found"},
		{"dot only", "/.", 404, "not_found"},
		{"percent-encoded source", "/webhooks/%64emo", 404, "not_found"},
		{"percent-encoded NUL", "/webhooks/demo%00", 404, "not_found"},
		{"double slash", "//webhooks//demo", 404, "not_found"},
		{"1000 slashes", strings.Repeat("/", 1000), 404, "not_found"},
		{"20 segments", strings.Repeat("/webhooks", 19) + "/demo", 404, "not_found"},
		{"fragment", "/webhooks/nope#demo", 404, "not_found"},
		{"empty query on unknown", "/webhooks/nope?", 404, "not_found"},
		{"past the transport cap", "/webhooks/" + strings.Repeat("a", 40<<10), 431, "invalid_header"},
		{"asterisk", "*", 400, "invalid_header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := roundTrip(t, n.addr, exchange{req: rawReq("POST "+tc.target+" HTTP/1.1", []string{"Host: h", "Content-Length: 1"}, "x")})
			wantAnswer(t, tc.name, r, tc.status, tc.code)
			wantClose(t, tc.name, r)
		})
	}
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("absurd targets committed %d records", got)
	}
}

// TestBadInputMemory sends a few thousand bad requests (chunked bodies past
// a 256KiB bound, lengths of 900KB that send 20KB, header blocks past the limits, oversized
// declared lengths, 404s) from many connections at once and checks that
// the heap in use afterwards is within 32MiB of where it started: no
// request leaves its body or header behind (keeping even a tenth of what
// one such request buffers would pass the bound). Every request must be
// answered.
func TestBadInputMemory(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	mib := strings.Repeat("m", 1<<20)
	kinds := []struct {
		name  string
		req   []byte
		close bool // half-close after writing
	}{
		{"chunked past the bound", rawReq("POST /webhooks/mid HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, chunked([]byte(mib[:256<<10]+"tail"), 64<<10, true)), false},
		{"lying length", rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Content-Length: 900000"}, mib[:20000]), true},
		{"header block past the limit", withHeaderBlock("/webhooks/demo", "x", 8<<10), false},
		{"header block past the cap", withHeaderBlock("/webhooks/demo", "x", 20<<10), false},
		{"oversized declared", rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Content-Length: 999999999"}, "x"), false},
		{"unknown source", post("/webhooks/nope", mib[:1000]), false},
	}
	requests := 3000
	if testing.Short() || raceEnabled {
		requests = 1200
	}
	const workers = 16
	send := func(count int) map[int]int {
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					k := kinds[i%len(kinds)]
					st := bareExchange(n.addr, k.req, k.close)
					mu.Lock()
					statuses[st]++
					mu.Unlock()
				}
			}()
		}
		for i := range count {
			next <- i
		}
		close(next)
		wg.Wait()
		return statuses
	}
	send(len(kinds) * workers) // warm the pools
	before := heapInUse()
	statuses := send(requests)
	after := heapInUse()
	t.Logf("%d bad requests: statuses %v; heap in use %d KiB -> %d KiB", requests, statuses, before>>10, after>>10)
	if statuses[0] > 0 {
		t.Errorf("%d requests got no answer", statuses[0])
	}
	for st := range statuses {
		if st < 400 {
			t.Errorf("a bad request was answered %d", st)
		}
	}
	if growth := int64(after) - int64(before); growth > 32<<20 {
		t.Errorf("heap in use grew by %d MiB over %d bad requests", growth>>20, requests)
	}
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("bad requests committed %d records", got)
	}
	wantPipelineIdle(t, n)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// bareExchange sends req on a new connection and returns the answer's
// status, or 0 when there was none. It does not use the testing.T: it runs
// on worker goroutines.
func bareExchange(addr string, req []byte, closeWrite bool) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := c.Write(req); err == nil && closeWrite {
			_ = c.(*net.TCPConn).CloseWrite()
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	<-done
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// wantPipelineIdle checks that every admitted byte was released: once the
// answers are out, the router's pipeline reservation is back to 0.
func wantPipelineIdle(t testing.TB, n *node) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for n.router.PipelineBytes() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := n.router.PipelineBytes(); got != 0 {
		t.Errorf("PipelineBytes() = %d after every request was answered, want 0", got)
	}
}

// TestFraming: framing headers fasthttp cannot trust are refused with 400
// invalid_header before any body byte is kept; Content-Length together
// with chunked is read as chunked and the connection closed (RFC 9112
// §6.1, §6.3), so the rest of the stream is never parsed as a request.
func TestFraming(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct {
		name    string
		headers []string
		body    string
		status  int
		code    string
		stored  string
	}{
		{"unknown transfer coding", []string{"Transfer-Encoding: gzip"}, "hello", 400, "invalid_header", ""},
		{"chunked not last", []string{"Transfer-Encoding: chunked, gzip"}, chunked([]byte("hello"), 5, true), 400, "invalid_header", ""},
		{"coding before chunked", []string{"Transfer-Encoding: gzip, chunked"}, chunked([]byte("hello"), 5, true), 400, "invalid_header", ""},
		{"transfer-encoding twice", []string{"Transfer-Encoding: chunked", "Transfer-Encoding: chunked"}, chunked([]byte("hello"), 5, true), 400, "invalid_header", ""},
		{"content-length twice", []string{"Content-Length: 5", "Content-Length: 5"}, "hello", 400, "invalid_header", ""},
		{"content-lengths differ", []string{"Content-Length: 5", "Content-Length: 3"}, "hello", 400, "invalid_header", ""},
		{"content-length list", []string{"Content-Length: 5, 5"}, "hello", 400, "invalid_header", ""},
		{"negative content-length", []string{"Content-Length: -1"}, "hello", 400, "invalid_header", ""},
		{"signed content-length", []string{"Content-Length: +5"}, "hello", 400, "invalid_header", ""},
		{"content-length overflows", []string{"Content-Length: 99999999999999999999999"}, "hello", 400, "invalid_header", ""},
		{"chunked in capitals", []string{"Transfer-Encoding: CHUNKED"}, chunked([]byte("hello"), 2, true), 201, "", "hello"},
		{"chunk extension", []string{"Transfer-Encoding: chunked"}, "5;ext=1\r\nhello\r\n0\r\n\r\n", 201, "", "hello"},
		{"trailer field", []string{"Transfer-Encoding: chunked"}, "5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n", 201, "", "hello"},
		{"content-length and chunked", []string{"Content-Length: 3", "Transfer-Encoding: chunked"}, chunked([]byte("hello"), 5, true), 201, "", "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rawReq("POST /webhooks/demo HTTP/1.1", append([]string{"Host: h"}, tc.headers...), tc.body)
			// A request follows on the same connection. After a refusal, or
			// after a request whose framing was ambiguous, it must not be
			// answered: the connection is closed instead.
			req = append(req, post("/webhooks/demo", "next")...)
			ambiguous := tc.status != 201 || tc.name == "content-length and chunked"
			before := len(n.stored(t))
			r := roundTrip(t, n.addr, exchange{req: req, waitClose: ambiguous})
			wantAnswer(t, tc.name, r, tc.status, tc.code)
			after := n.stored(t)
			if ambiguous {
				wantClose(t, tc.name, r)
				if k := bytes.Count(r.raw, []byte("HTTP/1.1 ")); k != 1 {
					t.Errorf("%d responses on the connection, want 1: %q", k, r.raw)
				}
			}
			if tc.status != 201 {
				if len(after) != before {
					t.Errorf("refused framing committed %d records", len(after)-before)
				}
				return
			}
			if e := findStored(t, after, r.body); string(e.Body) != tc.stored {
				t.Errorf("stored %q, want %q", e.Body, tc.stored)
			}
		})
	}
}

// TestTransferEncodingIdentity: "Transfer-Encoding: identity" says the
// body length cannot be known from the header (RFC 9112 §6.3: a
// Transfer-Encoding whose last coding is not chunked is 400 and the
// connection is closed). fasthttp drops the field and treats the request
// as having no body, so without a check in the router the hook is stored
// empty (201) and its body is parsed as the next request: a lost body, and
// behind a balancer that frames such a body by close, request smuggling.
func TestTransferEncodingIdentity(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, field := range []string{"Transfer-Encoding: identity", "transfer-encoding: IDENTITY"} {
		t.Run(field, func(t *testing.T) {
			req := rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", field}, "hello")
			r := roundTrip(t, n.addr, exchange{req: req, closeWrite: true, waitClose: true})
			wantAnswer(t, field, r, 400, "invalid_header")
			wantClose(t, field, r)
			if got := len(n.stored(t)); got != 0 {
				t.Errorf("committed %d records", got)
			}
		})
	}
}
