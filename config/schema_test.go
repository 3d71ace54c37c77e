package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// One run names every problem: the unknown keys and the values that do not
// parse (sorted), then the validation of the rest, even in the source, sink
// or token that holds an unknown key. Only what validation would say of a
// value that did not parse (checked as its default) is left out.
func TestEveryProblemInOneRun(t *testing.T) {
	f := func(name, text string, want ...string) {
		t.Helper()
		probs := problemsOf(t, text, buildOptions)
		if !slices.Equal(probs, want) {
			t.Errorf("%s:\n%s\n got  %q\n want %q", name, text, probs, want)
		}
	}
	f("an unknown key, a bad size and a shared unverified source under tenantpath",
		"route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 50, burst: 100}}\n"+
			"limits: {max_bodyy_bytes: 1MiB}\nsegment: {max_bytes: lots}\nsources: {open-demo: {verify: {type: none}}}",
		"limits.max_bodyy_bytes: unknown key",
		`segment.max_bytes: invalid size "lots": want bytes or a number with KiB, MiB or GiB`,
		`sources.open-demo: shared source (tenant "default") has no verifier but resolver "tenantpath" takes the tenant from the request: anyone could file hooks under any tenant; set trust_url_tenant: true to mean it, or give it a verifier`)
	f("storage: an unknown key and a bad size",
		"storage: {reserve: 1MiB}\nwal: {max_file_bytes: 1MiB}\nsegment: {max_bytes: 64KiB}\n",
		"storage.reserve: unknown key")
	f("storage.reserve_bytes that is not a size",
		"storage: {reserve_bytes: plenty}",
		`storage.reserve_bytes: invalid size "plenty": want bytes or a number with KiB, MiB or GiB`)
	f("a bad value beside an unknown key",
		"limits: {max_bodyy_bytes: 1MiB, max_header_bytes: 12XB, read_timeout: soon}",
		"limits.max_bodyy_bytes: unknown key",
		`limits.max_header_bytes: invalid size "12XB": want bytes or a number with KiB, MiB or GiB`,
		`limits.read_timeout: invalid duration "soon": want a Go duration such as 250ms or 72h`)
	f("values of the wrong type",
		"listen: [a, b]\nlimits: {max_connections: many}\nroutes: {enabled: yes}\nnode: {roles: edge}\ntenants: 5\nadmin: {tokens: [ops]}",
		"admin.tokens[0]: cannot unmarshal string into Go value of type config.AdminToken",
		"limits.max_connections: cannot unmarshal string into Go value of type int",
		"listen: cannot unmarshal sequence into Go value of type string",
		"node.roles: cannot unmarshal string into Go value of type []string",
		"routes.enabled: cannot unmarshal string into Go value of type bool",
		"tenants: cannot unmarshal integer into Go value of type config.Tenants")
	f("a size or a secret given a mapping",
		"wal: {max_file_bytes: {a: 1}}\nsecrets: {kek: [x]}",
		"secrets.kek: cannot unmarshal sequence into Go value of type config.Secret",
		"wal.max_file_bytes: cannot unmarshal mapping into Go value of type config.Size")
	f("a top-level unknown key quiets nothing",
		"lisen: 127.0.0.1:1\nlisten: \"8080\"",
		"lisen: unknown key", `listen: "8080" is not host:port`)
	f("a sink's unknown key hides nothing of that sink or its source",
		"sources: {a: {tenant_id: Acme, verify: {type: none}, sinks: [{type: http, url: u, urll: x}, {type: http, url: v}]}}",
		"sources.a.sinks[0].urll: unknown key",
		`sources.a.tenant_id: "Acme" must match ^[a-z0-9][a-z0-9._-]{0,62}$`,
		`sources.a.sinks[0].url: "u" must be http:// or https://`,
		`sources.a.sinks[1].url: "v" must be http:// or https://`)
	f("a source's unknown key hides nothing of that source",
		"sources:\n  acme: {verify: {type: none}, trust_url_tenantt: true}\n  acme.eu: {verify: {type: bogus}}\n  other: {verify: {type: none}, on_verify_failure: drop}",
		"sources.acme.trust_url_tenantt: unknown key",
		`sources.acme.eu.verify.type: unknown verifier "bogus" ([none hmac stripe github shopify slack standardwebhooks], or a preset: `+"`ankusa presets`"+` lists them)`,
		`sources.other.on_verify_failure: "drop" must be reject, quarantine or accept_flag`)
	f("an unknown key and an unverified shared source in the same source under tenantpath",
		"route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 50, burst: 100}}\n"+
			"sources: {open-demo: {verify: {type: none}, on_verify_failur: reject}}",
		"sources.open-demo.on_verify_failur: unknown key",
		`sources.open-demo: shared source (tenant "default") has no verifier but resolver "tenantpath" takes the tenant from the request: anyone could file hooks under any tenant; set trust_url_tenant: true to mean it, or give it a verifier`)
	f("a secret that does not resolve, beside an unknown key",
		"sources: {s: {verify: {type: none, secret: \"env:ANKUSA_TEST_NEVER_SET\", secert: x}}}",
		"sources.s.verify.secert: unknown key",
		"sources.s.verify.secret: cannot resolve secret: environment variable ANKUSA_TEST_NEVER_SET is not set")
	f("a value that does not parse hides nothing else of its sink",
		"sources: {s: {verify: {type: none}, sinks: [{type: http, url: u, max_attempts: many}]}}",
		"sources.s.sinks[0].max_attempts: cannot unmarshal string into Go value of type int",
		`sources.s.sinks[0].url: "u" must be http:// or https://`)
	f("an unknown key in a part this build refuses",
		"sources: {s: {verify: {type: none}, sinks: [{type: http, url: 'https://x.example/', claim: {store: a, over: 1}}]}}",
		"sources.s.sinks[0].claim.over: unknown key",
		`sources.s.sinks[0].claim.store: "a" is not a claim store (claims.stores has [])`)
	f("an unknown key in the lifecycle sink hides nothing else of it",
		"lifecycle: {sink: {type: http, ur: x, max_attempts: 2}, retain: 1s}",
		"lifecycle.sink.ur: unknown key",
		"lifecycle.retain: 1s must be at least 1m (how long the outbox keeps an event; default 720h0m0s)",
		"lifecycle.sink.url: required for an http sink",
		"lifecycle.sink.max_attempts: not a key of the lifecycle sink: the publisher never gives up an event (it retries until the sink takes it)")
	f("a list entry that is not a mapping is named once",
		"admin: {tokens: [ops, {name: b, sha256: x}]}",
		"admin.tokens[0]: cannot unmarshal string into Go value of type config.AdminToken",
		"admin.tokens[1] (b): sha256 must be 64 hex characters (the SHA-256 of the token)")
	f("a tenant's rate limit of the wrong type is named once",
		"rate_limits: {tenants: {acme: 5, beta: {rate: -1}}}",
		"rate_limits.tenants.acme: cannot unmarshal integer into Go value of type config.RateLimit",
		"rate_limits.tenants.beta: rate, burst, max_queue and max_queue_bytes must not be negative")
}

