package edge_test

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/wal"
)

// instantWAL is a Committer that makes nothing durable: it numbers the
// record the way the commit loop would and returns at once, so a test or
// benchmark measures the router and nothing else. It is safe for
// concurrent use. inspect, when set, sees every record.
type instantWAL struct {
	seq     atomic.Uint64
	inspect func(r *wal.Request)
}

func (w *instantWAL) Commit(r *wal.Request) error {
	seq := w.seq.Add(1)
	r.Seq = seq
	r.ID = envelope.MakeID(1, 7, seq)
	if w.inspect != nil {
		w.inspect(r)
	}
	return nil
}

// routerPathHeader is a realistic webhook request header; %d is the body
// length.
const routerPathHeader = "POST /webhooks/demo HTTP/1.1\r\n" +
	"Host: hooks.example.com\r\n" +
	"User-Agent: Stripe/1.0 (+https://stripe.com/docs/webhooks)\r\n" +
	"Content-Type: application/json; charset=utf-8\r\n" +
	"Stripe-Signature: t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd\r\n" +
	"Cookie: a=1; b=2\r\n" +
	"Accept: */*\r\n" +
	"Content-Length: %d\r\n\r\n"

// pathRouter is a router of pathConfig in front of w.
func pathRouter(t testing.TB, w edge.Committer) *edge.Router {
	t.Helper()
	return configRouter(t, pathConfig, w)
}

// configRouter is a router of a config in front of w.
func configRouter(t testing.TB, yaml string, w edge.Committer) *edge.Router {
	t.Helper()
	cfg := loadConfig(t, yaml)
	return storeRouter(t, cfg, source.NewStatic(cfg), w)
}

// storeRouter is a router of cfg serving from store in front of w.
func storeRouter(t testing.TB, cfg *config.Config, store source.Store, w edge.Committer) *edge.Router {
	t.Helper()
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	// The tenant stage as the node runs it: its token buckets and queue
	// caps are on the path too, and a tenant being erased elsewhere, so
	// step 6 looks a tenant up in a set that is not empty.
	var closed tenant.Closed
	closed.Close("being-erased")
	return edge.NewRouter(edge.Options{
		Closed:        &closed,
		Resolver:      res,
		Sources:       store,
		WAL:           w,
		Limits:        cfg.Limits,
		RoutesEnabled: cfg.Routes.Enabled,
		Now:           func() int64 { return 1 },
		Tenants:       tenant.NewLimiter(cfg.RateLimits, func() int64 { return 1 }),
		Queues:        tenant.NewQueues(cfg.RateLimits),
	})
}

// pathCtx is one request through the router path as the server presents
// it: a parsed header, the body as a stream (or buffered), then
// HeaderReceived and Handle. It is reused request after request, as the
// server reuses its RequestCtx.
type pathCtx struct {
	router *edge.Router
	ctx    fasthttp.RequestCtx
	body   []byte
	br     bytes.Reader
}

func newPathCtx(t testing.TB, r *edge.Router, bodyLen int) *pathCtx {
	t.Helper()
	return newTargetCtx(t, r, "", bodyLen)
}

// newTargetCtx is newPathCtx posting to target ("": /webhooks/demo) on the
// host "hooks.example.com".
func newTargetCtx(t testing.TB, r *edge.Router, target string, bodyLen int) *pathCtx {
	t.Helper()
	p := &pathCtx{
		router: r,
		body:   bytes.Repeat([]byte(`{"k":"v"}`), bodyLen/9+1)[:bodyLen],
	}
	// The request comes over a connection of the edge's listener, so the
	// sender's address is stored too.
	p.ctx.Init2(listenedConn(t), nil, false)
	head := routerPathHeader
	if target != "" {
		head = strings.Replace(head, "/webhooks/demo", target, 1)
	}
	fasthttpHeader(t, &p.ctx.Request.Header, fmt.Appendf(nil, head, bodyLen))
	return p
}

// serve runs one request through the router and returns its status.
func (p *pathCtx) serve(stream bool) int {
	p.ctx.Response.Reset()
	if stream {
		p.br.Reset(p.body)
		p.ctx.Request.SetBodyStream(&p.br, len(p.body))
	} else {
		p.ctx.Request.SetBodyRaw(p.body)
	}
	p.router.HeaderReceived(&p.ctx.Request.Header)
	p.router.Handle(&p.ctx)
	return p.ctx.Response.StatusCode()
}

