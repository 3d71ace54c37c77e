//go:build !race

// (A million requests take ~10 s here and ten times that under the race
// detector, which has nothing to find in this single-goroutine test.)

package edge_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// manyTenantsConfig: tenant routing, every tenant 10 hooks/s with a burst
// of 10.
const manyTenantsConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits: {default: {rate: 10, burst: 10, max_queue: 100}}
sources:
  open: {verify: {type: none}, trust_url_tenant: true}
`

// TestMillionTenantNames: a million distinct tenant names through the
// tenantpath resolver, the token buckets and the queue caps keep memory
// bounded (stated: under 64 MiB of heap for the tenant stage; idle buckets
// and queue entries are swept). The clock stands still, so every bucket
// keeps its one spent token: the buckets swept are the ones a real clock
// would have refilled, and the bound holds without them.
func TestMillionTenantNames(t *testing.T) {
	cfg := loadConfig(t, manyTenantsConfig)
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(0)
	mono := func() int64 { return now }
	limiter := tenant.NewLimiter(cfg.RateLimits, mono)
	queues := tenant.NewQueues(cfg.RateLimits)
	r := edge.NewRouter(edge.Options{
		Resolver: res, Sources: source.NewStatic(cfg), WAL: &instantWAL{}, Limits: cfg.Limits,
		Now: func() int64 { return 1 }, Mono: mono, Tenants: limiter, Queues: queues,
	})
	var ctx fasthttp.RequestCtx
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const names = 1_000_000
	for i := 0; i < names; i++ {
		ctx.Request.Reset()
		ctx.Response.Reset()
		fasthttpHeader(t, &ctx.Request.Header, fmt.Appendf(nil, "POST /webhooks/tenant-%d/open HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n", i))
		ctx.Request.SetBodyRaw([]byte("{}"))
		r.HeaderReceived(&ctx.Request.Header)
		r.Handle(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusCreated {
			t.Fatalf("tenant %d: %d %s", i, ctx.Response.StatusCode(), ctx.Response.Body())
		}
		now += 1000 // 1µs a request: a million names in a second
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("1M tenant names: %d buckets held, heap %+d KiB", limiter.Tracked(), grown>>10)
	if grown > 64<<20 {
		t.Fatalf("the heap grew by %d MiB for a million one-off tenants; the bound is 64 MiB", grown>>20)
	}
	if hooks, bytes := queues.Totals(); hooks != 0 || bytes != 0 {
		t.Fatalf("queues hold %d hooks, %d bytes after every request answered", hooks, bytes)
	}
}
