package edge

import (
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// pathResolver resolves POST /<prefix...>/:source_id. It leaves the tenant
// empty: the source's own tenant decides (the single-tenant case).
type pathResolver struct{ prefix []string }

func newPathResolver(cfg config.RouteResolver) (Resolver, error) {
	return pathResolver{prefix: cfg.Prefix}, nil
}

func (r pathResolver) Resolve(h *fasthttp.RequestHeader, _ *source.Snapshot) (Route, bool) {
	var segs Segments
	if !SplitPath(h.RequestURI(), &segs) || segs.n != len(r.prefix)+1 || !matchPrefix(&segs, r.prefix) {
		return Route{}, false
	}
	src := segs.s[len(r.prefix)]
	if !config.ValidName(src) {
		return Route{}, false
	}
	return Route{SourceID: b2s(src)}, true
}
