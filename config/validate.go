package config

import (
	"math"
	"net"
	"regexp"
	"slices"
	"time"
)

// NameRE is what tenant and source names match: they end up in meta keys,
// S3 keys, Redis keys and file paths.
var NameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidName reports whether b is a valid tenant or source name, without
// allocating (the edge calls it per request).
func ValidName(b []byte) bool {
	if len(b) == 0 || len(b) > 63 {
		return false
	}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidateOptions carries what validation needs to know from outside the
// config package.
type ValidateOptions struct {
	// ResolverKnown reports whether a route resolver name is registered.
	ResolverKnown func(name string) bool
	// VerifierKnown reports whether a verifier type is available.
	VerifierKnown func(name string) bool
	// CheckVerify builds a source's verifier and reports what is wrong with
	// its verify section (a secret that does not decode, an unknown
	// algorithm); the error names the field.
	CheckVerify func(v Verify) error
	// OnVerifyFailure lists the failure modes this build serves; nil: all.
	OnVerifyFailure []string
	// CheckDedupe reports what is wrong with a source's dedupe key spec
	// for its verifier type; the error names the field.
	CheckDedupe func(key, verifierType string) error
}

// Validate returns every problem of a defaulted configuration.
func Validate(c *Config, opts ValidateOptions) Problems {
	var p Problems
	if !NameRE.MatchString(c.Node.Name) {
		p.add("node.name: %q must match %s", c.Node.Name, NameRE)
	}
	if c.Node.Ordinal != nil && (*c.Node.Ordinal < 0 || *c.Node.Ordinal > 0xffff) {
		p.add("node.ordinal: %d must be between 0 and 65535", *c.Node.Ordinal)
	}
	for _, r := range c.Node.Roles {
		if !slices.Contains([]string{"edge", "dispatch", "archive", "admin"}, r) {
			p.add("node.roles: unknown role %q (edge, dispatch, archive, admin)", r)
		}
	}
	checkAddr(&p, "listen", c.Listen)
	checkAddr(&p, "admin.listen", c.Admin.Listen)
	if c.Listen == c.Admin.Listen {
		p.add("admin.listen: %q is also listen; the admin and public listeners need their own addresses", c.Admin.Listen)
	}
	for i, t := range c.Admin.Tokens {
		if len(t.SHA256) != 64 || !isHex(t.SHA256) {
			p.add("admin.tokens[%d] (%s): sha256 must be 64 hex characters (the SHA-256 of the token)", i, t.Name)
		}
	}
	validateLimits(&p, c)
	validateRoutes(&p, c)
	finite := c.RateLimits.Default.Finite()
	rt := c.RouteResolver.Type
	switch {
	case rt == "path", rt == "tenantpath":
	case opts.ResolverKnown != nil && opts.ResolverKnown(rt):
	default:
		p.add("route_resolver.type: unknown resolver %q (path, tenantpath, or a registered one)", rt)
	}
	if (rt == "path" || rt == "tenantpath") && len(c.RouteResolver.Options) > 0 {
		p.add("route_resolver.options: resolver %q takes no options (only prefix)", rt)
	}
	for i, seg := range c.RouteResolver.Prefix {
		if seg == "" || !validSegment(seg) {
			p.add("route_resolver.prefix[%d]: %q is not a plain path segment", i, seg)
		}
	}
	if rt != "path" && !finite {
		p.add("rate_limits.default: resolver %q takes the tenant from the request, so a finite rate_limits.default (rate > 0, burst > 0) is required", rt)
	}
	if !slices.Contains([]string{"node", "fleet"}, c.RateLimits.Scope) {
		p.add("rate_limits.scope: %q must be node or fleet", c.RateLimits.Scope)
	}
	if c.RateLimits.Default != nil {
		validateRate(&p, "rate_limits.default", *c.RateLimits.Default)
	}
	for t, rl := range c.RateLimits.Tenants {
		if !NameRE.MatchString(t) {
			p.add("rate_limits.tenants.%s: tenant name must match %s", t, NameRE)
		}
		validateRate(&p, "rate_limits.tenants."+t, rl)
	}
	if c.Tenants.Max < 1 {
		p.add("tenants.max: %d must be at least 1", c.Tenants.Max)
	}
	if r := c.Tenants.CreateRate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		p.add("tenants.create_rate: %v must be a finite number of new tenants per second", r)
	}
	if c.Tenants.CreateBurst < 0 {
		p.add("tenants.create_burst: %d must not be negative", c.Tenants.CreateBurst)
	}
	switch c.WAL.Type {
	case "disk":
	case "none":
	default:
		p.add("wal.type: %q must be disk or none", c.WAL.Type)
	}
	if c.WAL.MaxFileBytes < 1<<20 {
		p.add("wal.max_file_bytes: %d is below the minimum of 1MiB", c.WAL.MaxFileBytes)
	}
	if need := c.Limits.MaxBodyBytes + c.Limits.MaxHeaderBytes + 64<<10; c.WAL.MaxBatchBytes < need {
		p.add("wal.max_batch_bytes: %d must hold one whole hook (limits.max_body_bytes + limits.max_header_bytes + 64KiB = %d)", c.WAL.MaxBatchBytes, need)
	}
	if c.Segment.MaxBytes < 64<<10 || c.Segment.MaxBytes > 4<<30 {
		p.add("segment.max_bytes: %d must be between 64KiB and 4GiB", c.Segment.MaxBytes)
	}
	if c.Segment.MaxAge < Duration(10*time.Millisecond) {
		p.add("segment.max_age: %v must be at least 10ms", time.Duration(c.Segment.MaxAge))
	}
	if c.Dispatch.IntakeBytes < 1<<20 {
		p.add("dispatch.intake_bytes: %d is below the minimum of 1MiB", c.Dispatch.IntakeBytes)
	}
	if c.Dispatch.AttemptLogTTL < Duration(time.Minute) {
		p.add("dispatch.attempt_log_ttl: %v must be at least 1m", time.Duration(c.Dispatch.AttemptLogTTL))
	}
	if !slices.Contains([]string{"none", "dir", "s3"}, c.Archive.Type) {
		p.add("archive.type: %q must be s3, dir or none", c.Archive.Type)
	}
	if c.Archive.Concurrency < 1 || c.Archive.Concurrency > 64 {
		p.add("archive.concurrency: %d must be between 1 and 64", c.Archive.Concurrency)
	}
	if c.Archive.Type == "dir" && c.Archive.Path == "" {
		p.add("archive.path: required with archive.type: dir")
	}
	if c.Archive.Type == "s3" && (c.Archive.Endpoint == "" || c.Archive.Bucket == "") {
		p.add("archive: endpoint and bucket are required with archive.type: s3")
	}
	switch c.SourceStore.Type {
	case "static":
	case "persistent":
		// Seeds from the config; API-managed sources arrive with the admin
		// API, and until then a persistent store holds exactly its seeds.
	case "redis":
		p.add("source_store.type: redis is not available in this build; use static or persistent")
	default:
		p.add("source_store.type: %q must be static, persistent or redis", c.SourceStore.Type)
	}
	if !slices.Contains([]string{"node", "fleet"}, c.Dedupe.Scope) {
		p.add("dedupe.scope: %q must be node or fleet", c.Dedupe.Scope)
	}
	if c.Dedupe.TTL < Duration(time.Second) {
		p.add("dedupe.ttl: %v must be at least 1s", time.Duration(c.Dedupe.TTL))
	}
	if c.Dedupe.Scope == "fleet" && c.Redis.URL == "" {
		p.add("redis.url: required with dedupe.scope: fleet (keys are shared through Redis)")
	}
	if c.RateLimits.Scope == "fleet" && c.Redis.URL == "" {
		p.add("redis.url: required with rate_limits.scope: fleet (buckets are shared through Redis)")
	}
	if c.Limits.MaxQuarantineBytes < 1<<20 {
		p.add("limits.max_quarantine_bytes: %d is below the minimum of 1MiB", c.Limits.MaxQuarantineBytes)
	}
	if !slices.Contains([]string{"json", "console"}, c.Log.Format) {
		p.add("log.format: %q must be json or console", c.Log.Format)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		p.add("log.level: %q must be debug, info, warn or error", c.Log.Level)
	}
	for _, name := range c.SourceNames() {
		src := c.Sources[name]
		p = append(p, ValidateSource(name, &src, SourceContext{
			Resolver:        rt,
			WALType:         c.WAL.Type,
			VerifierKnown:   opts.VerifierKnown,
			CheckVerify:     opts.CheckVerify,
			OnVerifyFailure: opts.OnVerifyFailure,
			CheckDedupe:     opts.CheckDedupe,
			DedupeScope:     c.Dedupe.Scope,
		})...)
	}
	return p
}

