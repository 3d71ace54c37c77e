package main

import (
	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
)

// resolverName is what route_resolver.type names this scheme by.
const resolverName = "opaquetoken"

// paramAppID is the route parameter the URL's app id is stored under.
const paramAppID = "app_id"

// defaultPrefix is the prefix when route_resolver.prefix is left out.
var defaultPrefix = []string{"webhooks", "catch"}

// maxAppID bounds the app id segment.
const maxAppID = 64

// resolver resolves POST /<prefix...>/:app_id/:token by looking the token up
// in a table fixed at construction. The token picks the source and,
// optionally, the tenant; the app id is kept as a route parameter. The
// token itself is never put into the route: it is the secret of the URL.
//
// A resolver is immutable after construction and safe for concurrent use.
type resolver struct {
	prefix []string
	tokens map[string]target
}

func newResolver(cfg config.RouteResolver) (edge.Resolver, error) {
	tokens, err := loadTokens(cfg.Options)
	if err != nil {
		return nil, err
	}
	prefix := cfg.Prefix
	if prefix == nil {
		prefix = defaultPrefix
	}
	return &resolver{prefix: prefix, tokens: tokens}, nil
}

// Resolve is a pure function of the request line: no I/O, no allocation.
// It keeps its own token table, so it does not read the snapshot (the
// built-in token resolver, route_resolver.type: token, reads its tokens
// from the snapshot, minted through the admin API).
// The route's strings are the table's own (source, tenant) or views into the
// header (app id), valid while the request is handled, as edge.Route says.
// Dot segments, any percent-encoding, empty segments (edge.SplitPath), a
// malformed app id and an unknown token all answer false: the same 404.
func (r *resolver) Resolve(h *fasthttp.RequestHeader, _ *edge.Snapshot) (edge.Route, bool) {
	var segs edge.Segments
	n := len(r.prefix)
	if !edge.SplitPath(h.RequestURI(), &segs) || segs.Len() != n+2 || !segs.HasPrefix(r.prefix) {
		return edge.Route{}, false
	}
	app, tok := segs.At(n), segs.At(n+1)
	if !validAppID(app) {
		return edge.Route{}, false
	}
	t, ok := r.tokens[string(tok)] // the compiler does not copy tok here
	if !ok {
		return edge.Route{}, false
	}
	route := edge.Route{SourceID: t.source, TenantID: t.tenant}
	route.Params.Set(paramAppID, segs.View(n))
	return route, true
}

// validAppID reports whether b is an app id: 1 to 64 of [A-Za-z0-9._-],
// not starting with a dot. App ids are the sender's, so upper case is kept.
func validAppID(b []byte) bool {
	if len(b) == 0 || len(b) > maxAppID || b[0] == '.' {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
