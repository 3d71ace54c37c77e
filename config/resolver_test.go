package config

import (
	"slices"
	"strings"
	"testing"
)

// TestValidateResolverKeys holds every key of route_resolver to the
// resolvers that take it: a key given to one that does not is refused
// naming the key, a required one missing is named, and a bad value is
// named with its key.
func TestValidateResolverKeys(t *testing.T) {
	registered := ValidateOptions{ResolverKnown: func(name string) bool { return name == "opaque" }}
	cases := []struct {
		name, yaml string
		opts       ValidateOptions
		want       []string // the whole problems, in order; none: valid
	}{
		// token
		{name: "token", yaml: "route_resolver: {type: token, path: /webhooks/catch/:token}\n" + finiteDefault},
		{name: "token with other params", yaml: "route_resolver: {type: token, path: '/webhooks/catch/:app_id/:token'}\n" + finiteDefault},
		{name: "token first", yaml: "route_resolver: {type: token, path: '/:token/in'}\n" + finiteDefault},
		{name: "token without path", yaml: "route_resolver: {type: token}\n" + finiteDefault,
			want: []string{`route_resolver.path: resolver "token" needs the pattern its URLs follow, with one :token (path: /webhooks/catch/:token)`}},
		{name: "token path without :token", yaml: "route_resolver: {type: token, path: '/webhooks/catch/:app_id'}\n" + finiteDefault,
			want: []string{`route_resolver.path: "/webhooks/catch/:app_id" must carry the token as one :token segment`}},
		{name: "token path with a literal token", yaml: "route_resolver: {type: token, path: /webhooks/token}\n" + finiteDefault,
			want: []string{`route_resolver.path: "/webhooks/token" must carry the token as one :token segment`}},
		{name: "token path with :token twice", yaml: "route_resolver: {type: token, path: '/:token/:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: path "/:token/:token": parameter ":token" appears twice`}},
		{name: "token path not a path", yaml: "route_resolver: {type: token, path: 'webhooks/:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: path "webhooks/:token" must start with / and name at least one segment`}},
		{name: "token path with a dot segment", yaml: "route_resolver: {type: token, path: '/a/../:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: path "/a/../:token": segment ".." is not a plain path segment`}},
		{name: "token path with an empty segment", yaml: "route_resolver: {type: token, path: '/a//:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: path "/a//:token": segment "" is not a plain path segment`}},
		{name: "token with prefix", yaml: "route_resolver: {type: token, path: '/c/:token', prefix: [webhooks]}\n" + finiteDefault,
			want: []string{`route_resolver.prefix: resolver "token" takes no prefix (its path says where it listens)`}},
		{name: "token with an empty prefix", yaml: "route_resolver: {type: token, path: '/c/:token', prefix: []}\n" + finiteDefault,
			want: []string{`route_resolver.prefix: resolver "token" takes no prefix (its path says where it listens)`}},
		{name: "token with suffix", yaml: "route_resolver: {type: token, path: '/c/:token', suffix: hooks.example.com}\n" + finiteDefault,
			want: []string{`route_resolver.suffix: resolver "token" takes no suffix (suffix is the host resolver's)`}},
		{name: "token with options", yaml: "route_resolver: {type: token, path: '/c/:token', options: {a: b}}\n" + finiteDefault,
			want: []string{`route_resolver.options: resolver "token" takes no options (options are for a registered resolver)`}},
		{name: "token without rate_limits.default", yaml: "route_resolver: {type: token, path: '/c/:token'}",
			want: []string{`rate_limits.default: resolver "token" takes the tenant from the request, so a finite rate_limits.default (rate > 0, burst > 0) is required`}},
		{name: "token, shared source without verifier", yaml: "route_resolver: {type: token, path: '/c/:token'}\n" + finiteDefault + "sources: {open: {verify: {type: none}}}",
			want: []string{`sources.open: shared source (tenant "default") has no verifier but resolver "token" takes the tenant from the request: anyone could file hooks under any tenant; set trust_url_tenant: true to mean it, or give it a verifier`}},

		// host
		{name: "host", yaml: "route_resolver: {type: host, suffix: hooks.example.com}\n" + finiteDefault},
		{name: "host with prefix", yaml: "route_resolver: {type: host, suffix: hooks.example.com, prefix: [in, v1]}\n" + finiteDefault},
		{name: "host with no prefix", yaml: "route_resolver: {type: host, suffix: hooks.example.com, prefix: []}\n" + finiteDefault},
		{name: "host of one label", yaml: "route_resolver: {type: host, suffix: localhost}\n" + finiteDefault},
		{name: "host without suffix", yaml: "route_resolver: {type: host}\n" + finiteDefault,
			want: []string{`route_resolver.suffix: resolver "host" needs the domain its tenants' hosts end in (suffix: hooks.example.com)`}},
		{name: "host with path", yaml: "route_resolver: {type: host, suffix: hooks.example.com, path: '/c/:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: resolver "host" takes no path (path is the token resolver's)`}},
		{name: "host with a bad prefix", yaml: "route_resolver: {type: host, suffix: hooks.example.com, prefix: ['a/b']}\n" + finiteDefault,
			want: []string{`route_resolver.prefix[0]: "a/b" is not a plain path segment`}},
		{name: "host without rate_limits.default", yaml: "route_resolver: {type: host, suffix: hooks.example.com}",
			want: []string{`rate_limits.default: resolver "host" takes the tenant from the request, so a finite rate_limits.default (rate > 0, burst > 0) is required`}},
		{name: "host, shared source without verifier", yaml: "route_resolver: {type: host, suffix: h.example}\n" + finiteDefault + "sources: {open: {verify: {type: none}}}",
			want: []string{`sources.open: shared source (tenant "default") has no verifier but resolver "host" takes the tenant from the request`}},
		{name: "host, shared source with trust_url_tenant", yaml: "route_resolver: {type: host, suffix: h.example}\n" + finiteDefault + "sources: {open: {verify: {type: none}, trust_url_tenant: true}}"},

		// the others
		{name: "path with suffix", yaml: "route_resolver: {type: path, suffix: hooks.example.com}",
			want: []string{`route_resolver.suffix: resolver "path" takes no suffix (suffix is the host resolver's)`}},
		{name: "tenantpath with path", yaml: "route_resolver: {type: tenantpath, path: '/c/:token'}\n" + finiteDefault,
			want: []string{`route_resolver.path: resolver "tenantpath" takes no path (path is the token resolver's)`}},
		{name: "registered with path and suffix", yaml: "route_resolver: {type: opaque, path: '/c/:token', suffix: a.example}\n" + finiteDefault, opts: registered,
			want: []string{
				`route_resolver.path: resolver "opaque" takes no path (path is the token resolver's)`,
				`route_resolver.suffix: resolver "opaque" takes no suffix (suffix is the host resolver's)`,
			}},
		{name: "registered with prefix and options", yaml: "route_resolver: {type: opaque, prefix: [a], options: {k: v}}\n" + finiteDefault, opts: registered},
		{name: "unknown, and a bad prefix", yaml: "route_resolver: {type: nope, prefix: ['..'], suffix: x}\n" + finiteDefault,
			want: []string{
				`route_resolver.prefix[0]: ".." is not a plain path segment`,
				`route_resolver.type: unknown resolver "nope" (path, tenantpath, host, token, or a registered one)`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			probs := problemsOf(t, c.yaml, c.opts)
			ok := len(probs) == len(c.want)
			for i := 0; ok && i < len(probs); i++ {
				ok = strings.HasPrefix(probs[i], c.want[i])
			}
			if !ok {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(probs, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// TestHostSuffixGrammar is the suffix's grammar, case by case.
func TestHostSuffixGrammar(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, c := range []struct {
		suffix string
		ok     bool
	}{
		{"hooks.example.com", true},
		{"localhost", true},
		{"a-b.c0.example", true},
		{long + ".example", true},
		{strings.Repeat(long+".", 3) + strings.Repeat("a", 61), true}, // 253 bytes
		{strings.Repeat(long+".", 3) + strings.Repeat("a", 62), false},
		{long + "a.example", false},
		{"", false},
		{".hooks.example.com", false},
		{"hooks.example.com.", false},
		{"hooks..example.com", false},
		{"hooks.example.com:8080", false},
		{"Hooks.Example.com", false},
		{"-hooks.example.com", false},
		{"hooks-.example.com", false},
		{"ho_oks.example.com", false},
		{"hooks.example.com/x", false},
		{"*.example.com", false},
	} {
		if got := ValidHostSuffix(c.suffix); got != c.ok {
			t.Errorf("ValidHostSuffix(%q) = %v, want %v", c.suffix, got, c.ok)
		}
		yaml := "route_resolver: {type: host, suffix: '" + c.suffix + "'}\n" + finiteDefault
		probs := problemsOf(t, yaml, ValidateOptions{})
		if c.ok != (len(probs) == 0) || !c.ok && !strings.HasPrefix(probs[0], "route_resolver.suffix: ") {
			t.Errorf("suffix %q: problems %q", c.suffix, probs)
		}
	}
}

// TestResolverPrefixDefaults: the resolvers that take a prefix default to
// /webhooks; token takes none and gets none.
func TestResolverPrefixDefaults(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"route_resolver: {type: host, suffix: h.example}", []string{"webhooks"}},
		{"route_resolver: {type: tenantpath}", []string{"webhooks"}},
		{"route_resolver: {type: token, path: '/c/:token'}", nil},
	} {
		cfg, err := Load([]byte(c.yaml+"\n"+finiteDefault), ValidateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.yaml, err)
		}
		if !slices.Equal(cfg.RouteResolver.Prefix, c.want) || (c.want == nil) != (cfg.RouteResolver.Prefix == nil) {
			t.Errorf("%s: prefix %q, want %q", c.yaml, cfg.RouteResolver.Prefix, c.want)
		}
	}
}
