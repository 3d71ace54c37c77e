package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
)

// Tokens of the tests: two inline, one from a tokens file.
const (
	tokAcme   = "tok_acme_stripe_3b8f1c9d2e"
	tokGlobex = "tok_globex_stripe_7a4e2d0c91"
	tokFile   = "Zm9vYmFyYmF6cXV4-_0123456789"
)

// testResolver builds the resolver from inline tokens and a tokens file.
func testResolver(t testing.TB, prefix []string) edge.Resolver {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(file, []byte(`{"`+tokFile+`": "acme-billing"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := newResolver(config.RouteResolver{Type: resolverName, Prefix: prefix, Options: map[string]string{
		"token." + tokAcme:   "stripe@acme",
		"token." + tokGlobex: "stripe@globex",
		"tokens_file":        file,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The resolver keeps its own table and never reads the snapshot it is
// handed, so the tests hand it nil.

// header parses a request line and a Host field the way the server does,
// so RequestURI is the raw target as sent.
func header(t testing.TB, method, target string) *fasthttp.RequestHeader {
	t.Helper()
	var h fasthttp.RequestHeader
	raw := method + " " + target + " HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Length: 2\r\n\r\n"
	if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatalf("cannot parse %q: %v", raw, err)
	}
	return &h
}

func TestResolve(t *testing.T) {
	r := testResolver(t, nil)
	long := strings.Repeat("a", 64)
	cases := []struct {
		target              string
		ok                  bool
		source, tenant, app string
	}{
		{target: "/webhooks/catch/app_42/" + tokAcme, ok: true, source: "stripe", tenant: "acme", app: "app_42"},
		{target: "/webhooks/catch/app_42/" + tokGlobex, ok: true, source: "stripe", tenant: "globex", app: "app_42"},
		{target: "/webhooks/catch/App-7.x/" + tokFile, ok: true, source: "acme-billing", tenant: "", app: "App-7.x"},
		{target: "/webhooks/catch/" + long + "/" + tokAcme, ok: true, source: "stripe", tenant: "acme", app: long},
		{target: "/webhooks/catch/a/" + tokAcme + "?utm=1", ok: true, source: "stripe", tenant: "acme", app: "a"},
		{target: "/webhooks/catch/a/" + tokAcme + "#frag", ok: true, source: "stripe", tenant: "acme", app: "a"},
		// absolute form (RFC 9112 §3.2.2): edge.SplitPath takes its path
		{target: "http://hooks.example.com/webhooks/catch/app_42/" + tokAcme, ok: true, source: "stripe", tenant: "acme", app: "app_42"},
		{target: "http://hooks.example.com/webhooks/catch/app_42/tok_unknown_0000000000"},

		// unknown tokens
		{target: "/webhooks/catch/app_42/tok_unknown_0000000000"},
		{target: "/webhooks/catch/app_42/" + strings.ToUpper(tokAcme)},
		{target: "/webhooks/catch/app_42/" + tokAcme + "x"},
		{target: "/webhooks/catch/app_42/" + tokAcme[:len(tokAcme)-1]},
		{target: "/webhooks/catch/app_42/stripe"},
		// shape
		{target: "/webhooks/catch/" + tokAcme},
		{target: "/webhooks/catch/app_42/" + tokAcme + "/extra"},
		{target: "/webhooks/app_42/" + tokAcme},
		{target: "/hooks/catch/app_42/" + tokAcme},
		{target: "/webhooks/CATCH/app_42/" + tokAcme},
		{target: "/catch/webhooks/app_42/" + tokAcme},
		{target: "/"},
		// empty segments
		{target: "/webhooks/catch//" + tokAcme},
		{target: "/webhooks/catch/app_42/" + tokAcme + "/"},
		{target: "//webhooks/catch/app_42/" + tokAcme},
		{target: "/webhooks//catch/app_42/" + tokAcme},
		// dot segments
		{target: "/webhooks/catch/./" + tokAcme},
		{target: "/webhooks/catch/../catch/app_42/" + tokAcme},
		{target: "/webhooks/catch/app_42/../" + tokAcme},
		{target: "/webhooks/catch/app_42/."},
		{target: "/webhooks/catch/.app/" + tokAcme},
		// encodings
		{target: "/webhooks/catch/app_42%2F" + tokAcme},
		{target: "/webhooks%2fcatch/app_42/" + tokAcme},
		{target: "/webhooks/catch/app_42/%74ok_acme_stripe_3b8f1c9d2e"},
		{target: "/webhooks/catch/%2e%2e/" + tokAcme},
		{target: "/webhooks/catch/app%2042/" + tokAcme},
		{target: "/webhooks/catch\\app_42/" + tokAcme},
		// app ids
		{target: "/webhooks/catch/" + long + "a/" + tokAcme},
		{target: "/webhooks/catch/app:42/" + tokAcme},
		{target: "/webhooks/catch/app@42/" + tokAcme},
		{target: "/webhooks/catch/app~42/" + tokAcme},
	}
	for _, tc := range cases {
		route, ok := r.Resolve(header(t, "POST", tc.target), nil)
		if ok != tc.ok {
			t.Errorf("%s: resolved %v, want %v (route %+v)", tc.target, ok, tc.ok, route)
			continue
		}
		if !ok {
			if route.SourceID != "" || route.TenantID != "" || route.Params.Len() != 0 {
				t.Errorf("%s: refused, but the route is not empty: %+v", tc.target, route)
			}
			continue
		}
		if route.SourceID != tc.source || route.TenantID != tc.tenant {
			t.Errorf("%s: source %q tenant %q, want %q %q", tc.target, route.SourceID, route.TenantID, tc.source, tc.tenant)
		}
		if app, _ := route.Params.Get(paramAppID); app != tc.app || route.Params.Len() != 1 {
			t.Errorf("%s: %d params, app_id %q; want only app_id %q (the token is never a param)", tc.target, route.Params.Len(), app, tc.app)
		}
	}
}

// The resolver decides from the request target only: the method is the
// router's business (405 before any resolver runs).
func TestResolveIgnoresMethod(t *testing.T) {
	r := testResolver(t, nil)
	if _, ok := r.Resolve(header(t, "PUT", "/webhooks/catch/a/"+tokAcme), nil); !ok {
		t.Fatal("a PUT to a token URL does not resolve; the router, not the resolver, answers 405")
	}
}

func TestResolvePrefix(t *testing.T) {
	cases := []struct {
		prefix []string
		target string
		ok     bool
	}{
		{nil, "/webhooks/catch/a/" + tokAcme, true},
		{[]string{"webhooks"}, "/webhooks/a/" + tokAcme, true},
		{[]string{"webhooks"}, "/webhooks/catch/a/" + tokAcme, false},
		{[]string{"in", "hooks", "v2"}, "/in/hooks/v2/a/" + tokAcme, true},
		{[]string{"in", "hooks", "v2"}, "/in/hooks/a/" + tokAcme, false},
		{[]string{}, "/a/" + tokAcme, true},
		{[]string{}, "/webhooks/catch/a/" + tokAcme, false},
	}
	for _, tc := range cases {
		r := testResolver(t, tc.prefix)
		if _, ok := r.Resolve(header(t, "POST", tc.target), nil); ok != tc.ok {
			t.Errorf("prefix %q, %s: resolved %v, want %v", tc.prefix, tc.target, ok, tc.ok)
		}
	}
}

// Resolve runs in fasthttp's HeaderReceived hook for every request: it must
// not allocate, whether it finds the token or not.
func TestResolveAllocs(t *testing.T) {
	r := testResolver(t, nil)
	for _, target := range []string{
		"/webhooks/catch/app_42/" + tokAcme,
		"/webhooks/catch/app_42/" + tokFile,
		"/webhooks/catch/app_42/tok_unknown_0000000000",
		"/webhooks/catch/app:42/" + tokAcme,
		"/webhooks/catch/../" + tokAcme,
		"/other",
	} {
		h := header(t, "POST", target)
		var sink edge.Route
		allocs := testing.AllocsPerRun(1000, func() {
			sink, _ = r.Resolve(h, nil)
		})
		if allocs != 0 {
			t.Errorf("%s: Resolve allocates %v times per request, want 0", target, allocs)
		}
		_ = sink
	}
}

func TestNewResolverErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"`+tokFile+`": "acme-billing"}`)
	notJSON := write("bad.json", `token: stripe`)
	badEntry := write("entry.json", `{"short": "stripe", "`+tokAcme+`": "Stripe"}`)
	cases := []struct {
		name string
		opts map[string]string
		want []string // each must be in the error
	}{
		{"no options", nil, []string{"has no tokens", "tokens_file", "token.<token>"}},
		{"unknown option", map[string]string{"token." + tokAcme: "stripe", "tokens": "x"},
			[]string{"route_resolver.options.tokens: unknown option"}},
		{"short token", map[string]string{"token.abc": "stripe"}, []string{"must be 16 to 128 characters"}},
		{"token with a dot", map[string]string{"token.tok_acme_stripe.3b8f1c9d2e": "stripe"}, []string{"must be 16 to 128 characters"}},
		{"token too long", map[string]string{"token." + strings.Repeat("t", 129): "stripe"}, []string{"must be 16 to 128 characters"}},
		{"bad source", map[string]string{"token." + tokAcme: "Stripe"}, []string{`source "Stripe" must match`}},
		{"empty source", map[string]string{"token." + tokAcme: "@acme"}, []string{`source "" must match`}},
		{"bad tenant", map[string]string{"token." + tokAcme: "stripe@-acme"}, []string{`tenant "-acme" must match`}},
		{"empty tenant", map[string]string{"token." + tokAcme: "stripe@"}, []string{`tenant "" must match`}},
		{"two tenants", map[string]string{"token." + tokAcme: "stripe@acme@globex"}, []string{`tenant "acme@globex" must match`}},
		{"missing file", map[string]string{"tokens_file": filepath.Join(dir, "nope.json")},
			[]string{"cannot read route_resolver.options.tokens_file", "nope.json"}},
		{"not JSON", map[string]string{"tokens_file": notJSON}, []string{"cannot parse route_resolver.options.tokens_file", "JSON object"}},
		{"bad file entries", map[string]string{"tokens_file": badEntry},
			[]string{"entry.json", "must be 16 to 128 characters", `source "Stripe" must match`}},
		{"token inline and in the file", map[string]string{"tokens_file": good, "token." + tokFile: "stripe"},
			[]string{"listed twice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newResolver(config.RouteResolver{Type: resolverName, Options: tc.opts})
			if err == nil {
				t.Fatalf("built a resolver (%v), want an error", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, tok := range []string{tokAcme, tokFile} {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("error %q prints a whole token", err)
				}
			}
		})
	}
}

// The sample config checks, and its resolver serves its tokens: README.md
// and ankusa.yaml stay in step with the code.
func TestSampleConfig(t *testing.T) {
	cfg, err := config.LoadFile("ankusa.yaml", config.ValidateOptions{
		ResolverKnown: func(name string) bool { return name == resolverName },
	})
	if err != nil {
		t.Fatalf("ankusa.yaml: %v", err)
	}
	if cfg.RouteResolver.Type != resolverName || !cfg.RateLimits.Default.Finite() {
		t.Fatalf("ankusa.yaml: route_resolver.type %q, finite default rate %v", cfg.RouteResolver.Type, cfg.RateLimits.Default.Finite())
	}
	r, err := newResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatalf("ankusa.yaml: route_resolver: %v", err)
	}
	route, ok := r.Resolve(header(t, "POST", "/webhooks/catch/app_42/"+tokAcme), nil)
	if !ok || route.SourceID != "stripe" || route.TenantID != "acme" {
		t.Fatalf("ankusa.yaml: %s resolves to %+v %v, want stripe@acme", tokAcme, route, ok)
	}
	if _, ok := cfg.Sources[route.SourceID]; !ok {
		t.Fatalf("ankusa.yaml: token names source %q, which it does not define", route.SourceID)
	}
}
