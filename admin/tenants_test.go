package admin

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/tenant"
)

type fakeCounts struct{}

func (fakeCounts) TenantCounts(ord uint32) meta.TenantCounts {
	return meta.TenantCounts{Hooks: uint64(ord) * 10, Bytes: uint64(ord) * 1000}
}

// tenantNode is a meta store, the policy the router would read, and an
// admin listener over both.
type tenantNode struct {
	meta   *meta.Store
	policy *tenant.Policy
	addr   string
	clock  atomic.Int64
}

func newTenantNode(t *testing.T, l ListenerOptions) *tenantNode {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: "meta", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	n := &tenantNode{meta: ms, policy: tenant.NewPolicy(config.RateLimits{Default: &config.RateLimit{Rate: 50, Burst: 100, MaxQueue: 1000}})}
	if err := n.policy.LoadOverrides(ms); err != nil {
		t.Fatal(err)
	}
	n.clock.Store(time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC).UnixNano())
	s := startServer(t, Options{Hooks: &fakeFetcher{}, Tenants: ms, Counts: fakeCounts{}, Limits: n.policy, Overrides: ms, Audit: ms,
		Listener: l, Now: func() time.Time { return time.Unix(0, n.clock.Add(int64(time.Second))) }})
	n.addr = s.Addr().String()
	return n
}

