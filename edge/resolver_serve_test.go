package edge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
)

// TestTokenRoutesServe is the token resolver against the real listener
// with the persistent store: a minted token files its hooks under its
// route's tenant and source from the very next request, a revoked one is
// the 404 from the very next request, and during a rotation both tokens
// work until the old one is dropped.
func TestTokenRoutesServe(t *testing.T) {
	cfg := loadConfig(t, tokenConfig)
	p := openPersistent(t, cfg)
	n := startNode(t, cfg, withStore(p))
	url := func(tok string) string { return "/webhooks/catch/app-7/" + tok }

	shared, tokShared := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Token: source.TokenAuto})
	e := n.wantStored(t, "acme's token to the shared source", postHook(t, n.addr, "", url(tokShared)), "acme", "shared")
	if want := fmt.Sprint([]envelope.Param{{Key: "app_id", Value: "app-7"}}); fmt.Sprint(e.RouteParams) != want {
		t.Fatalf("route params %v, want %s (and never the token)", e.RouteParams, want)
	}
	own, tokOwn := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "acme-stripe", Token: source.TokenAuto})
	n.wantStored(t, "acme's token to its source", postHook(t, n.addr, "", url(tokOwn)), "acme", "acme-stripe")
	_, tokDefault := putRoute(t, p, source.RouteWrite{Tenant: "default", Create: true, SourceID: "shared", Token: source.TokenAuto})
	n.wantStored(t, "a token of the shared tenant", postHook(t, n.addr, "", url(tokDefault)), "default", "shared")

	wantNotFound(t, "unknown token", postHook(t, n.addr, "", url(strings.Repeat("b", 26))))
	wantNotFound(t, "a token under another pattern", postHook(t, n.addr, "", "/webhooks/catch/"+tokOwn))

	// Revocation: the next request is the 404.
	deleteRoute(t, p, "acme", shared.ID)
	wantNotFound(t, "revoked token", postHook(t, n.addr, "", url(tokShared)))

	// Rotation: a second token on the route, both work; keeping only the
	// new one revokes the old.
	rotated, tokNew := putRoute(t, p, source.RouteWrite{Tenant: "acme", ID: own.ID, SourceID: "acme-stripe", Token: source.TokenAuto})
	if len(rotated.Tokens) != 2 {
		t.Fatalf("the rotated route holds %d tokens, want 2", len(rotated.Tokens))
	}
	n.wantStored(t, "old token during the rotation", postHook(t, n.addr, "", url(tokOwn)), "acme", "acme-stripe")
	n.wantStored(t, "new token during the rotation", postHook(t, n.addr, "", url(tokNew)), "acme", "acme-stripe")
	putRoute(t, p, source.RouteWrite{Tenant: "acme", ID: own.ID, SourceID: "acme-stripe", KeepTokens: []string{rotated.Tokens[1].ID}})
	wantNotFound(t, "old token after the rotation", postHook(t, n.addr, "", url(tokOwn)))
	n.wantStored(t, "new token after the rotation", postHook(t, n.addr, "", url(tokNew)), "acme", "acme-stripe")

	// A token route of acme to globex's source cannot be made: nothing
	// at the edge files a hook of acme's under globex's source.
	if _, minted, err := p.PutRoute(source.RouteWrite{Tenant: "acme", Create: true, SourceID: "globex-stripe", Token: source.TokenAuto}); errCode(err) != source.CodeInvalidRoute || len(minted) != 0 {
		t.Fatalf("a token route of acme to globex's source: %q, %v; want %s", minted, err, source.CodeInvalidRoute)
	}
	for _, h := range n.stored(t) {
		if h.SourceID == "globex-stripe" {
			t.Fatalf("a hook was filed under globex's source: %+v", h)
		}
	}
}

// TestHostResolverServes is the host resolver against the real listener:
// the host's label is the tenant a shared source stores under, a source
// of another tenant is the 404, and a host the resolver refuses is the
// 404.
func TestHostResolverServes(t *testing.T) {
	n := startNode(t, loadConfig(t, hostConfig))
	n.wantStored(t, "good host, shared source", postHook(t, n.addr, "acme.hooks.example.com", "/webhooks/shared"), "acme", "shared")
	n.wantStored(t, "good host with a port", postHook(t, n.addr, "globex.hooks.example.com:8080", "/webhooks/shared"), "globex", "shared")
	n.wantStored(t, "good host, the tenant's own source", postHook(t, n.addr, "acme.hooks.example.com", "/webhooks/acme-stripe"), "acme", "acme-stripe")
	for _, c := range []struct{ what, host, path string }{
		{"another tenant's source", "globex.hooks.example.com", "/webhooks/acme-stripe"},
		{"wrong suffix", "acme.hooks.example.org", "/webhooks/shared"},
		{"extra labels", "x.acme.hooks.example.com", "/webhooks/shared"},
		{"bad label grammar", "-acme.hooks.example.com", "/webhooks/shared"},
		{"upper case", "ACME.hooks.example.com", "/webhooks/shared"},
		{"the suffix alone", "hooks.example.com", "/webhooks/shared"},
		{"unknown source", "acme.hooks.example.com", "/webhooks/nope"},
	} {
		wantNotFound(t, c.what, postHook(t, n.addr, c.host, c.path))
	}
	r := roundTrip(t, n.addr, exchange{req: rawReq("POST /webhooks/shared HTTP/1.0", []string{"Content-Length: 1"}, "x"), waitClose: true})
	if r.status != 404 || r.code != "not_found" {
		t.Fatalf("missing Host: %s, want the 404", r)
	}
}

// TestTokenRoutesAreGuardRoutes: with routes.enabled, a token's route is
// the route that admitted its request, as a route matched by path would
// be; a request no route admits is still the 404.
func TestTokenRoutesAreGuardRoutes(t *testing.T) {
	cfg := loadConfig(t, strings.Replace(tokenConfig, "source_store:", "routes: {enabled: true}\nsource_store:", 1))
	p := openPersistent(t, cfg)
	n := startNode(t, cfg, withStore(p))
	url := func(tok string) string { return "/webhooks/catch/app-7/" + tok }
	_, tok := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Token: source.TokenAuto})
	n.wantStored(t, "a token route under routes.enabled", postHook(t, n.addr, "", url(tok)), "acme", "shared")
	_, own := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "acme-stripe", Token: source.TokenAuto})
	n.wantStored(t, "acme's own source through its token", postHook(t, n.addr, "", url(own)), "acme", "acme-stripe")
	wantNotFound(t, "an unknown token under routes.enabled", postHook(t, n.addr, "", url(strings.Repeat("c", 26))))
}

// TestTokenRouteHost: a token route with a host answers only on that host
// (port ignored, case folded); elsewhere its token is the 404.
func TestTokenRouteHost(t *testing.T) {
	cfg := loadConfig(t, tokenConfig)
	p := openPersistent(t, cfg)
	n := startNode(t, cfg, withStore(p))
	_, tok := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Host: "hooks.acme.example", Token: source.TokenAuto})
	url := "/webhooks/catch/app-7/" + tok
	n.wantStored(t, "the route's host", postHook(t, n.addr, "HOOKS.acme.example:8443", url), "acme", "shared")
	wantNotFound(t, "another host", postHook(t, n.addr, "hooks.globex.example", url))
}
