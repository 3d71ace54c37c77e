package config

import (
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
)

// SourceContext is what a source's validity depends on beyond its spec:
// the node's settings around it and the build's checks (ValidateOptions).
type SourceContext struct {
	// Resolver is route_resolver.type.
	Resolver string
	// WALType is wal.type (disk or none).
	WALType string
	// DedupeScope is dedupe.scope (node or fleet).
	DedupeScope string
	// ClaimStores are the names under claims.stores: a sink's claim.store
	// must be one of them.
	ClaimStores []string
	// Runtime says the source is written at runtime (the admin API, a
	// stored source), not read from the config file: it may not have a
	// file sink (runtimeSinkProblems).
	Runtime bool
	ValidateOptions
}

// VerifierTypes are the verifier types every build has. The binary's
// verifier catalogue (verify presets) adds its own names through
// ValidateOptions.VerifierKnown, which accepts a type this list lacks.
var VerifierTypes = []string{"none", "hmac", "stripe", "github", "shopify", "slack", "standardwebhooks"}

// verifyFailureModes are what on_verify_failure may say.
var verifyFailureModes = []string{"reject", "quarantine", "accept_flag"}

// ValidateSource checks one source spec. The file, check-config and the
// admin API all use it, so a source is valid or not wherever it comes from.
// Problems are prefixed "sources.<name>".
func ValidateSource(name string, s *Source, ctx SourceContext) Problems {
	var p Problems
	at := "sources." + name
	if !NameRE.MatchString(name) {
		p.add("%s: source name must match %s", at, NameRE)
	}
	if !NameRE.MatchString(s.TenantID) {
		p.add("%s.tenant_id: %q must match %s", at, s.TenantID, NameRE)
	}
	validateVerify(&p, at, s, ctx)
	validateEventType(&p, at, s.Verify.EventType)
	if s.MaxBodyBytes < 0 {
		p.add("%s.max_body_bytes: must not be negative", at)
	}
	validateSinks(&p, at, s.Sinks, ctx)
	if ctx.WALType == "none" && !slices.ContainsFunc(s.Sinks, func(sk Sink) bool { return sk.Durable() }) {
		p.add("%s.sinks: wal.type is none, so a hook is safe only once a durable sink (%v) has it, and this source has none; add one or use wal.type: disk", at, DurableSinkTypes)
	}
	for i, sk := range s.Sinks {
		if ctx.WALType == "none" && sk.Type == "nats" && sk.CreateStream != nil && sk.CreateStream.Storage == "memory" {
			p.add("%s.sinks[%d].create_stream.storage: memory; wal.type is none, so the stream is the only copy of a hook answered 201, and a memory stream loses it when the server restarts; use file", at, i)
		}
	}
	validateSourceDedupe(&p, at, s, ctx)
	validateQuarantine(&p, at, s, ctx)
	return p
}

// validateVerify checks how the source verifies its hooks and what it does
// with one that fails.
func validateVerify(p *Problems, at string, s *Source, ctx SourceContext) {
	vt := s.Verify.Type
	switch {
	case vt == "":
		p.add("%s.verify.type: required (%v; none accepts anything)", at, VerifierTypes)
	case !slices.Contains(VerifierTypes, vt) && ctx.VerifierKnown == nil:
		p.add("%s.verify.type: unknown verifier %q (%v)", at, vt, VerifierTypes)
	case !slices.Contains(VerifierTypes, vt) && !ctx.VerifierKnown(vt):
		// The build's catalogue holds many more names than VerifierTypes:
		// listing only those would tell the operator the preset they
		// meant does not exist.
		p.add("%s.verify.type: unknown verifier %q (%v, or a preset: `ankusa presets` lists them)", at, vt, VerifierTypes)
	case ctx.VerifierKnown != nil && !ctx.VerifierKnown(vt):
		p.add("%s.verify.type: verifier %q is not available in this build yet; use none until it is", at, vt)
	case vt != "none" && !s.Verify.Secret.IsSet() && len(s.Verify.Secrets) == 0:
		p.add("%s.verify.secret: required by verifier %q", at, vt)
	case ctx.CheckVerify != nil && secretsResolved(s.Verify):
		p.stage(at, ctx.CheckVerify(s.Verify))
	}
	if u := s.Verify.URL; u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" || pu.Fragment != "" {
			p.add("%s.verify.url: %q must be an absolute http or https URL (the address the provider signs, as it was given to it)", at, u)
		}
	}
	switch {
	case !slices.Contains(verifyFailureModes, s.OnVerifyFailure):
		p.add("%s.on_verify_failure: %q must be reject, quarantine or accept_flag", at, s.OnVerifyFailure)
	case ctx.OnVerifyFailure != nil && !slices.Contains(ctx.OnVerifyFailure, s.OnVerifyFailure):
		p.add("%s.on_verify_failure: %q is not available in this build yet (it has: %v)", at, s.OnVerifyFailure, ctx.OnVerifyFailure)
	}
	if ctx.Resolver != "" && ctx.Resolver != "path" && s.TenantID == DefaultTenant && vt == "none" && !s.TrustURLTenant {
		p.add("%s: shared source (tenant %q) has no verifier but resolver %q takes the tenant from the request: anyone could file hooks under any tenant; set trust_url_tenant: true to mean it, or give it a verifier", at, DefaultTenant, ctx.Resolver)
	}
}

