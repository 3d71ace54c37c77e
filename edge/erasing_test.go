package edge_test

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// TestTenantErasing: router step 6. A tenant being erased gets 503
// tenant_erasing with the JSON error body, closing the connection and
// committing nothing, before its token bucket is asked (a bucket of one
// token is still full after many refusals); another tenant of the same
// shared source is unaffected, and Open lets the tenant in again.
func TestTenantErasing(t *testing.T) {
	cfg := loadConfig(t, tenantPathConfig)
	var closed tenant.Closed
	limits := tenant.NewLimiter(config.RateLimits{Default: &config.RateLimit{Rate: 0.001, Burst: 1}}, func() int64 { return 1 })
	n := startNode(t, cfg, func(o *edge.Options) {
		o.Closed = &closed
		o.Tenants = limits
	})
	closed.Close("acme")
	for i := range 3 {
		r := roundTrip(t, n.addr, exchange{req: post("/webhooks/acme/shared", `{"n":1}`)})
		wantAnswer(t, "acme being erased", r, 503, "tenant_erasing")
		wantClose(t, "acme being erased", r)
		if i == 0 && !strings.Contains(string(r.body), `"message"`) {
			t.Errorf("the 503 body %q has no message", r.body)
		}
	}
	if got := len(n.stored(t)); got != 0 {
		t.Fatalf("%d hooks committed for a tenant being erased", got)
	}
	r := roundTrip(t, n.addr, exchange{req: post("/webhooks/beta/shared", `{"n":2}`)})
	wantAnswer(t, "beta", r, 201, "")
	closed.Open("acme")
	r = roundTrip(t, n.addr, exchange{req: post("/webhooks/acme/shared", `{"n":3}`)})
	wantAnswer(t, "acme opened again", r, 201, "")
	stored := n.stored(t)
	if len(stored) != 2 || stored[0].TenantID != "beta" || stored[1].TenantID != "acme" {
		t.Fatalf("stored %d hooks, want beta's then acme's", len(stored))
	}
}

// closedPen is a quarantine pen that refuses every tenant as being erased.
type closedPen struct{ reserved int64 }

func (p *closedPen) ReservePen(string, int64) (ok, closed bool) { return false, true }
func (p *closedPen) UnreservePen(n int64)                       { p.reserved -= n }

// TestPenRefusesErasingTenant: a hook that failed verification for a
// quarantining source, whose tenant the pen says is being erased (closed
// after step 6 let it through), is 503 tenant_erasing, not committed.
func TestPenRefusesErasingTenant(t *testing.T) {
	g := newIngestRig(t)
	pen := &closedPen{}
	cfg, err := config.Load([]byte(ingestConfig), config.ValidateOptions{ResolverKnown: edge.ResolverKnown})
	if err != nil {
		t.Fatal(err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	g.router = edge.NewRouter(edge.Options{Resolver: res, Sources: source.NewStatic(cfg), WAL: g.wal, Limits: cfg.Limits,
		RoutesEnabled: cfg.Routes.Enabled, Pen: pen, Queues: g.queues})
	st, body, _ := g.serve(hook{source: "pen", sig: "sha256=00", body: `{"id":"evt_1"}`})
	if st != 503 || !strings.Contains(body, `"error":"tenant_erasing"`) {
		t.Fatalf("quarantined hook of a tenant the pen refuses: %d %s, want 503 tenant_erasing", st, body)
	}
	if g.wal.seq != 0 || pen.reserved != 0 {
		t.Fatalf("committed %d records, pen holds %d bytes; want none", g.wal.seq, pen.reserved)
	}
}

// TestTenantErasingZeroAllocs: step 6's refusal allocates nothing.
func TestTenantErasingZeroAllocs(t *testing.T) {
	cfg := loadConfig(t, pathConfig)
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	var closed tenant.Closed
	closed.Close("default")
	r := edge.NewRouter(edge.Options{Resolver: res, Sources: source.NewStatic(cfg), WAL: &instantWAL{}, Limits: cfg.Limits,
		Closed: &closed, Tenants: tenant.NewLimiter(cfg.RateLimits, func() int64 { return 1 }), Queues: tenant.NewQueues(cfg.RateLimits)})
	var ctx fasthttp.RequestCtx
	fasthttpHeader(t, &ctx.Request.Header, []byte("POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"))
	serve := func() int {
		ctx.Response.Reset()
		r.HeaderReceived(&ctx.Request.Header)
		r.Handle(&ctx)
		return ctx.Response.StatusCode()
	}
	if st := serve(); st != 503 || !strings.Contains(string(ctx.Response.Body()), "tenant_erasing") {
		t.Fatalf("status %d %s, want 503 tenant_erasing", st, ctx.Response.Body())
	}
	if raceEnabled {
		return // allocation counts mean nothing under the race detector
	}
	if allocs := testing.AllocsPerRun(1000, func() { serve() }); allocs != 0 {
		t.Errorf("the tenant_erasing refusal allocates %.2f times per request, want 0", allocs)
	}
}