// TestRouterPathZeroAllocs proves that a request from its parsed header to
// its 201 (resolve, source lookup, header checks, pipeline reservation, the
// envelope encoded into a pooled WAL record, the answer) allocates nothing,
// with the body streamed and with it buffered. The first request is decoded
// back, so the path measured is one that stores the hook whole.
func TestRouterPathZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    string
		stream bool
		params int // route parameters stored
		tenant string
		// setup, when set, serves from its store and posts to its target
		// (default: the config's static store, /webhooks/demo).
		setup func(testing.TB, *config.Config) (source.Store, string)
	}{
		{"stream", pathConfig, true, 0, "default", nil},
		{"buffered", pathConfig, false, 0, "default", nil},
		{"route guard", routedConfig, true, 1, "default", nil},
		{"host resolver", hostAllocConfig, true, 0, "hooks", nil},
		{"token resolver", tokenAllocConfig, true, 1, "acme", func(t testing.TB, cfg *config.Config) (source.Store, string) {
			p := openPersistent(t, cfg)
			_, tok := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "demo", Token: source.TokenAuto})
			return p, "/webhooks/catch/a1/" + tok
		}},
	} {
		stream := tc.stream
		t.Run(tc.name, func(t *testing.T) {
			w := &instantWAL{}
			cfg := loadConfig(t, tc.cfg)
			var store source.Store = source.NewStatic(cfg)
			target := ""
			if tc.setup != nil {
				store, target = tc.setup(t, cfg)
			}
			p := newTargetCtx(t, storeRouter(t, cfg, store, w), target, 1500)
			var got envelope.Envelope
			w.inspect = func(r *wal.Request) {
				if _, err := envelope.Decode(r.Buf[wal.FrameHeaderSize:], &got); err != nil {
					t.Errorf("committed record does not decode: %v", err)
				}
			}
			if st := p.serve(stream); st != fasthttp.StatusCreated {
				t.Fatalf("status %d, want 201: %s", st, p.ctx.Response.Body())
			}
			w.inspect = nil
			if got.TenantID != tc.tenant || got.SourceID != "demo" || !bytes.Equal(got.Body, p.body) {
				t.Fatalf("stored tenant %q source %q body %d bytes, want %s, demo and the %d bytes sent",
					got.TenantID, got.SourceID, len(got.Body), tc.tenant, len(p.body))
			}
			if !strings.HasPrefix(got.RemoteAddr, "127.0.0.1:") {
				t.Fatalf("stored remote address %q, want the peer's", got.RemoteAddr)
			}
			if len(got.RouteParams) != tc.params {
				t.Fatalf("stored route params %v, want %d", got.RouteParams, tc.params)
			}
			if !hasHeader(got.Headers, "Stripe-Signature", "t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd") {
				t.Fatalf("stored headers %v lack the signature header", got.Headers)
			}
			if raceEnabled {
				// The behaviour above is checked; allocation counts mean
				// nothing under the race detector (sync.Pool drops items at
				// random), and make test runs this package without it too.
				return
			}
			allocs := testing.AllocsPerRun(1000, func() {
				if p.serve(stream) != fasthttp.StatusCreated {
					panic("not 201")
				}
			})
			if allocs != 0 {
				t.Errorf("router path allocates %.2f times per request, want 0", allocs)
			}
			if got := p.router.PipelineBytes(); got != 0 {
				t.Errorf("PipelineBytes() = %d after the run, want 0", got)
			}
		})
	}
}

// routedConfig is pathConfig behind the route guard, with a route that
// binds a parameter.
const routedConfig = pathConfig + `routes:
  enabled: true
  table:
    - {id: any, path: "/webhooks/:s"}
`

// hostAllocConfig serves demo through the host resolver: the request's
// host, hooks.example.com, names the tenant "hooks".
const hostAllocConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: host, suffix: example.com, prefix: [webhooks]}
rate_limits: {default: {rate: 1e9, burst: 1e9}}
sources:
  demo: {verify: {type: none}, trust_url_tenant: true}
`

// tokenAllocConfig serves demo through the token resolver.
const tokenAllocConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: token, path: "/webhooks/catch/:app_id/:token"}
rate_limits: {default: {rate: 1e9, burst: 1e9}}
source_store: {type: persistent}
sources:
  demo: {verify: {type: none}, trust_url_tenant: true}
`

