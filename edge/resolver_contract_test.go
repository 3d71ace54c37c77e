package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
)

// headerTenantResolver takes the tenant from X-Tenant and the source from
// the last path segment: a registered resolver that trusts its input too
// much, as third-party code may.
type headerTenantResolver struct{}

func (headerTenantResolver) Resolve(h *fasthttp.RequestHeader, _ *edge.Snapshot) (edge.Route, bool) {
	var segs edge.Segments
	if !edge.SplitPath(h.RequestURI(), &segs) || segs.Len() == 0 {
		return edge.Route{}, false
	}
	return edge.Route{TenantID: string(h.Peek("X-Tenant")), SourceID: string(segs.At(segs.Len() - 1))}, true
}

// panicResolver panics on a marked request, as broken third-party code may.
type panicResolver struct{ headerTenantResolver }

func (p panicResolver) Resolve(h *fasthttp.RequestHeader, _ *edge.Snapshot) (edge.Route, bool) {
	if len(h.Peek("X-Boom")) > 0 {
		panic("resolver bug")
	}
	return p.headerTenantResolver.Resolve(h, nil)
}

func init() {
	edge.RegisterResolver("test-header-tenant", func(config.RouteResolver) (edge.Resolver, error) { return headerTenantResolver{}, nil })
	edge.RegisterResolver("test-panic", func(config.RouteResolver) (edge.Resolver, error) { return panicResolver{}, nil })
}

const contractSources = `
rate_limits: {default: {rate: 10, burst: 10}}
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
`

func contractPost(t *testing.T, addr string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/in/shared", strings.NewReader("{}"))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Error, ID string }
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Error + out.ID
}

// TestRegisteredResolverNamesAreChecked: a tenant name a registered
// resolver returns is held to the name rule like a URL's: anything else is
// the 404, and nothing is stored under it.
func TestRegisteredResolverNamesAreChecked(t *testing.T) {
	addr, dir := rgServe(t, "route_resolver: {type: test-header-tenant}\n"+contractSources)
	for _, bad := range []string{"../../etc/passwd", "ACME", "a b", "-x", strings.Repeat("a", 64)} {
		if code, got := contractPost(t, addr, map[string]string{"X-Tenant": bad}); code != 404 || got != "not_found" {
			t.Fatalf("tenant %q: %d %q, want 404 not_found", bad, code, got)
		}
	}
	code, id := contractPost(t, addr, map[string]string{"X-Tenant": "acme"})
	if code != 201 {
		t.Fatalf("valid tenant: %d %q", code, id)
	}
	if got := rgStoredTenant(t, dir, id); got != "acme" {
		t.Fatalf("stored under %q, want acme", got)
	}
}

// TestResolverPanicIsContained: a panicking resolver costs its request a
// 503 with Connection: close, never the node.
func TestResolverPanicIsContained(t *testing.T) {
	addr, _ := rgServe(t, "route_resolver: {type: test-panic}\n"+contractSources)
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("POST", "http://"+addr+"/in/shared", strings.NewReader("{}"))
		req.Header.Set("X-Boom", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || !resp.Close || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("panicking resolver: %d close=%v retry-after=%q, want 503, close, Retry-After", resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"))
		}
	}
	if code, _ := contractPost(t, addr, map[string]string{"X-Tenant": "acme"}); code != 201 {
		t.Fatalf("after the panics the node answers %d, want 201", code)
	}
}

// TestMethodNotAllowedSaysAllow: a 405 names the method that is allowed.
func TestMethodNotAllowedSaysAllow(t *testing.T) {
	addr, _ := rgServe(t, "sources: {demo: {verify: {type: none}}}")
	resp, err := http.Get("http://" + addr + "/webhooks/demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d Allow=%q, want 405 with Allow: POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestSplitPathAbsoluteForm: an absolute-form request target resolves by
// its path, and everything SplitPath refuses stays refused behind it.
func TestSplitPathAbsoluteForm(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		ok   bool
		segs string
	}{
		{"/webhooks/demo", true, "webhooks|demo"},
		{"http://h.example.com/webhooks/demo?x=1", true, "webhooks|demo"},
		{"HTTPS://h:443/webhooks/demo", true, "webhooks|demo"},
		{"http://h.example.com", false, ""},
		{"http://h/webhooks/../demo", false, ""},
		{"http://h/webhooks/%2e%2e/demo", false, ""},
		{"ftp://h/webhooks/demo", false, ""},
		{"*", false, ""},
	} {
		var s edge.Segments
		ok := edge.SplitPath([]byte(tc.uri), &s)
		var parts []string
		for i := 0; ok && i < s.Len(); i++ {
			parts = append(parts, string(s.At(i)))
		}
		if ok != tc.ok || strings.Join(parts, "|") != tc.segs {
			t.Errorf("SplitPath(%q) = %v %q, want %v %q", tc.uri, ok, strings.Join(parts, "|"), tc.ok, tc.segs)
		}
	}
}