// verifierKnown reports whether validateVerify accepts vt as a type this
// build has.
func verifierKnown(vt string, ctx SourceContext) bool {
	if ctx.VerifierKnown != nil {
		return ctx.VerifierKnown(vt)
	}
	return slices.Contains(VerifierTypes, vt)
}

// secretsResolved reports whether every secret reference of v has a value:
// an unresolved one is already a problem of its own, and building the
// verifier without it would only report the same thing again.
func secretsResolved(v Verify) bool {
	if v.Secret.IsSet() && v.Secret.Value == "" {
		return false
	}
	for _, s := range v.Secrets {
		if s.IsSet() && s.Value == "" {
			return false
		}
	}
	return true
}

func validateSourceDedupe(p *Problems, at string, s *Source, ctx SourceContext) {
	d := s.Dedupe
	if d == nil {
		return
	}
	switch {
	case d.Key == "":
		p.add("%s.dedupe.key: required when dedupe is set (header:NAME, json:PATH or auto)", at)
	case d.Key == "auto" && !verifierKnown(s.Verify.Type, ctx):
		// auto stands for the verifier's own id: with verify.type already
		// refused there is no verifier to ask, and saying so again here
		// would only repeat that problem.
	case ctx.CheckDedupe != nil:
		p.stage(at, ctx.CheckDedupe(d.Key, s.Verify.Type))
	}
	if d.TTL != 0 && d.TTL < Duration(time.Second) {
		p.add("%s.dedupe.ttl: %v must be at least 1s", at, time.Duration(d.TTL))
	}
	if ctx.WALType == "none" && ctx.DedupeScope == "node" {
		p.add("%s.dedupe: node-scope keys are kept with the log and wal.type none keeps none; use dedupe.scope: fleet (Redis)", at)
	}
}

// validateQuarantine checks where a failed hook may be held: the node's
// log, and the source's bucket for such hooks.
func validateQuarantine(p *Problems, at string, s *Source, ctx SourceContext) {
	if ctx.WALType == "none" && s.OnVerifyFailure == "quarantine" {
		p.add("%s.on_verify_failure: quarantine holds hooks in the node's log and wal.type none keeps none; use reject or accept_flag", at)
	}
	if q := s.Quarantine; q != nil {
		if q.Rate < 0 || math.IsNaN(q.Rate) || math.IsInf(q.Rate, 0) {
			p.add("%s.quarantine.rate: %v must be a finite number of hooks per second, 0 or more", at, q.Rate)
		}
		if q.Burst < 1 {
			p.add("%s.quarantine.burst: %d must be at least 1", at, q.Burst)
		}
	}
}

// validateEventType checks verify.event_type's form: header:NAME or
// json:PATH (the verifier builds it and checks it against its preset; this
// check holds wherever a source is validated, verifier built or not).
func validateEventType(p *Problems, at, spec string) {
	if spec == "" {
		return
	}
	switch {
	case strings.HasPrefix(spec, "header:"):
		name := spec[len("header:"):]
		if name == "" || strings.ContainsFunc(name, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r)
		}) {
			p.add("%s.verify.event_type: %q: the header name is empty or not a valid header name", at, spec)
		}
	case strings.HasPrefix(spec, "json:"):
		if path := spec[len("json:"):]; path == "" || slices.Contains(strings.Split(path, "."), "") {
			p.add("%s.verify.event_type: %q: the path is empty or has an empty segment (segments are separated by single dots)", at, spec)
		}
	default:
		p.add("%s.verify.event_type: %q must be header:NAME or json:PATH", at, spec)
	}
}
