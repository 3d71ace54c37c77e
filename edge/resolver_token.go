package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// tokenResolver resolves POST <path> where path is route_resolver.path, a
// pattern of literal segments and :params with exactly one :token
// ("/webhooks/catch/:app_id/:token"). The token is looked up in the
// snapshot's route table (snap.RouteByToken: its SHA-256, no I/O, no
// allocation); the route names the source and the tenant. The other
// :params go into Route.Params; the token never does (it is the URL's
// secret, and is stored nowhere but as a digest).
//
// A route of the shared tenant ("default") resolves with an empty tenant:
// the source decides, as the seed's route table says of a route of tenant
// default ("as without routes"); the store lets such a route point only
// at a shared source, so the hook is stored under "default". A route of
// any other tenant names its tenant, and the router holds it against the
// source's owner as it does a URL's tenant.
//
// A URL that does not follow the pattern, a token outside the name
// grammar, an unknown (or revoked) token and a route without a source are
// all the one 404.
type tokenResolver struct {
	segs    []string // a literal, or a :param's name
	isParam []bool
	token   int // index of the :token segment
}

func newTokenResolver(cfg config.RouteResolver) (Resolver, error) {
	pat, err := config.ParseRoutePath(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("route_resolver.path: %w", err)
	}
	r := &tokenResolver{token: -1}
	for i, s := range pat.Segments {
		name, param := cutParam(s)
		if param && name == config.TokenParam {
			if r.token >= 0 {
				return nil, fmt.Errorf("route_resolver.path: %q must carry the token as one :%s segment", cfg.Path, config.TokenParam)
			}
			r.token = i
		}
		r.segs = append(r.segs, name)
		r.isParam = append(r.isParam, param)
	}
	if r.token < 0 {
		return nil, fmt.Errorf("route_resolver.path: %q must carry the token as one :%s segment", cfg.Path, config.TokenParam)
	}
	return r, nil
}

// cutParam splits a pattern segment into a :param's name (param true) or
// a literal.
func cutParam(s string) (string, bool) {
	if len(s) > 1 && s[0] == ':' {
		return s[1:], true
	}
	return s, false
}

func (r *tokenResolver) Resolve(h *fasthttp.RequestHeader, snap *source.Snapshot) (Route, bool) {
	var segs Segments
	if !SplitPath(h.RequestURI(), &segs) || segs.n != len(r.segs) {
		return Route{}, false
	}
	var route Route
	for i, s := range r.segs {
		switch {
		case !r.isParam[i]:
			if string(segs.s[i]) != s {
				return Route{}, false
			}
		case i != r.token:
			if !route.Params.Set(s, b2s(segs.s[i])) {
				return Route{}, false
			}
		}
	}
	tok := segs.s[r.token]
	if !config.ValidName(tok) {
		return Route{}, false
	}
	rt := snap.RouteByToken(tok)
	if rt == nil || rt.SourceID == "" || !rt.HostMatches(h.Host()) {
		return Route{}, false
	}
	route.SourceID, route.Via = rt.SourceID, rt
	if !rt.Shared() {
		route.TenantID = rt.TenantID
	}
	return route, true
}
