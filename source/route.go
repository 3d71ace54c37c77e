package source

import (
	"bytes"

	"github.com/ankusa/ankusa/config"
)

// Route is one compiled route of a snapshot (see config.Route).
type Route struct {
	ID       string
	TenantID string
	SourceID string // empty: any source
	Host     []byte // empty: any host
	segs     []string
	isParam  []bool
}

// Shared reports whether the route belongs to the shared tenant, in which
// case the source and the URL decide the tenant, as without routes.
func (r *Route) Shared() bool { return r.TenantID == config.DefaultTenant }

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

// routeTable indexes routes by their number of path segments.
type routeTable struct {
	bySegs map[int][]*Route
}

func compileRoutes(routes []config.Route) routeTable {
	t := routeTable{bySegs: map[int][]*Route{}}
	for _, cr := range routes {
		pat, err := config.ParseRoutePath(cr.Path)
		if err != nil {
			continue // validated before a snapshot is built
		}
		r := &Route{ID: cr.ID, TenantID: cr.TenantID, SourceID: cr.SourceID, Host: []byte(cr.Host)}
		if r.TenantID == "" {
			r.TenantID = config.DefaultTenant
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
		t.bySegs[len(r.segs)] = append(t.bySegs[len(r.segs)], r)
	}
	return t
}

// MatchRoute returns the first route, in table order, whose host and path
// match; segs are the request's raw path segments and host its Host header.
// For each :param of the route, param is called with its name and the
// segment. It allocates nothing.
func (s *Snapshot) MatchRoute(host []byte, segs [][]byte, param func(name string, value []byte)) *Route {
	if i := bytes.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	for _, r := range s.routes.bySegs[len(segs)] {
		if len(r.Host) > 0 && !bytes.EqualFold(r.Host, host) {
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
