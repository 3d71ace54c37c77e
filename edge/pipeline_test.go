package edge_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/wal"
)

// tinyPipelineConfig admits at most 2040 bytes of requests node-wide
// (router step 9), the least that holds one whole request (body bound plus
// header bound): one 1000-byte hook fits, two do not.
const tinyPipelineConfig = `node: {name: test}
limits: {max_body_bytes: 1000, max_header_bytes: 1KiB, max_pipeline_bytes: 2040, read_timeout: 3s, write_timeout: 3s, idle_timeout: 3s}
route_resolver: {type: path, prefix: [webhooks]}
sources:
  demo: {verify: {type: none}}
`

// gatedWAL is a Committer that holds every commit until the test opens the
// gate, then hands it to the real WAL: a commit loop that is slow.
type gatedWAL struct {
	next    edge.Committer
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func newGatedWAL() *gatedWAL {
	return &gatedWAL{entered: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (g *gatedWAL) Commit(r *wal.Request) error {
	g.entered <- struct{}{}
	<-g.gate
	return g.next.Commit(r)
}

func (g *gatedWAL) open() { g.once.Do(func() { close(g.gate) }) }

// TestPipelineOverloaded: while one hook waits for a slow commit loop, the
// node's pipeline bound refuses the next with 503 overloaded, Retry-After
// and Connection: close, without committing it; once the first commits,
// the reservation is released and hooks are admitted again.
func TestPipelineOverloaded(t *testing.T) {
	g := newGatedWAL()
	n := startNode(t, loadConfig(t, tinyPipelineConfig), func(o *edge.Options) {
		g.next = o.WAL
		o.WAL = g
	})
	t.Cleanup(g.open) // before the node stops: nothing may stay blocked
	body := strings.Repeat("p", 1000)
	first := make(chan *result, 1)
	go func() { first <- roundTrip(t, n.addr, exchange{req: post("/webhooks/demo", body)}) }()
	select {
	case <-g.entered:
	case <-time.After(3 * time.Second):
		t.Fatal("the first hook never reached the commit loop")
	}
	if got := n.router.PipelineBytes(); got < 1000 {
		t.Errorf("PipelineBytes() = %d while a 1000-byte hook waits, want at least 1000", got)
	}
	for _, tc := range []struct {
		name string
		req  []byte
	}{
		{"second hook", post("/webhooks/demo", body)},
		{"chunked hook (reserves its bound)", rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, chunked([]byte("tiny"), 4, true))},
	} {
		r := roundTrip(t, n.addr, exchange{req: tc.req})
		wantAnswer(t, tc.name, r, 503, "overloaded")
		wantClose(t, tc.name, r)
		if ra := r.header.Get("Retry-After"); ra == "" {
			t.Errorf("%s: 503 without Retry-After", tc.name)
		} else if s, err := strconv.Atoi(ra); err != nil || s < 1 {
			t.Errorf("%s: Retry-After %q is not a number of seconds", tc.name, ra)
		}
	}
	// A hook that fits next to the waiting one is still admitted: the bound
	// is bytes, not requests.
	small := make(chan *result, 1)
	go func() { small <- roundTrip(t, n.addr, exchange{req: post("/webhooks/demo", "s")}) }()
	select {
	case <-g.entered:
	case <-time.After(3 * time.Second):
		t.Fatal("a small hook next to the waiting one was not admitted")
	}
	g.open()
	wantAnswer(t, "first hook", <-first, 201, "")
	wantAnswer(t, "small hook", <-small, 201, "")
	wantPipelineIdle(t, n)
	r := roundTrip(t, n.addr, exchange{req: post("/webhooks/demo", body)})
	wantAnswer(t, "after the commit", r, 201, "")
	if got := len(n.stored(t)); got != 3 {
		t.Errorf("%d hooks stored, want 3 (the refused ones must not be)", got)
	}
	wantPipelineIdle(t, n)
}

// failingWAL is a Committer that fails every commit with err.
type failingWAL struct{ err error }

func (f failingWAL) Commit(*wal.Request) error { return f.err }

// TestCommitFailure: our own failure to store a hook is a 503 with
// Retry-After (a sender retries it), never a 4xx; a record the WAL refuses
// as too large for a batch is 413, and a full disk 503; as the body was
// read whole, the connection stays usable for both.
func TestCommitFailure(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
		close  bool
	}{
		{wal.ErrFatal, 503, "unavailable", true},
		{wal.ErrClosed, 503, "unavailable", true},
		{errors.New("disk on fire"), 503, "unavailable", true},
		{wal.ErrTooLarge, 413, "payload_too_large", false},
		// A full disk: 503 until space returns, on a sound connection.
		{fmt.Errorf("%w: cannot write wal file", wal.ErrNoSpace), 503, "unavailable", false},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			n := startNode(t, loadConfig(t, pathConfig), func(o *edge.Options) { o.WAL = failingWAL{tc.err} })
			c := dialRaw(t, n.addr)
			if _, err := c.conn.Write(post("/webhooks/demo", "hook")); err != nil {
				t.Fatal(err)
			}
			r := c.read(t)
			wantAnswer(t, tc.err.Error(), r, tc.status, tc.code)
			if tc.status == 503 && r.header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
			if r.connClose != tc.close {
				t.Errorf("Connection: close is %v, want %v", r.connClose, tc.close)
			}
			if !tc.close {
				if _, err := c.conn.Write(post("/webhooks/nope", "x")); err != nil {
					t.Fatal(err)
				}
				wantAnswer(t, "next request on the connection", c.read(t), 404, "not_found")
			}
			wantPipelineIdle(t, n)
		})
	}
}