// What did not parse takes its default; everything else is kept, so
// validation sees the config as the operator wrote it.
func TestParseKeepsWhatParses(t *testing.T) {
	cfg, probs := Parse([]byte("limits: {max_body_bytes: 12XB, max_header_bytes: 8KiB, max_bodyy: 1}\n" +
		"sources: {s: {tenant_id: acme, verify: {type: none}, sinks: [{type: http, url: 'https://x.example/', timeout: ten}]}}"))
	if len(probs) != 3 || cfg == nil {
		t.Fatalf("Parse: %v, %q: want a config and three problems", cfg, probs)
	}
	if cfg.Limits.MaxBodyBytes != DefaultMaxBodyBytes || cfg.Limits.MaxHeaderBytes != 8<<10 {
		t.Errorf("limits = %+v, want the default body bound and the given header bound", cfg.Limits)
	}
	sk := cfg.Sources["s"].Sinks[0]
	if cfg.Sources["s"].TenantID != "acme" || sk.URL != "https://x.example/" || sk.Timeout.D() != DefaultSinkTimeout {
		t.Errorf("sources.s = %+v", cfg.Sources["s"])
	}
}

// Anchors, aliases and merge keys decode as YAML says; a problem inside an
// anchor is named wherever the anchor is used.
func TestParseAnchorsAndMerges(t *testing.T) {
	cfg := mustLoad(t, "sources:\n"+
		"  a: &src {tenant_id: acme, verify: {type: none}, sinks: [&sink {type: http, url: 'https://x.example/'}]}\n"+
		"  b: *src\n"+
		"  c: {<<: *src, on_verify_failure: quarantine}\n"+
		"  d: {verify: {type: none}, sinks: [*sink, {<<: *sink, id: second}]}\n", buildOptions)
	if b, c := cfg.Sources["b"], cfg.Sources["c"]; b.TenantID != "acme" || c.TenantID != "acme" || c.OnVerifyFailure != "quarantine" {
		t.Errorf("sources b %+v, c %+v", b, c)
	}
	if d := cfg.Sources["d"].Sinks; len(d) != 2 || d[0].URL != "https://x.example/" || d[1].URL != "https://x.example/" || d[1].ID != "second" {
		t.Errorf("sources.d.sinks = %+v", d)
	}
	probs := problemsOf(t, "sources:\n  a: &src {verify: {type: none}, tennant: x}\n  b: *src\n  c: {<<: *src}\n", buildOptions)
	want := []string{"sources.a.tennant: unknown key", "sources.b.tennant: unknown key", "sources.c.tennant: unknown key"}
	if !slices.Equal(probs, want) {
		t.Errorf("problems %q, want %q", probs, want)
	}
}

