package source

import (
	"bytes"
	"crypto/sha256"
	"time"

	"github.com/ankusa/ankusa/config"
)

// Route is one route of a snapshot: owned by a tenant, optionally bound to
// a source, matched by the route guard on its host and path pattern (when
// it has a path) and by the token resolver on its tokens.
type Route struct {
	ID       string
	TenantID string
	SourceID string // empty: any source
	Host     []byte // empty: any host
	Path     string // the pattern; empty: the route guard never matches it
	// Tokens are the route's catch tokens, as digests: a route holds one,
	// or two during a rotation.
	Tokens []Token
	// FromConfig is true for a route of routes.table.
	FromConfig       bool
	Created, Updated time.Time
	// Version is as Source.Version.
	Version uint64
	segs    []string
	isParam []bool
}

// Token is one catch token of a route: its id (what the admin API shows
// and revokes by) and the SHA-256 of the token, which is all the node
// keeps of it.
type Token struct {
	ID      string
	Digest  [sha256.Size]byte
	Created time.Time
}

// Shared reports whether the route belongs to the shared tenant, in which
// case the source and the URL decide the tenant, as without routes.
func (r *Route) Shared() bool { return r.TenantID == config.DefaultTenant }

// HostMatches reports whether a request's Host header (port ignored,
// case folded) is the route's host; a route without one matches any. It
// allocates nothing.
func (r *Route) HostMatches(host []byte) bool {
	if len(r.Host) == 0 {
		return true
	}
	if i := bytes.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return bytes.EqualFold(r.Host, host)
}

// ParamCount is the number of :params in the route's path.
func (r *Route) ParamCount() int {
	n := 0
	for _, p := range r.isParam {
		if p {
			n++
		}
	}
	return n
}

// compileRoute compiles a route spec; nil when its path does not parse
// (validation refuses such a route before it gets here).
func compileRoute(cr config.Route) *Route {
	r := &Route{ID: cr.ID, TenantID: cr.TenantID, SourceID: cr.SourceID, Host: []byte(cr.Host), Path: cr.Path}
	if r.TenantID == "" {
		r.TenantID = config.DefaultTenant
	}
	if cr.Path == "" {
		return r
	}
	pat, err := config.ParseRoutePath(cr.Path)
	if err != nil {
		return nil
	}
	for _, s := range pat.Segments {
		if len(s) > 1 && s[0] == ':' {
			r.segs = append(r.segs, s[1:])
			r.isParam = append(r.isParam, true)
		} else {
			r.segs = append(r.segs, s)
			r.isParam = append(r.isParam, false)
		}
	}
	return r
}

// routeTable is the route guard's table: the routes with a path, by their
// number of segments, each list in table order (the config's routes first,
// then those written through the admin API). It is immutable: with and
// without copy the one list they change.
type routeTable struct {
	bySegs map[int][]*Route
}

func (t routeTable) with(r *Route) routeTable {
	n := routeTable{bySegs: make(map[int][]*Route, len(t.bySegs)+1)}
	for k, v := range t.bySegs {
		n.bySegs[k] = v
	}
	old := t.bySegs[len(r.segs)]
	n.bySegs[len(r.segs)] = append(old[:len(old):len(old)], r)
	return n
}

func (t routeTable) without(r *Route) routeTable {
	n := routeTable{bySegs: make(map[int][]*Route, len(t.bySegs))}
	for k, v := range t.bySegs {
		n.bySegs[k] = v
	}
	var kept []*Route
	for _, x := range t.bySegs[len(r.segs)] {
		if x != r {
			kept = append(kept, x)
		}
	}
	n.bySegs[len(r.segs)] = kept
	return n
}

// MatchRoute returns the first route, in table order, whose host and path
// match; segs are the request's raw path segments and host its Host header.
// For each :param of the route, param is called with its name and the
// segment. It allocates nothing.
func (s *Snapshot) MatchRoute(host []byte, segs [][]byte, param func(name string, value []byte)) *Route {
	for _, r := range s.guard.bySegs[len(segs)] {
		if !r.HostMatches(host) {
			continue
		}
		if !r.matchPath(segs) {
			continue
		}
		if param != nil {
			for i, p := range r.isParam {
				if p {
					param(r.segs[i], segs[i])
				}
			}
		}
		return r
	}
	return nil
}

func (r *Route) matchPath(segs [][]byte) bool {
	for i, s := range r.segs {
		if r.isParam[i] {
			if len(segs[i]) == 0 {
				return false
			}
			continue
		}
		if string(segs[i]) != s {
			return false
		}
	}
	return true
}
