package main

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// testServer is an in-process fasthttp server on 127.0.0.1:0 that records
// what it received. Its answer is 201 {"id":"evt_<n>"} unless status says
// otherwise; before runs before every request (e.g. to stall). With
// connClose every answer carries Connection: close.
type testServer struct {
	url       string
	status    func(ctx *fasthttp.RequestCtx) int // nil: always 201
	before    func()
	connClose bool
	idle      time.Duration // the server's keep-alive timeout (0: fasthttp's default)

	ln      *countingListener
	mu      sync.Mutex
	n       int
	arrived []time.Time
	bodies  map[string][32]byte // id of each 201 -> sha256 of the body received
	paths   map[string]int      // request path -> count
	conns   map[uint64]int      // connection id -> requests it carried
}

func startServer(t *testing.T, ts *testServer) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + ln.Addr().String()
	ts.ln = &countingListener{Listener: ln}
	ts.bodies = map[string][32]byte{}
	ts.paths = map[string]int{}
	ts.conns = map[uint64]int{}
	srv := &fasthttp.Server{Handler: ts.handle, IdleTimeout: ts.idle}
	go srv.Serve(ts.ln) //nolint:errcheck // ends when the listener closes
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ts
}

func (ts *testServer) handle(ctx *fasthttp.RequestCtx) {
	if ts.before != nil {
		ts.before()
	}
	code := fasthttp.StatusCreated
	if ts.status != nil {
		code = ts.status(ctx)
	}
	ts.mu.Lock()
	ts.n++
	id := "evt_" + strconv.Itoa(ts.n)
	ts.arrived = append(ts.arrived, time.Now())
	ts.paths[string(ctx.Path())]++
	ts.conns[ctx.ConnID()]++
	if code == fasthttp.StatusCreated {
		ts.bodies[id] = sha256.Sum256(ctx.PostBody())
	}
	ts.mu.Unlock()
	ctx.SetStatusCode(code)
	ctx.SetContentType("application/json")
	if ts.connClose {
		ctx.SetConnectionClose()
	}
	if code == fasthttp.StatusCreated {
		ctx.SetBodyString(`{"id": "` + id + `"}`)
	} else {
		ctx.SetBodyString(`{"id":"rejected_` + id + `","error":"nope"}`) // an id, yet not acknowledged
	}
}

func (ts *testServer) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.n
}

// connections returns how many connections carried requests.
func (ts *testServer) connections() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.conns)
}

// countingListener counts the connections it accepts. A run's accept count
// includes loadgen's probe, which connects once at start and sends
// nothing.
type countingListener struct {
	net.Listener
	accepts atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}

// mustConfig parses args as the command line would, with a small payload
// pool so that tests start fast.
func mustConfig(t *testing.T, args ...string) *Config {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", args, err)
	}
	cfg.PoolPerClass = 64
	return cfg
}

// mustRun runs a load and fails the test on any error.
func mustRun(t *testing.T, args ...string) *Summary {
	t.Helper()
	sum, err := Run(context.Background(), mustConfig(t, args...), io.Discard)
	if err != nil {
		t.Fatalf("Run(%q): %v", args, err)
	}
	return sum
}

// freePort returns an address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
