package edge

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// hostResolver resolves POST https://<tenant>.<suffix>/<prefix...>/:source_id:
// the tenant is the one label of the Host header before
// route_resolver.suffix, the source the path segment after the prefix.
// The tenant comes from the request, so config requires a finite
// rate_limits.default and the trust_url_tenant rule with it, as for
// tenantpath.
//
// The Host is taken as sent, without allocating: its port (digits after a
// ":") is ignored, and it must be lower-case. Host names are
// case-insensitive, but folding one would mean a copy per request, and
// the tenant name is lower-case anyway: a host with an upper-case letter
// anywhere is the one 404 (URL parsers lower-case the host; hand senders
// the lower-case URL). An absolute-form request target
// ("POST http://acme.hooks.example.com/...") must name the same host as
// the Host header, byte for byte, or it is a 404: the two must not name
// different tenants.
//
// A missing Host, a host not ending in "."+suffix, more than one label
// before the suffix, a label outside the name grammar and a path not
// matching are all the one 404. Tenant names may hold dots; such a tenant
// cannot be reached through this resolver.
type hostResolver struct {
	prefix []string
	suffix string // "." + route_resolver.suffix
}

func newHostResolver(cfg config.RouteResolver) (Resolver, error) {
	if !config.ValidHostSuffix(cfg.Suffix) {
		return nil, fmt.Errorf("route_resolver.suffix: %q must be a lower-case DNS name without port or leading dot (hooks.example.com)", cfg.Suffix)
	}
	return &hostResolver{prefix: cfg.Prefix, suffix: "." + cfg.Suffix}, nil
}

func (r *hostResolver) Resolve(h *fasthttp.RequestHeader, _ *source.Snapshot) (Route, bool) {
	tenant, ok := r.tenant(h)
	if !ok {
		return Route{}, false
	}
	var segs Segments
	if !SplitPath(h.RequestURI(), &segs) || segs.n != len(r.prefix)+1 || !matchPrefix(&segs, r.prefix) {
		return Route{}, false
	}
	src := segs.s[len(r.prefix)]
	if !config.ValidName(src) {
		return Route{}, false
	}
	return Route{TenantID: b2s(tenant), SourceID: b2s(src)}, true
}

// tenant returns the tenant label of the request's host.
func (r *hostResolver) tenant(h *fasthttp.RequestHeader) ([]byte, bool) {
	host := h.Host()
	if auth, absolute := targetAuthority(h.RequestURI()); absolute && string(auth) != string(host) {
		return nil, false
	}
	host, ok := stripPort(host)
	if !ok || len(host) <= len(r.suffix) || string(host[len(host)-len(r.suffix):]) != r.suffix {
		return nil, false
	}
	label := host[:len(host)-len(r.suffix)]
	if indexByte(label, '.') >= 0 || !config.ValidName(label) {
		return nil, false
	}
	return label, true
}

// stripPort drops a ":port" from a host; a port that is not 1 to 5 digits
// is not ok.
func stripPort(host []byte) ([]byte, bool) {
	i := indexByte(host, ':')
	if i < 0 {
		return host, true
	}
	port := host[i+1:]
	if len(port) == 0 || len(port) > 5 {
		return nil, false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return host[:i], true
}

// targetAuthority returns the authority of an absolute-form request
// target ("http://host:port/path"); absolute is false for the origin form.
func targetAuthority(uri []byte) (auth []byte, absolute bool) {
	var rest []byte
	switch {
	case len(uri) > 7 && equalFoldASCII(uri[:7], "http://"):
		rest = uri[7:]
	case len(uri) > 8 && equalFoldASCII(uri[:8], "https://"):
		rest = uri[8:]
	default:
		return nil, false
	}
	if i := indexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}