// Bounds of the limits section.
const (
	// MaxBodyBytesCap keeps one hook (body, headers, envelope) well inside
	// what a WAL record may hold.
	MaxBodyBytesCap = 512 << 20
	// MaxHeaderCountCap stays below the envelope's header bound
	// (envelope.MaxHeaders), so every accepted hook can be decoded.
	MaxHeaderCountCap = 1024
)

func validateLimits(p *Problems, c *Config) {
	l := c.Limits
	if l.MaxBodyBytes < 1 || l.MaxBodyBytes > MaxBodyBytesCap {
		p.add("limits.max_body_bytes: %d must be between 1 and 512MiB", l.MaxBodyBytes)
	}
	if l.MaxHeaderBytes < 1024 || l.MaxHeaderBytes > 1<<20 {
		p.add("limits.max_header_bytes: %d must be between 1KiB and 1MiB", l.MaxHeaderBytes)
	}
	// A request reserves its body bound and its header bytes (router step 9):
	// a smaller pipeline would refuse a lawful hook on an idle node.
	if need := l.MaxBodyBytes + l.MaxHeaderBytes; l.MaxPipelineBytes < need {
		p.add("limits.max_pipeline_bytes: %d must hold one whole request, at least limits.max_body_bytes + limits.max_header_bytes (%d)", l.MaxPipelineBytes, need)
	}
	if l.MaxHeaderCount < 1 || l.MaxHeaderCount > MaxHeaderCountCap {
		p.add("limits.max_header_count: %d must be between 1 and %d", l.MaxHeaderCount, MaxHeaderCountCap)
	}
	if l.MaxConnections < 1 {
		p.add("limits.max_connections: %d must be at least 1", l.MaxConnections)
	}
}

