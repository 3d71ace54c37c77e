package edge_test

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/source"
)

// hostConfig serves the host resolver for *.hooks.example.com under
// /webhooks.
const hostConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: host, suffix: hooks.example.com, prefix: [webhooks]}
rate_limits: {default: {rate: 1000, burst: 1000}}
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
  acme-stripe: {tenant_id: acme, verify: {type: none}}
`

func TestHostResolver(t *testing.T) {
	cfg := loadConfig(t, hostConfig)
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	snap := source.NewStatic(cfg).Snapshot()
	label63 := strings.Repeat("a", 63)
	cases := []struct {
		name, host, target string
		tenant, src        string // tenant "": refused
	}{
		{"good host", "acme.hooks.example.com", "/webhooks/shared", "acme", "shared"},
		{"port ignored", "acme.hooks.example.com:8443", "/webhooks/shared", "acme", "shared"},
		{"label of 63", label63 + ".hooks.example.com", "/webhooks/shared", label63, "shared"},
		{"label with - and _", "a-b_c.hooks.example.com", "/webhooks/shared", "a-b_c", "shared"},
		{"query", "acme.hooks.example.com", "/webhooks/shared?x=1", "acme", "shared"},
		{"absolute form naming the same host", "acme.hooks.example.com", "http://acme.hooks.example.com/webhooks/shared", "acme", "shared"},
		{"absolute form naming another host", "acme.hooks.example.com", "http://globex.hooks.example.com/webhooks/shared", "", ""},
		{"absolute form, Host without the port", "acme.hooks.example.com", "http://acme.hooks.example.com:80/webhooks/shared", "", ""},
		{"missing Host", "", "/webhooks/shared", "", ""},
		{"the suffix alone", "hooks.example.com", "/webhooks/shared", "", ""},
		{"empty label", ".hooks.example.com", "/webhooks/shared", "", ""},
		{"wrong suffix", "acme.hooks.example.org", "/webhooks/shared", "", ""},
		{"suffix inside a label", "acmehooks.example.com", "/webhooks/shared", "", ""},
		{"suffix not at the end", "acme.hooks.example.com.evil.test", "/webhooks/shared", "", ""},
		{"trailing dot", "acme.hooks.example.com.", "/webhooks/shared", "", ""},
		{"extra labels", "x.acme.hooks.example.com", "/webhooks/shared", "", ""},
		{"upper-case label", "Acme.hooks.example.com", "/webhooks/shared", "", ""},
		{"upper-case suffix", "acme.HOOKS.example.com", "/webhooks/shared", "", ""},
		{"label starting with -", "-acme.hooks.example.com", "/webhooks/shared", "", ""},
		{"label of 64", label63 + "a.hooks.example.com", "/webhooks/shared", "", ""},
		{"label with a bad byte", "ac!me.hooks.example.com", "/webhooks/shared", "", ""},
		{"empty port", "acme.hooks.example.com:", "/webhooks/shared", "", ""},
		{"port not digits", "acme.hooks.example.com:http", "/webhooks/shared", "", ""},
		{"ip literal", "[::1]:8080", "/webhooks/shared", "", ""},
		{"no source", "acme.hooks.example.com", "/webhooks", "", ""},
		{"other prefix", "acme.hooks.example.com", "/hooks/shared", "", ""},
		{"extra segment", "acme.hooks.example.com", "/webhooks/shared/x", "", ""},
		{"upper-case source", "acme.hooks.example.com", "/webhooks/Shared", "", ""},
		{"dot segment", "acme.hooks.example.com", "/webhooks/../webhooks/shared", "", ""},
		{"encoded slash", "acme.hooks.example.com", "/webhooks%2Fshared", "", ""},
		{"empty segment", "acme.hooks.example.com", "/webhooks//shared", "", ""},
	}
	for _, c := range cases {
		route, ok := resolveTarget(t, res, snap, c.host, c.target)
		if ok != (c.tenant != "") || ok && (route.TenantID != c.tenant || route.SourceID != c.src || route.Params.Len() != 0) {
			t.Errorf("%s (Host %q, %s): %+v %v, want tenant %q source %q", c.name, c.host, c.target, route, ok, c.tenant, c.src)
		}
	}
}

// TestHostResolverPrefix: no prefix puts the source first; a deeper one
// must be there whole.
func TestHostResolverPrefix(t *testing.T) {
	for _, c := range []struct {
		prefix []string
		target string
		ok     bool
	}{
		{[]string{}, "/shared", true},
		{[]string{}, "/webhooks/shared", false},
		{[]string{"in", "v1"}, "/in/v1/shared", true},
		{[]string{"in", "v1"}, "/in/shared", false},
	} {
		res, err := edge.NewResolver(config.RouteResolver{Type: "host", Suffix: "h.example", Prefix: c.prefix})
		if err != nil {
			t.Fatal(err)
		}
		var h fasthttp.RequestHeader
		fasthttpHeader(t, &h, []byte("POST "+c.target+" HTTP/1.1\r\nHost: acme.h.example\r\nContent-Length: 1\r\n\r\n"))
		if route, ok := res.Resolve(&h, source.NewSnapshot(nil, nil, 1)); ok != c.ok || ok && route.SourceID != "shared" {
			t.Errorf("prefix %q, %s: %+v %v, want %v", c.prefix, c.target, route, ok, c.ok)
		}
	}
	for _, s := range []string{"", "Hooks.example.com", ".h.example", "h.example:80"} {
		if r, err := edge.NewResolver(config.RouteResolver{Type: "host", Suffix: s}); err == nil || !strings.HasPrefix(err.Error(), "route_resolver.suffix: ") {
			t.Errorf("NewResolver(suffix %q) = %v, %v; want an error naming route_resolver.suffix", s, r, err)
		}
	}
}
