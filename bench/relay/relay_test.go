package main

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serve serves handler on a loopback port until the test ends and returns
// its address.
func serve(t *testing.T, handler fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: handler}
	go srv.Serve(ln) //nolint:errcheck // ends when the server shuts down
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// startRelay serves a relay to the receiver URL to and returns its address.
func startRelay(t *testing.T, to string) (string, *relay) {
	t.Helper()
	r, err := newRelay(to, 8, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, r.handle), r
}

// post sends a POST with body and one custom header to the relay.
func post(addr, body string) (int, string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/webhooks/t1/demo")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("X-Hook-Token", "tok-1")
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	err := fasthttp.DoTimeout(req, resp, 5*time.Second)
	return resp.StatusCode(), string(resp.Body()), err
}

// TestRelayForwardsThenAnswers: the receiver gets the method, the headers
// and the body at the -to URL, and the relay's 201 comes only after the
// receiver's 2xx.
func TestRelayForwardsThenAnswers(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var method, path, token, ctype, body string
	recv := serve(t, func(ctx *fasthttp.RequestCtx) {
		mu.Lock()
		method, path, body = string(ctx.Method()), string(ctx.RequestURI()), string(ctx.PostBody())
		token, ctype = string(ctx.Request.Header.Peek("X-Hook-Token")), string(ctx.Request.Header.ContentType())
		mu.Unlock()
		close(arrived)
		<-release
		ctx.SetStatusCode(fasthttp.StatusNoContent)
	})
	addr, r := startRelay(t, "http://"+recv+"/in/relay")
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		code, b, err := post(addr, `{"id":"evt_1"}`)
		done <- answer{code, b, err}
	}()
	<-arrived
	select {
	case a := <-done:
		t.Fatalf("the relay answered %d %s before the receiver did", a.code, a.body)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	a := <-done
	if a.err != nil {
		t.Fatalf("POST to the relay: %v", a.err)
	}
	if a.code != fasthttp.StatusCreated || !strings.HasPrefix(a.body, `{"id":"evt_`) {
		t.Fatalf("relay answered %d %s: want 201 {\"id\":\"evt_...\"}", a.code, a.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if method != "POST" || path != "/in/relay" || token != "tok-1" || ctype != "application/json" || body != `{"id":"evt_1"}` {
		t.Fatalf("receiver got %s %s token %q type %q body %q", method, path, token, ctype, body)
	}
	if r.forwarded.Load() != 1 || r.failed.Load() != 0 {
		t.Fatalf("forwarded %d failed %d: want 1 and 0", r.forwarded.Load(), r.failed.Load())
	}
}

// TestRelayBadGateway: a receiver's non-2xx, and a receiver that is not
// there, are 502.
func TestRelayBadGateway(t *testing.T) {
	failing := serve(t, func(ctx *fasthttp.RequestCtx) { ctx.SetStatusCode(fasthttp.StatusInternalServerError) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	for _, to := range []string{"http://" + failing + "/in", "http://" + gone + "/in"} {
		addr, r := startRelay(t, to)
		code, body, err := post(addr, `{}`)
		if err != nil {
			t.Fatalf("POST to the relay: %v", err)
		}
		if code != fasthttp.StatusBadGateway || !strings.Contains(body, `"error":"bad_gateway"`) {
			t.Errorf("to %s: relay answered %d %s, want 502 bad_gateway", to, code, body)
		}
		if r.forwarded.Load() != 0 || r.failed.Load() != 1 {
			t.Errorf("to %s: forwarded %d failed %d: want 0 and 1", to, r.forwarded.Load(), r.failed.Load())
		}
	}
}

func TestNewRelayRefuses(t *testing.T) {
	for _, to := range []string{"", "https://x/in", "ftp://x/", "/in", "http:///in"} {
		if _, err := newRelay(to, 1, time.Second); err == nil {
			t.Errorf("newRelay(%q) = nil error", to)
		}
	}
}