func validateRate(p *Problems, path string, r RateLimit) {
	if r.Rate < 0 || r.Burst < 0 || r.MaxQueue < 0 || r.MaxQueueBytes < 0 {
		p.add("%s: rate, burst, max_queue and max_queue_bytes must not be negative", path)
	}
	if math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) {
		p.add("%s.rate: %v must be a finite number of hooks per second", path, r.Rate)
	}
}

func checkAddr(p *Problems, key, addr string) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		p.add("%s: %q is not host:port", key, addr)
	}
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// validSegment reports whether s is a path segment a resolver can match
// literally: no slash, no dot segment, no percent-encoding.
func validSegment(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		if c == '/' || c == '%' || c <= ' ' || c >= 0x7f || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

// SourceContext is what a source's validity depends on beyond its spec.
type SourceContext struct {
	Resolver        string
	WALType         string
	VerifierKnown   func(name string) bool
	CheckVerify     func(v Verify) error
	OnVerifyFailure []string
	CheckDedupe     func(key, verifierType string) error
	// DedupeScope is dedupe.scope (node or fleet).
	DedupeScope string
}

// Verifier types a source may name.
var VerifierTypes = []string{"none", "hmac", "stripe", "github", "shopify", "slack", "standardwebhooks"}

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
	vt := s.Verify.Type
	switch {
	case vt == "":
		p.add("%s.verify.type: required (%v; none accepts anything)", at, VerifierTypes)
	case !slices.Contains(VerifierTypes, vt):
		p.add("%s.verify.type: unknown verifier %q (%v)", at, vt, VerifierTypes)
	case ctx.VerifierKnown != nil && !ctx.VerifierKnown(vt):
		p.add("%s.verify.type: verifier %q is not available in this build yet; use none until it is", at, vt)
	case vt != "none" && !s.Verify.Secret.IsSet() && len(s.Verify.Secrets) == 0:
		p.add("%s.verify.secret: required by verifier %q", at, vt)
	case ctx.CheckVerify != nil && secretsResolved(s.Verify):
		if err := ctx.CheckVerify(s.Verify); err != nil {
			p.add("%s.%v", at, err)
		}
	}
	switch {
	case !slices.Contains([]string{"reject", "quarantine", "accept_flag"}, s.OnVerifyFailure):
		p.add("%s.on_verify_failure: %q must be reject, quarantine or accept_flag", at, s.OnVerifyFailure)
	case ctx.OnVerifyFailure != nil && !slices.Contains(ctx.OnVerifyFailure, s.OnVerifyFailure):
		p.add("%s.on_verify_failure: %q is not available in this build yet (it has: %v)", at, s.OnVerifyFailure, ctx.OnVerifyFailure)
	}
	if ctx.Resolver != "" && ctx.Resolver != "path" && s.TenantID == DefaultTenant && vt == "none" && !s.TrustURLTenant {
		p.add("%s: shared source (tenant %q) has no verifier but resolver %q takes the tenant from the request: anyone could file hooks under any tenant; set trust_url_tenant: true to mean it, or give it a verifier", at, DefaultTenant, ctx.Resolver)
	}
	if s.MaxBodyBytes < 0 {
		p.add("%s.max_body_bytes: must not be negative", at)
	}
	validateSinks(&p, at, s.Sinks)
	if ctx.WALType == "none" && !slices.ContainsFunc(s.Sinks, func(sk Sink) bool { return sk.Durable() }) {
		p.add("%s.sinks: wal.type is none, so a hook is safe only once a durable sink (%v) has it, and this source has none; add one or use wal.type: disk", at, DurableSinkTypes)
	}
	if d := s.Dedupe; d != nil {
		switch {
		case d.Key == "":
			p.add("%s.dedupe.key: required when dedupe is set (header:NAME, json:PATH or auto)", at)
		case ctx.CheckDedupe != nil:
			if err := ctx.CheckDedupe(d.Key, vt); err != nil {
				p.add("%s.%v", at, err)
			}
		}
		if d.TTL != 0 && d.TTL < Duration(time.Second) {
			p.add("%s.dedupe.ttl: %v must be at least 1s", at, time.Duration(d.TTL))
		}
		if ctx.WALType == "none" && ctx.DedupeScope == "node" {
			p.add("%s.dedupe: node-scope keys are kept with the log and wal.type none keeps none; use dedupe.scope: fleet (Redis)", at)
		}
	}
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
	return p
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
