package config

import (
	"fmt"
	"strings"
)

// MaxRouteParams bounds the :params of a route together with those its
// resolver sets (edge.MaxParams).
const MaxRouteParams = 8

// RoutePattern is a parsed route path: literal segments and :params.
type RoutePattern struct {
	Segments []string // literal, or ":name" for a parameter
}

// ParseRoutePath parses a route path pattern.
func ParseRoutePath(path string) (RoutePattern, error) {
	if !strings.HasPrefix(path, "/") || len(path) < 2 {
		return RoutePattern{}, fmt.Errorf("path %q must start with / and name at least one segment", path)
	}
	segs := strings.Split(path[1:], "/")
	if len(segs) > 16 {
		return RoutePattern{}, fmt.Errorf("path %q has more than 16 segments", path)
	}
	params := map[string]bool{}
	for _, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			if !NameRE.MatchString(strings.ReplaceAll(name, "_", "-")) {
				return RoutePattern{}, fmt.Errorf("path %q: parameter %q must be a lower-case name", path, s)
			}
			if params[name] {
				return RoutePattern{}, fmt.Errorf("path %q: parameter %q appears twice", path, s)
			}
			params[name] = true
			if len(params) > MaxRouteParams {
				return RoutePattern{}, fmt.Errorf("path %q has more than %d parameters", path, MaxRouteParams)
			}
			continue
		}
		if s == "" || !validSegment(s) {
			return RoutePattern{}, fmt.Errorf("path %q: segment %q is not a plain path segment", path, s)
		}
	}
	return RoutePattern{Segments: segs}, nil
}

// ValidateRoute checks one route; the config file and the admin API share
// it. sourceKnown may be nil.
func ValidateRoute(at string, r *Route, sourceKnown func(string) bool) Problems {
	var p Problems
	if !NameRE.MatchString(r.ID) {
		p.add("%s.id: %q must match %s", at, r.ID, NameRE)
	}
	if !NameRE.MatchString(r.TenantID) {
		p.add("%s.tenant_id: %q must match %s", at, r.TenantID, NameRE)
	}
	if r.SourceID != "" {
		if !NameRE.MatchString(r.SourceID) {
			p.add("%s.source_id: %q must match %s", at, r.SourceID, NameRE)
		} else if sourceKnown != nil && !sourceKnown(r.SourceID) {
			p.add("%s.source_id: no source named %q", at, r.SourceID)
		}
	}
	if r.Host != "" && (strings.ContainsAny(r.Host, "/ :") || strings.ToLower(r.Host) != r.Host) {
		p.add("%s.host: %q must be a lower-case host name without port", at, r.Host)
	}
	if _, err := ParseRoutePath(r.Path); err != nil {
		p.add("%s.path: %v", at, err)
	}
	return p
}

func validateRoutes(p *Problems, c *Config) {
	if !c.Routes.Enabled && len(c.Routes.Table) > 0 {
		p.add("routes.table: routes are listed but routes.enabled is false; set routes.enabled: true")
	}
	if c.Routes.Enabled && len(c.Routes.Table) == 0 && c.SourceStore.Type == "static" {
		p.add("routes.enabled: true with no routes.table refuses every request; list the routes")
	}
	seen := map[string]bool{}
	for i := range c.Routes.Table {
		r := &c.Routes.Table[i]
		at := fmt.Sprintf("routes.table[%d]", i)
		*p = append(*p, ValidateRoute(at, r, func(s string) bool { _, ok := c.Sources[s]; return ok })...)
		if seen[r.ID] {
			p.add("%s.id: %q is used twice", at, r.ID)
		}
		seen[r.ID] = true
	}
}