func TestTenantsList(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{})
	for i := range 5 {
		if err := n.meta.SetTenant(fmt.Sprintf("t%d", i), uint32(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	cursor, pages := "", 0
	for {
		a := rawDo(t, n.addr, "GET", "/v1/tenants?limit=2&cursor="+cursor, "tok-reader", "")
		if a.code != 200 {
			t.Fatalf("page %d: %d %s", pages, a.code, a.body)
		}
		pages++
		for _, part := range strings.Split(a.body, `{"tenant":"`)[1:] {
			name, _, _ := strings.Cut(part, `"`)
			names = append(names, name)
		}
		_, rest, ok := strings.Cut(a.body, `"next_cursor":"`)
		if !ok {
			break
		}
		cursor, _, _ = strings.Cut(rest, `"`)
	}
	if strings.Join(names, ",") != "t0,t1,t2,t3,t4" || pages != 3 {
		t.Fatalf("%d pages: %v", pages, names)
	}
	a := rawDo(t, n.addr, "GET", "/v1/tenants?limit=1", "tok-root", "")
	if !strings.HasPrefix(a.body, `{"tenants":[{"tenant":"t0","ordinal":1,"first_seen":"20`) || !strings.Contains(a.body, `"hooks":10,"bytes":1000,"rate_limit":null}]`) {
		t.Errorf("one tenant: %s", a.body)
	}
	for _, c := range []struct {
		path, tok string
		code      int
		errc      string
	}{
		{"/v1/tenants", "tok-acme", 403, "forbidden"},
		{"/v1/tenants", "tok-writer", 403, "forbidden"},
		{"/v1/tenants", "", 401, "unauthorized"},
		{"/v1/tenants?limit=0", "tok-reader", 400, "invalid_query"},
		{"/v1/tenants?limit=1001", "tok-reader", 400, "invalid_query"},
		{"/v1/tenants?limit=x", "tok-reader", 400, "invalid_query"},
		{"/v1/tenants?cursor=zz", "tok-reader", 400, "invalid_query"},
		{"/v1/tenants?cursor=41434d45", "tok-reader", 400, "invalid_query"}, // "ACME"
		{"/v1/tenants?sort=name", "tok-reader", 400, "invalid_query"},
		{"/v1/tenants/t1", "tok-root", 200, ""},
		{"/v1/tenants/t1", "tok-acme", 403, "forbidden"},
		{"/v1/tenants/acme", "tok-acme", 404, "not_found"},
		{"/v1/tenants/ACME", "tok-acme", 400, "invalid_name"},
	} {
		if a := rawDo(t, n.addr, "GET", c.path, c.tok, ""); a.code != c.code || errCode(a.body) != c.errc {
			t.Errorf("GET %s (%s): %d %s, want %d %s", c.path, c.tok, a.code, a.body, c.code, c.errc)
		}
	}
}

// A PUT sets the override the policy serves at once (the next request is
// limited by it), with its audit row; DELETE takes it away.
func TestRateLimitRoundTrip(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{})
	var mono atomic.Int64
	limiter := tenant.NewPolicyLimiter(n.policy, func() int64 { return mono.Load() })
	const path = "/v1/tenants/acme/rate_limit"
	a := rawDo(t, n.addr, "GET", path, "tok-acme", "")
	want := `{"tenant":"acme","effective":{"rate":50,"burst":100,"max_queue":1000,"max_queue_bytes":0,"limited":true},"override":null}` + "\n"
	if a.code != 200 || a.body != want {
		t.Fatalf("GET before: %d %s", a.code, a.body)
	}
	// Scopes: reading is the tenant's, writing tenants:write's.
	for _, c := range []struct{ method, tok string }{{"PUT", "tok-acme"}, {"DELETE", "tok-acme"}, {"PUT", "tok-reader"}, {"PUT", "tok-prof"}} {
		if a := rawDo(t, n.addr, c.method, path, c.tok, `{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0}`); a.code != 403 || !strings.Contains(a.body, "tenants:write") {
			t.Errorf("%s by %s: %d %s", c.method, c.tok, a.code, a.body)
		}
	}
	if a := rawDo(t, n.addr, "GET", path, "tok-globex", ""); a.code != 403 {
		t.Errorf("GET by globex: %d", a.code)
	}
	a = rawDo(t, n.addr, "PUT", path, "tok-writer", `{"rate":1,"burst":2,"max_queue":3,"max_queue_bytes":4096}`)
	if a.code != 200 || !strings.Contains(a.body, `"override":{"rate":1,"burst":2,"max_queue":3,"max_queue_bytes":4096}`) {
		t.Fatalf("PUT: %d %s", a.code, a.body)
	}
	// The next request: burst 2, then refused.
	for i, want := range []bool{true, true, false} {
		if ok, _ := limiter.Take("acme"); ok != want {
			t.Fatalf("take %d after the PUT: %v, want %v", i, ok, want)
		}
	}
	if rl, _ := n.policy.Of("acme"); rl.MaxQueue != 3 {
		t.Fatalf("policy: %+v", rl)
	}
	a = rawDo(t, n.addr, "PUT", "/v1/tenants/free/rate_limit", "tok-writer", `{"rate":"inf","burst":0,"max_queue":0,"max_queue_bytes":0}`)
	if a.code != 200 || !strings.Contains(a.body, `"effective":{"rate":"inf","burst":0,"max_queue":0,"max_queue_bytes":0,"limited":false}`) {
		t.Fatalf("PUT inf: %d %s", a.code, a.body)
	}
	if a := rawDo(t, n.addr, "DELETE", path, "tok-writer", ""); a.code != 204 {
		t.Fatalf("DELETE: %d %s", a.code, a.body)
	}
	if a := rawDo(t, n.addr, "DELETE", path, "tok-writer", ""); a.code != 404 || errCode(a.body) != "not_found" {
		t.Fatalf("DELETE again: %d %s", a.code, a.body)
	}
	if _, ok := n.policy.Override("acme"); ok {
		t.Fatal("the override is still served")
	}
	if m, _ := n.meta.RateLimitOverrides(); len(m) != 1 || !math.IsInf(m["free"].Rate, 1) {
		t.Fatalf("stored overrides: %v", m)
	}
	rows, err := n.meta.Audit(time.Time{}, 10)
	if err != nil || auditSummary(rows) != "writer tenant.rate_limit.set acme ok;writer tenant.rate_limit.set free ok;writer tenant.rate_limit.clear acme ok" {
		t.Fatalf("audit: %s, %v", auditSummary(rows), err)
	}
	if len(rows[0].SpecSHA256) != 64 || rows[0].Entity != "rate_limit" || rows[2].SpecSHA256 != "" {
		t.Errorf("rows: %+v", rows)
	}
	// Each change's event: the override set, and the one the delete removed.
	var evs []string
	err = n.meta.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		evs = append(evs, ev.Tenant+" "+ev.Type+" "+ev.Subject+" "+string(ev.Data))
		return false, nil
	})
	wantEvents := []string{
		`acme io.ankusa.rate_limit.created acme {"rate":1,"burst":2,"max_queue":3,"max_queue_bytes":4096}`,
		`free io.ankusa.rate_limit.created free {"rate":0,"burst":0,"max_queue":0,"max_queue_bytes":0,"unlimited":true}`,
		`acme io.ankusa.rate_limit.deleted acme {"rate":1,"burst":2,"max_queue":3,"max_queue_bytes":4096}`,
	}
	if err != nil || strings.Join(evs, "\n") != strings.Join(wantEvents, "\n") {
		t.Errorf("events\n%s\nwant\n%s (%v)", strings.Join(evs, "\n"), strings.Join(wantEvents, "\n"), err)
	}
}