// TestPipelineReleasedOnDisconnect: a client that goes away in the middle
// of its body releases what its hook reserved.
func TestPipelineReleasedOnDisconnect(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, tc := range []struct{ name, framing, body string }{
		{"length", "Content-Length: 500000", strings.Repeat("d", 100000)},
		{"chunked", "Transfer-Encoding: chunked", chunked([]byte(strings.Repeat("d", 100000)), 30000, false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, n.addr)
			if _, err := c.conn.Write(rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", tc.framing}, tc.body)); err != nil {
				t.Fatal(err)
			}
			// Wait until the router holds the reservation, then vanish.
			deadline := time.Now().Add(3 * time.Second)
			for n.router.PipelineBytes() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n.router.PipelineBytes() == 0 {
				t.Fatal("the hook was never admitted")
			}
			c.conn.Close()
			wantPipelineIdle(t, n)
		})
	}
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("abandoned hooks committed %d records", got)
	}
}

// TestConnectionLimit: past limits.max_connections a new connection is
// refused at once with a 503 and closed, never queued; once a connection
// goes away, new ones are served again.
func TestConnectionLimit(t *testing.T) {
	cfg := loadConfig(t, strings.Replace(pathConfig, "max_header_count: 20,", "max_header_count: 20, max_connections: 2,", 1))
	n := startNode(t, cfg)
	held := []*rawConn{dialRaw(t, n.addr), dialRaw(t, n.addr)}
	for _, c := range held {
		// Make sure each holds a worker: one request answered, kept alive.
		if _, err := c.conn.Write(post("/webhooks/demo", "held")); err != nil {
			t.Fatal(err)
		}
		wantAnswer(t, "held connection", c.read(t), 201, "")
	}
	r := roundTrip(t, n.addr, exchange{req: post("/webhooks/demo", "third"), deadline: 2 * time.Second})
	if r.status != 503 || !r.connClose || !r.closed || r.elapsed > time.Second {
		t.Errorf("a connection past max_connections: want a prompt 503 and a close, got %s after %v", r, r.elapsed)
	}
	// It is the edge's answer: JSON overloaded with Retry-After.
	wantAnswer(t, "past max_connections", r, 503, "overloaded")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("past max_connections: 503 without Retry-After: %q", r.raw)
	}
	held[0].conn.Close()
	deadline := time.Now().Add(3 * time.Second)
	for {
		r = roundTrip(t, n.addr, exchange{req: post("/webhooks/demo", "after")})
		if r.status == 201 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantAnswer(t, "after a connection closed", r, 201, "")
	if got := len(n.stored(t)); got != 3 {
		t.Errorf("%d hooks stored, want 3", got)
	}
}