// TestRouterRefusalZeroAllocs proves the refusals decided from the header
// alone (404, 413, 400, 405) allocate nothing either: a flood of bad
// requests costs no garbage.
func TestRouterRefusalZeroAllocs(t *testing.T) {
	r := pathRouter(t, &instantWAL{})
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"unknown source", "POST /webhooks/nope HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", 404},
		{"bad shape", "POST /webhooks/a/../demo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", 404},
		{"too large", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nContent-Length: 2097152\r\n\r\n", 413},
		{"method", "GET /webhooks/demo HTTP/1.1\r\nHost: h\r\n\r\n", 405},
		{"too many fields", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\n" + strings.Join(manyHeaders(20, 3), "\r\n") + "\r\nContent-Length: 5\r\n\r\n", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			fasthttpHeader(t, &ctx.Request.Header, []byte(tc.head))
			serve := func() int {
				ctx.Response.Reset()
				r.HeaderReceived(&ctx.Request.Header)
				r.Handle(&ctx)
				return ctx.Response.StatusCode()
			}
			if st := serve(); st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, ctx.Response.Body())
			}
			if raceEnabled {
				// The behaviour above is checked; allocation counts mean
				// nothing under the race detector (sync.Pool drops items at
				// random), and make test runs this package without it too.
				return
			}
			if allocs := testing.AllocsPerRun(1000, func() { serve() }); allocs != 0 {
				t.Errorf("%s allocates %.2f times per request, want 0", tc.name, allocs)
			}
		})
	}
}

func hasHeader(hs []envelope.Header, name, value string) bool {
	for _, h := range hs {
		if h.Name == name && h.Value == value {
			return true
		}
	}
	return false
}

// TestResolverRefusalZeroAllocs: the host and token resolvers' 404s cost
// no garbage either, a revoked or unknown token's digest and lookup
// included.
func TestResolverRefusalZeroAllocs(t *testing.T) {
	hostCfg := loadConfig(t, hostAllocConfig)
	hostRouter := storeRouter(t, hostCfg, source.NewStatic(hostCfg), &instantWAL{})
	tokenCfg := loadConfig(t, tokenAllocConfig)
	p := openPersistent(t, tokenCfg)
	r, revoked := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "demo", Token: source.TokenAuto})
	deleteRoute(t, p, "acme", r.ID)
	tokenRouter := storeRouter(t, tokenCfg, p, &instantWAL{})
	for _, tc := range []struct {
		name   string
		router *edge.Router
		head   string
	}{
		{"host: wrong suffix", hostRouter, "POST /webhooks/demo HTTP/1.1\r\nHost: a.example.org\r\nContent-Length: 5\r\n\r\n"},
		{"host: extra labels", hostRouter, "POST /webhooks/demo HTTP/1.1\r\nHost: a.b.example.com\r\nContent-Length: 5\r\n\r\n"},
		{"host: upper case", hostRouter, "POST /webhooks/demo HTTP/1.1\r\nHost: A.example.com\r\nContent-Length: 5\r\n\r\n"},
		{"token: unknown", tokenRouter, "POST /webhooks/catch/a/" + strings.Repeat("q", 26) + " HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"},
		{"token: revoked", tokenRouter, "POST /webhooks/catch/a/" + revoked + " HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"},
		{"token: bad shape", tokenRouter, "POST /webhooks/catch/" + revoked + " HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			fasthttpHeader(t, &ctx.Request.Header, []byte(tc.head))
			serve := func() int {
				ctx.Response.Reset()
				tc.router.HeaderReceived(&ctx.Request.Header)
				tc.router.Handle(&ctx)
				return ctx.Response.StatusCode()
			}
			if st := serve(); st != 404 {
				t.Fatalf("status %d, want 404: %s", st, ctx.Response.Body())
			}
			if raceEnabled {
				return // as in TestRouterRefusalZeroAllocs
			}
			if allocs := testing.AllocsPerRun(1000, func() { serve() }); allocs != 0 {
				t.Errorf("%s allocates %.2f times per request, want 0", tc.name, allocs)
			}
		})
	}
}

// listenedConn is the server side of a loopback connection accepted by the
// edge's listener.
func listenedConn(t testing.TB) net.Conn {
	t.Helper()
	ln, err := edge.Listen("127.0.0.1:0", 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