func auditSummary(rows []meta.AuditRow) string {
	var s []string
	for _, r := range rows {
		s = append(s, r.Principal+" "+r.Action+" "+r.Tenant+" "+r.Outcome)
	}
	return strings.Join(s, ";")
}

// Bad bodies: 400 naming the field, nothing stored, no audit row.
func TestRateLimitBadBodies(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{})
	f := func(body, want string) {
		t.Helper()
		a := rawDo(t, n.addr, "PUT", "/v1/tenants/acme/rate_limit", "tok-writer", body)
		if a.code != 400 || errCode(a.body) != "invalid_json" || !strings.Contains(a.body, want) {
			t.Errorf("PUT %s: %d %s, want 400 invalid_json with %q", body, a.code, a.body, want)
		}
	}
	f(``, "needs a JSON body")
	f(`{`, "ends before its value does")
	f(`{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0,"extra":1}`, `extra: unknown field`)
	f(`{"rate":1,"burst":"1","max_queue":0,"max_queue_bytes":0}`, `burst: a JSON string is not a whole number`)
	f(`{"rate":1,"burst":1.5,"max_queue":0,"max_queue_bytes":0}`, `burst: a JSON number 1.5 is not a whole number`)
	f(`{"rate":"fast","burst":1,"max_queue":0,"max_queue_bytes":0}`, `rate: must be a number`)
	f(`{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0} {}`, "more than one JSON value")
	f(`{"RATE":1,"burst":1,"max_queue":0,"max_queue_bytes":0}`, "RATE: unknown field (names are case-sensitive: the field is rate)")
	f(`[1]`, "the body: a JSON array is not an object")
	f(`{"rate":1,"burst":1,"max_queue":0}`, "max_queue_bytes: required")
	f(`{"burst":1,"max_queue":0,"max_queue_bytes":0}`, "rate: required")
	f(`{"rate":0,"burst":1,"max_queue":0,"max_queue_bytes":0}`, "rate: 0 must be above 0")
	f(`{"rate":-1,"burst":1,"max_queue":0,"max_queue_bytes":0}`, "rate: -1 must be above 0")
	f(`{"rate":5,"burst":0,"max_queue":0,"max_queue_bytes":0}`, "burst: 0 must be at least 1")
	f(`{"rate":5,"burst":1,"max_queue":-1,"max_queue_bytes":0}`, "max_queue: -1 must not be negative")
	f(`{"rate":5,"burst":1,"max_queue":0,"max_queue_bytes":-1}`, "max_queue_bytes: -1 must not be negative")
	f(`{"rate":5,"burst":1,"max_queue":0,"max_queue_bytes":0,"rate":"x"}`, "rate: must be a number")
	if m, _ := n.meta.RateLimitOverrides(); len(m) != 0 {
		t.Errorf("stored: %v", m)
	}
	if rows, _ := n.meta.Audit(time.Time{}, 10); len(rows) != 0 {
		t.Errorf("audit rows: %+v", rows)
	}
}

// A body past admin.max_body_bytes is 413, with a length or chunked.
func TestBodyCap(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{MaxBodyBytes: 1024})
	big := `{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0,"x":"` + strings.Repeat("a", 2000) + `"}`
	a := rawDo(t, n.addr, "PUT", "/v1/tenants/acme/rate_limit", "tok-writer", big)
	if a.code != 413 || errCode(a.body) != "payload_too_large" || !strings.Contains(a.body, "admin.max_body_bytes (1024 bytes)") {
		t.Errorf("with a length: %d %s", a.code, a.body)
	}
	// Chunked: no length to refuse early; the decoder stops at the bound.
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big)
	_, _ = io.WriteString(c, "PUT /v1/tenants/acme/rate_limit HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer tok-writer\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk)
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 413 ") || !strings.Contains(string(b), `"error":"payload_too_large"`) {
		t.Errorf("chunked: %s", b)
	}
	if m, _ := n.meta.RateLimitOverrides(); len(m) != 0 {
		t.Errorf("stored: %v", m)
	}
}