// The walk only leaves out what does not parse: on a valid config the
// decode is the strict one's, key for key.
func TestParseIsTheStrictDecode(t *testing.T) {
	design, err := os.ReadFile("testdata/design_example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"default": string(DefaultYAML()),
		"design":  string(design),
		"scalars": "listen: 8080\nnode: {ordinal: 7, name: \"007\"}\ntenants: {create_rate: 0.5}\nroutes: {enabled: true}\n" +
			"sources: {s: {verify: {type: hmac, secrets: [literal, env:X, 'file:/y']}, sinks: [{type: http, url: u, headers: {X-A: '1'}}]}}",
		"anchors": "node: &n {data_dir: a}\nsources: {a: &s {verify: {type: none}}, b: {<<: *s, tenant_id: b}}",
	} {
		cfg, probs := Parse([]byte(text))
		if len(probs) > 0 {
			t.Fatalf("%s: %q", name, probs)
		}
		strict := &Config{}
		if err := yaml.UnmarshalWithOptions([]byte(text), strict, yaml.DisallowUnknownField()); err != nil {
			t.Fatalf("%s: strict decode: %v", name, err)
		}
		strict.ApplyDefaults()
		cfg.Node.Name, strict.Node.Name = "", "" // the host's name when unset
		if !reflect.DeepEqual(cfg, strict) {
			t.Errorf("%s:\n walk   %+v\n strict %+v", name, cfg, strict)
		}
	}
}

// The other stages' checks: each error is one problem, placed under its
// section; one at a key config already named is dropped; an unknown key
// hides none of them.
func TestValidateStageChecks(t *testing.T) {
	opts := buildOptions
	opts.CheckResolver = func(r RouteResolver) error { return errors.New("route_resolver: options.key: required") }
	opts.CheckAdminTokens = func(tokens []AdminToken) error {
		var errs []error
		for i, tk := range tokens {
			errs = append(errs, fmt.Errorf("admin.tokens[%d] (%s): scopes: bad", i, tk.Name))
		}
		return errors.Join(errs...)
	}
	hexSHA := strings.Repeat("ab", 32)
	probs := problemsOf(t, "admin: {tokens: [{name: a, sha256: "+hexSHA+"}, {name: b, sha256: x}, {name: c, sha256: "+hexSHA+", scope: x}]}", opts)
	want := []string{
		"admin.tokens[2].scope: unknown key",
		"admin.tokens[1] (b): sha256 must be 64 hex characters (the SHA-256 of the token)",
		"route_resolver: options.key: required",
		"admin.tokens[0] (a): scopes: bad",
		"admin.tokens[2] (c): scopes: bad",
	}
	if !slices.Equal(probs, want) {
		t.Fatalf("problems\n got  %q\n want %q", probs, want)
	}
	// The resolver's check repeats nothing config said about route_resolver.
	probs = problemsOf(t, "route_resolver: {type: path, prefix: ['a/b']}", opts)
	if want := []string{`route_resolver.prefix[0]: "a/b" is not a plain path segment`}; !slices.Equal(probs, want) {
		t.Fatalf("problems %q, want %q", probs, want)
	}
}
