package main

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// testServer is an in-process fasthttp server on 127.0.0.1:0 that records
// what it received. Its answer is 201 {"id":"evt_<n>"} unless status says
// otherwise; before runs before every request (e.g. to stall).
type testServer struct {
	url    string
	status func(ctx *fasthttp.RequestCtx) int // nil: always 201
	before func()

	mu      sync.Mutex
	n       int
	arrived []time.Time
	bodies  map[string][32]byte // id of each 201 -> sha256 of the body received
	paths   map[string]int      // request path -> count
}

func startServer(t *testing.T, ts *testServer) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + ln.Addr().String()
	ts.bodies = map[string][32]byte{}
	ts.paths = map[string]int{}
	srv := &fasthttp.Server{Handler: ts.handle}
	go srv.Serve(ln) //nolint:errcheck // ends when the listener closes
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
	if code == fasthttp.StatusCreated {
		ts.bodies[id] = sha256.Sum256(ctx.PostBody())
	}
	ts.mu.Unlock()
	ctx.SetStatusCode(code)
	ctx.SetContentType("application/json")
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
