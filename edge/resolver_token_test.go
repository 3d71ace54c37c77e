package edge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/source"
)

// tokenConfig serves the token resolver with an app id in the pattern;
// its sources are a shared one, one of acme's and one of globex's.
const tokenConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: token, path: "/webhooks/catch/:app_id/:token"}
rate_limits: {default: {rate: 1000, burst: 1000}}
source_store: {type: persistent}
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
  acme-stripe: {tenant_id: acme, verify: {type: none}}
  globex-stripe: {tenant_id: globex, verify: {type: none}}
`

// resolveTarget runs r on a POST of target with the given Host; with
// none, the request is HTTP/1.0 (1.1 requires one).
func resolveTarget(t testing.TB, r edge.Resolver, snap *source.Snapshot, host, target string) (edge.Route, bool) {
	t.Helper()
	var h fasthttp.RequestHeader
	head := "POST " + target + " HTTP/1.0\r\n"
	if host != "" {
		head = "POST " + target + " HTTP/1.1\r\nHost: " + host + "\r\n"
	}
	fasthttpHeader(t, &h, []byte(head+"Content-Length: 1\r\n\r\n"))
	return r.Resolve(&h, snap)
}

func TestTokenResolver(t *testing.T) {
	cfg := loadConfig(t, tokenConfig)
	p := openPersistent(t, cfg)
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	_, acmeShared := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Token: source.TokenAuto})
	_, acmeOwn := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "acme-stripe", Token: source.TokenAuto})
	_, dflt := putRoute(t, p, source.RouteWrite{Tenant: "default", Create: true, SourceID: "shared", Token: source.TokenAuto})
	given := "given-token-0123456789abcdef"
	putRoute(t, p, source.RouteWrite{Tenant: "globex", Create: true, SourceID: "globex-stripe", Token: given})
	snap := p.Snapshot()
	cases := []struct {
		name, target string
		ok           bool
		tenant, src  string
		app          string
	}{
		{"acme's token to the shared source", "/webhooks/catch/app1/" + acmeShared, true, "acme", "shared", "app1"},
		{"acme's token to its source", "/webhooks/catch/a.b_c-D/" + acmeOwn, true, "acme", "acme-stripe", "a.b_c-D"},
		{"a default route leaves the tenant to the source", "/webhooks/catch/x/" + dflt, true, "", "shared", "x"},
		{"a given token", "/webhooks/catch/x/" + given, true, "globex", "globex-stripe", "x"},
		{"with a query", "/webhooks/catch/x/" + acmeShared + "?a=1", true, "acme", "shared", "x"},
		{"unknown token", "/webhooks/catch/x/" + strings.Repeat("a", 26), false, "", "", ""},
		{"upper-case token", "/webhooks/catch/x/" + strings.ToUpper(acmeShared), false, "", "", ""},
		{"token outside the grammar", "/webhooks/catch/x/-" + acmeShared[1:], false, "", "", ""},
		{"token of 64 characters", "/webhooks/catch/x/" + acmeShared + strings.Repeat("a", 64-len(acmeShared)), false, "", "", ""},
		{"token with a percent-encoding", "/webhooks/catch/x/" + acmeShared[:3] + "%61" + acmeShared[4:], false, "", "", ""},
		{"no app id", "/webhooks/catch/" + acmeShared, false, "", "", ""},
		{"empty app id", "/webhooks/catch//" + acmeShared, false, "", "", ""},
		{"dot app id", "/webhooks/catch/../" + acmeShared, false, "", "", ""},
		{"extra segment", "/webhooks/catch/x/" + acmeShared + "/more", false, "", "", ""},
		{"trailing slash", "/webhooks/catch/x/" + acmeShared + "/", false, "", "", ""},
		{"other literal", "/webhooks/catches/x/" + acmeShared, false, "", "", ""},
		{"the token where the app id goes", "/webhooks/catch/" + acmeShared + "/x", false, "", "", ""},
		{"root", "/", false, "", "", ""},
	}
	for _, c := range cases {
		route, ok := resolveTarget(t, res, snap, "h", c.target)
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v (%+v)", c.name, ok, c.ok, route)
			continue
		}
		if !ok {
			continue
		}
		app, _ := route.Params.Get("app_id")
		if route.TenantID != c.tenant || route.SourceID != c.src || app != c.app || route.Params.Len() != 1 {
			t.Errorf("%s: route %+v, want tenant %q source %q app_id %q and nothing else", c.name, route, c.tenant, c.src, c.app)
		}
	}
}

// TestTokenResolverPatterns: the token may be anywhere in the pattern and
// the pattern may carry no other param; NewResolver refuses what config
// validation refuses, naming the key.
func TestTokenResolverPatterns(t *testing.T) {
	cfg := loadConfig(t, tokenConfig)
	p := openPersistent(t, cfg)
	_, tok := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Token: source.TokenAuto})
	snap := p.Snapshot()
	for _, c := range []struct{ path, target string }{
		{"/c/:token", "/c/" + tok},
		{"/:token", "/" + tok},
		{"/:token/in/:app_id/:v", "/" + tok + "/in/a/2"},
	} {
		rc := cfg.RouteResolver
		rc.Path = c.path
		res, err := edge.NewResolver(rc)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		route, ok := resolveTarget(t, res, snap, "h", c.target)
		if !ok || route.TenantID != "acme" || route.SourceID != "shared" || route.Params.Len() != strings.Count(c.path, ":")-1 {
			t.Errorf("%s on %s: %+v %v", c.path, c.target, route, ok)
		}
		if _, ok := resolveTarget(t, res, snap, "h", strings.Replace(c.target, tok, tok+"x", 1)); ok {
			t.Errorf("%s: a longer token resolved", c.path)
		}
	}
	for _, path := range []string{"", "/c/:app", "/:token/:token", "c/:token", "/c/%2f/:token"} {
		rc := cfg.RouteResolver
		rc.Path = path
		if r, err := edge.NewResolver(rc); err == nil || !strings.HasPrefix(err.Error(), "route_resolver.path: ") {
			t.Errorf("NewResolver(path %q) = %v, %v; want an error naming route_resolver.path", path, r, err)
		}
	}
}

// TestTokenResolverSeesTheSnapshot: the resolver reads the snapshot it is
// handed, nothing else: a revoked token is unknown in the next snapshot
// and still known in the one before (which a request already holding it
// finishes with).
func TestTokenResolverSeesTheSnapshot(t *testing.T) {
	cfg := loadConfig(t, tokenConfig)
	p := openPersistent(t, cfg)
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	r, tok := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Token: source.TokenAuto})
	before := p.Snapshot()
	deleteRoute(t, p, "acme", r.ID)
	target := fmt.Sprintf("/webhooks/catch/a/%s", tok)
	if _, ok := resolveTarget(t, res, p.Snapshot(), "h", target); ok {
		t.Errorf("a revoked token resolves")
	}
	if _, ok := resolveTarget(t, res, before, "h", target); !ok {
		t.Errorf("the token does not resolve in the snapshot that held it")
	}
}
