package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// tenantPathResolver resolves POST /<prefix...>/:tenant_id/:source_id. The
// URL names the tenant a shared source stores the hook under; config
// validation requires a finite rate_limits.default with it.
type tenantPathResolver struct{ prefix []string }

func newTenantPathResolver(cfg config.RouteResolver) (Resolver, error) {
	return tenantPathResolver{prefix: cfg.Prefix}, nil
}

func (r tenantPathResolver) Resolve(h *fasthttp.RequestHeader, _ *source.Snapshot) (Route, bool) {
	var segs Segments
	if !SplitPath(h.RequestURI(), &segs) || segs.n != len(r.prefix)+2 || !matchPrefix(&segs, r.prefix) {
		return Route{}, false
	}
	tenant, src := segs.s[len(r.prefix)], segs.s[len(r.prefix)+1]
	if !config.ValidName(tenant) || !config.ValidName(src) {
		return Route{}, false
	}
	return Route{TenantID: b2s(tenant), SourceID: b2s(src)}, true
}
