package config

import "strings"

// TokenParam is the :param of the token resolver's path that carries the
// token.
const TokenParam = "token"

// ResolverKeys say which keys of route_resolver a resolver takes, type
// aside.
type ResolverKeys struct {
	Prefix, Path, Suffix, Options bool
}

// builtinKeys are the resolvers config itself knows and the keys each
// takes.
var builtinKeys = map[string]ResolverKeys{
	"path":       {Prefix: true},
	"tenantpath": {Prefix: true},
	"host":       {Prefix: true, Suffix: true},
	"token":      {Path: true},
}

// ResolverTakes returns the keys resolver name takes. A registered
// resolver takes prefix and options: path and suffix are the built-in
// token and host resolvers' own.
func ResolverTakes(name string) ResolverKeys {
	if k, ok := builtinKeys[name]; ok {
		return k
	}
	return ResolverKeys{Prefix: true, Options: true}
}

// builtinResolver reports whether name is one of the resolvers config
// itself knows.
func builtinResolver(name string) bool {
	_, ok := builtinKeys[name]
	return ok
}

func validateResolver(p *Problems, r RouteResolver, opts ValidateOptions) {
	for i, seg := range r.Prefix {
		if seg == "" || !validSegment(seg) {
			p.add("route_resolver.prefix[%d]: %q is not a plain path segment", i, seg)
		}
	}
	if !builtinResolver(r.Type) && (opts.ResolverKnown == nil || !opts.ResolverKnown(r.Type)) {
		p.add("route_resolver.type: unknown resolver %q (path, tenantpath, host, token, or a registered one)", r.Type)
		return
	}
	takes := ResolverTakes(r.Type)
	refuseKey(p, r.Type, "prefix", r.Prefix != nil && !takes.Prefix, " (its path says where it listens)")
	refuseKey(p, r.Type, "path", r.Path != "" && !takes.Path, " (path is the token resolver's)")
	refuseKey(p, r.Type, "suffix", r.Suffix != "" && !takes.Suffix, " (suffix is the host resolver's)")
	refuseKey(p, r.Type, "options", len(r.Options) > 0 && !takes.Options, " (options are for a registered resolver)")
	if takes.Path {
		validateTokenPath(p, r.Type, r.Path)
	}
	if takes.Suffix {
		switch {
		case r.Suffix == "":
			p.add("route_resolver.suffix: resolver %q needs the domain its tenants' hosts end in (suffix: hooks.example.com)", r.Type)
		case !ValidHostSuffix(r.Suffix):
			p.add("route_resolver.suffix: %q must be a lower-case DNS name without port or leading dot (hooks.example.com)", r.Suffix)
		}
	}
}

// refuseKey names a key given to a resolver that does not take it.
func refuseKey(p *Problems, typ, key string, given bool, why string) {
	if given {
		p.add("route_resolver.%s: resolver %q takes no %s%s", key, typ, key, why)
	}
}

// validateTokenPath checks the token resolver's pattern: it parses as a
// route path and carries exactly one :token.
func validateTokenPath(p *Problems, typ, path string) {
	if path == "" {
		p.add("route_resolver.path: resolver %q needs the pattern its URLs follow, with one :%s (path: /webhooks/catch/:%s)", typ, TokenParam, TokenParam)
		return
	}
	pat, err := ParseRoutePath(path)
	if err != nil {
		p.add("route_resolver.path: %v", err)
		return
	}
	n := 0
	for _, s := range pat.Segments {
		if s == ":"+TokenParam {
			n++
		}
	}
	if n != 1 {
		p.add("route_resolver.path: %q must carry the token as one :%s segment", path, TokenParam)
	}
}

// ValidHostSuffix reports whether s is a lower-case DNS name: labels of
// [a-z0-9-] (1 to 63, not starting or ending with "-") joined by dots, at
// most 253 bytes, with no port, no leading and no trailing dot.
func ValidHostSuffix(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