// A body sent a byte at a time is cut at admin.read_timeout.
func TestSlowBody(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{ReadTimeout: 500 * time.Millisecond, ReadHeaderTimeout: 500 * time.Millisecond})
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _ = io.WriteString(c, "PUT /v1/tenants/acme/rate_limit HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer tok-writer\r\nContent-Length: 100\r\n\r\n")
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(c)
		done <- b
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case b := <-done:
			d := time.Since(start)
			if d > 3*time.Second {
				t.Fatalf("cut after %s", d)
			}
			if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 408 ") {
				t.Fatalf("answer %s", b)
			}
			return
		case <-tick.C:
			if time.Since(start) > 5*time.Second {
				t.Fatal("a slow body holds the connection past read_timeout")
			}
			_, _ = c.Write([]byte(" ")) // JSON whitespace: the decoder waits for more
		}
	}
}

// GET /v1/audit: tenants:read sees every row, a tenant scope only its
// tenant's with ?tenant=; oldest first, paged.
func TestAuditRead(t *testing.T) {
	n := newTenantNode(t, ListenerOptions{})
	for _, tn := range []string{"acme", "globex", "acme", "initech"} {
		if a := rawDo(t, n.addr, "PUT", "/v1/tenants/"+tn+"/rate_limit", "tok-writer", `{"rate":1,"burst":1,"max_queue":0,"max_queue_bytes":0}`); a.code != 200 {
			t.Fatal(a.code, a.body)
		}
	}
	tenantsOf := func(body string) string {
		var out []string
		for _, part := range strings.Split(body, `"tenant":"`)[1:] {
			name, _, _ := strings.Cut(part, `"`)
			out = append(out, name)
		}
		return strings.Join(out, ",")
	}
	f := func(q, tok string, code int, want string) {
		t.Helper()
		a := rawDo(t, n.addr, "GET", "/v1/audit"+q, tok, "")
		if a.code != code || code == 200 && tenantsOf(a.body) != want || code != 200 && errCode(a.body) != want {
			t.Errorf("GET /v1/audit%s (%s): %d %s, want %d %s", q, tok, a.code, a.body, code, want)
		}
	}
	f("", "tok-reader", 200, "acme,globex,acme,initech")
	f("?tenant=acme", "tok-reader", 200, "acme,acme")
	f("?tenant=acme", "tok-acme", 200, "acme,acme")
	f("?tenant=initech", "tok-globex", 200, "initech")
	f("?tenant=globex", "tok-acme", 403, "forbidden")
	f("", "tok-acme", 403, "forbidden")
	f("", "tok-writer", 403, "forbidden")
	f("", "", 401, "unauthorized")
	f("?since=2025-11-29T19:40:02Z&until=2025-11-29T19:40:04Z", "tok-reader", 200, "globex,acme")
	f("?since=yesterday", "tok-reader", 400, "invalid_query")
	f("?tenant=ACME", "tok-reader", 400, "invalid_query")
	f("?cursor=xyz", "tok-reader", 400, "invalid_query")
	f("?limit=0", "tok-reader", 400, "invalid_query")
	f("?who=me", "tok-reader", 400, "invalid_query")
	a := rawDo(t, n.addr, "GET", "/v1/audit?limit=3", "tok-reader", "")
	_, rest, ok := strings.Cut(a.body, `"next_cursor":"`)
	if !ok || tenantsOf(a.body) != "acme,globex,acme" {
		t.Fatalf("page 1: %s", a.body)
	}
	cursor, _, _ := strings.Cut(rest, `"`)
	f("?limit=3&cursor="+cursor, "tok-reader", 200, "initech")
	if !strings.Contains(a.body, `"principal":"writer","action":"tenant.rate_limit.set","tenant":"acme","entity":"rate_limit","spec_sha256":"`) ||
		!strings.Contains(a.body, `"outcome":"ok"`) || !strings.Contains(a.body, `"at":"2025-11-29T19:40:01.000000000Z"`) {
		t.Errorf("row form: %s", a.body)
	}
}

var _ http.Handler = (*front)(nil)
