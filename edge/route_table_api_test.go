package edge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/source"
)

// apiRoutesSources are the sources of the route-table tests: a shared one
// and three owned by a tenant.
const apiRoutesSources = `source_store: {type: persistent}
routes: {enabled: true}
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
  acme-stripe: {tenant_id: acme, verify: {type: none}}
  globex-stripe: {tenant_id: globex, verify: {type: none}}
  acme.billing: {tenant_id: acme, verify: {type: none}}
`

// TestRouteTableAPIRoutes is the seed's route table, row by row, for
// routes written at runtime (the persistent store, as the admin API
// writes them) against the real listener: each row's route is created,
// holds from the very next request, and is gone from the request after
// its deletion. TestRouteTable has the same rows for routes.table.
func TestRouteTableAPIRoutes(t *testing.T) {
	type server struct {
		n *node
		p *source.Persistent
	}
	serve := func(yaml string) server {
		cfg := loadConfig(t, yaml)
		p := openPersistent(t, cfg)
		return server{startNode(t, cfg, withStore(p)), p}
	}
	path := serve("node: {name: test}\n" + limitsYAML + "route_resolver: {type: path, prefix: [hooks]}\n" + apiRoutesSources)
	tenantPath := serve("node: {name: test}\n" + limitsYAML + "route_resolver: {type: tenantpath, prefix: [webhooks]}\nrate_limits: {default: {rate: 100, burst: 100}}\n" + apiRoutesSources)
	cases := []struct {
		name   string
		s      server
		route  source.RouteWrite
		url    string
		status int
		tenant string // stored under, for a 201
		// control is a URL the same route admits, under tenant: a 404 row
		// is then the binding's, not a route that did not take hold.
		control string
	}{
		{"route acme, source owned by globex", path,
			source.RouteWrite{Tenant: "acme", Path: "/hooks/:s"}, "/hooks/globex-stripe", 404, "acme", "/hooks/acme-stripe"},
		{"route acme, tenantpath names globex", tenantPath,
			source.RouteWrite{Tenant: "acme", Path: "/webhooks/:t/:s"}, "/webhooks/globex/shared", 404, "acme", "/webhooks/acme/shared"},
		{"route acme, shared source, no tenant in URL", path,
			source.RouteWrite{Tenant: "acme", Path: "/hooks/:s"}, "/hooks/shared", 201, "acme", ""},
		{"route acme, source owned by acme", path,
			source.RouteWrite{Tenant: "acme", Path: "/hooks/:s"}, "/hooks/acme-stripe", 201, "acme", ""},
		{"route acme, tenantpath names acme, shared source", tenantPath,
			source.RouteWrite{Tenant: "acme", Path: "/webhooks/:t/:s"}, "/webhooks/acme/shared", 201, "acme", ""},
		{"route source acme.billing, resolves to another source", path,
			source.RouteWrite{Tenant: "acme", SourceID: "acme.billing", Path: "/hooks/:s"}, "/hooks/acme-stripe", 404, "acme", "/hooks/acme.billing"},
		{"route source acme.billing, resolves to it", path,
			source.RouteWrite{Tenant: "acme", SourceID: "acme.billing", Path: "/hooks/:s"}, "/hooks/acme.billing", 201, "acme", ""},
		{"route default, no source: shared source", path,
			source.RouteWrite{Tenant: "default", Path: "/hooks/:s"}, "/hooks/shared", 201, "default", ""},
		{"route default, no source: source owned by globex", path,
			source.RouteWrite{Tenant: "default", Path: "/hooks/:s"}, "/hooks/globex-stripe", 201, "globex", ""},
		{"route default, no source: tenantpath names acme", tenantPath,
			source.RouteWrite{Tenant: "default", Path: "/webhooks/:t/:s"}, "/webhooks/acme/shared", 201, "acme", ""},
		{"route on another path", path,
			source.RouteWrite{Tenant: "acme", Path: "/elsewhere/:s"}, "/hooks/shared", 404, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, p := c.s.n, c.s.p
			wantNotFound(t, "before the route exists", postHook(t, n.addr, "", c.url))
			w := c.route
			w.Create = true
			r, _ := putRoute(t, p, w)
			a := postHook(t, n.addr, "", c.url)
			if c.status == 404 {
				wantNotFound(t, "with the route", a)
				if c.control != "" {
					n.wantStored(t, "the route's control URL", postHook(t, n.addr, "", c.control), c.tenant, lastSegment(c.control))
				}
			} else {
				n.wantStored(t, "with the route", a, c.tenant, lastSegment(c.url))
			}
			deleteRoute(t, p, r.TenantID, r.ID)
			wantNotFound(t, "after the route's deletion", postHook(t, n.addr, "", c.url))
		})
	}
}

// TestAPIRouteRefusesAnotherTenantsSource: the store refuses a route of
// acme to globex's source (the same refusal as an unknown source), so the
// edge never sees one; a route of acme to a shared source is acme's.
func TestAPIRouteRefusesAnotherTenantsSource(t *testing.T) {
	cfg := loadConfig(t, "node: {name: test}\n"+limitsYAML+"route_resolver: {type: path, prefix: [hooks]}\n"+apiRoutesSources)
	p := openPersistent(t, cfg)
	for _, w := range []source.RouteWrite{
		{Tenant: "acme", Create: true, SourceID: "globex-stripe", Path: "/hooks/:s"},
		{Tenant: "acme", Create: true, SourceID: "globex-stripe", Token: source.TokenAuto},
		{Tenant: "acme", Create: true, SourceID: "nope", Path: "/hooks/:s"},
	} {
		if r, minted, err := p.PutRoute(w); err == nil || errCode(err) != source.CodeInvalidRoute {
			t.Errorf("PutRoute(%+v) = %v, %q, %v; want %s", w, r, minted, err, source.CodeInvalidRoute)
		}
	}
	if n := p.Snapshot().RouteCount(); n != 0 {
		t.Fatalf("%d routes stored after the refusals", n)
	}
	r, _ := putRoute(t, p, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "shared", Path: "/hooks/:s"})
	if got := p.Snapshot().Route("acme", r.ID); got == nil || got.TenantID != "acme" {
		t.Fatalf("the route to a shared source is %+v, want acme's", got)
	}
	if got, _ := p.Snapshot().Routes("default", "", 10); len(got) != 0 {
		t.Fatalf("the shared tenant lists %d routes", len(got))
	}
}

func lastSegment(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// errCode is the code of a store's refusal.
func errCode(err error) string {
	var e *source.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
