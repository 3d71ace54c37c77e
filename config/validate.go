package config

import (
	"maps"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Validate returns every problem of a defaulted configuration: config's
// own rules, section by section in the file's order, then what the other
// stages' checks of opts find.
func Validate(c *Config, opts ValidateOptions) Problems {
	var p Problems
	validateNode(&p, c)
	validateAdmin(&p, c.Admin)
	validateLimits(&p, c)
	validateRoutes(&p, c)
	validateResolver(&p, c.RouteResolver, opts)
	validateRateLimits(&p, c)
	validateTenants(&p, c.Tenants)
	validateStorage(&p, c)
	validateArchive(&p, c.Archive)
	validateClaims(&p, c.Claims)
	validateSourceStore(&p, c.SourceStore)
	validateShared(&p, c)
	validateQuarantinePen(&p, c.Limits)
	validateLog(&p, c.Log)
	validateNotYetBuilt(&p, c)
	validateSecrets(&p, c.Secrets)
	if c.Secrets.KEK.Value != "" && c.SourceStore.Type == "static" {
		p.add("secrets.kek: source_store.type is static, which stores no secret: there is nothing to seal; use source_store persistent or redis, or leave the secrets section out")
	}
	validateLifecycle(&p, &c.Lifecycle, opts)
	for _, name := range c.SourceNames() {
		src := c.Sources[name]
		p = append(p, ValidateSource(name, &src, SourceContext{
			Resolver:        c.RouteResolver.Type,
			WALType:         c.WAL.Type,
			DedupeScope:     c.Dedupe.Scope,
			ClaimStores:     c.ClaimStoreNames(),
			ValidateOptions: opts,
		})...)
	}
	validateFileSinkPaths(&p, c)
	if opts.CheckResolver != nil {
		p.stage("", opts.CheckResolver(c.RouteResolver))
	}
	if opts.CheckAdminTokens != nil {
		p.stage("", opts.CheckAdminTokens(c.Admin.Tokens))
	}
	return p
}

// allRoles are the parts of the appliance a node may run (node.roles),
// and what it runs by default.
var allRoles = []string{"edge", "dispatch", "archive", "admin"}

// validateNode checks the node's identity and its two listeners.
func validateNode(p *Problems, c *Config) {
	if !NameRE.MatchString(c.Node.Name) {
		p.add("node.name: %q must match %s", c.Node.Name, NameRE)
	}
	if c.Node.Ordinal != nil && (*c.Node.Ordinal < 0 || *c.Node.Ordinal > 0xffff) {
		p.add("node.ordinal: %d must be between 0 and 65535", *c.Node.Ordinal)
	}
	for _, r := range c.Node.Roles {
		if !slices.Contains(allRoles, r) {
			p.add("node.roles: unknown role %q (edge, dispatch, archive, admin)", r)
		}
	}
	checkAddr(p, "listen", c.Listen)
	for i, cidr := range c.ListenProxyProtocol.Trusted {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			p.add("listen_proxy_protocol.trusted[%d]: %q is not a CIDR (like 10.0.0.0/8 or 127.0.0.1/32)", i, cidr)
		}
	}
	if t := c.ListenProxyProtocol.Trusted; t != nil && len(t) == 0 {
		p.add("listen_proxy_protocol.trusted: empty; name the balancers' CIDRs, or leave listen_proxy_protocol out")
	}
	checkAddr(p, "admin.listen", c.Admin.Listen)
	if c.Listen == c.Admin.Listen {
		p.add("admin.listen: %q is also listen; the admin and public listeners need their own addresses", c.Admin.Listen)
	}
	for i, t := range c.Admin.Tokens {
		if len(t.SHA256) != 64 || !isHex(t.SHA256) {
			p.add("admin.tokens[%d] (%s): sha256 must be 64 hex characters (the SHA-256 of the token)", i, t.Name)
		}
	}
}

func checkAddr(p *Problems, key, addr string) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		p.add("%s: %q is not host:port", key, addr)
	}
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
	if l.MaxConnections >= 1 && (l.MaxConnectionsPerClient < 1 || l.MaxConnectionsPerClient > l.MaxConnections) {
		p.add("limits.max_connections_per_client: %d must be between 1 and limits.max_connections (%d)", l.MaxConnectionsPerClient, l.MaxConnections)
	}
}

func validateRateLimits(p *Problems, c *Config) {
	rl := c.RateLimits
	if rt := c.RouteResolver.Type; rt != "path" && !rl.Default.Finite() {
		p.add("rate_limits.default: resolver %q takes the tenant from the request, so a finite rate_limits.default (rate > 0, burst > 0) is required", rt)
	}
	if !slices.Contains([]string{"node", "fleet"}, rl.Scope) {
		p.add("rate_limits.scope: %q must be node or fleet", rl.Scope)
	}
	if rl.Default != nil {
		validateRate(p, "rate_limits.default", *rl.Default)
	}
	for t, r := range rl.Tenants {
		if !NameRE.MatchString(t) {
			p.add("rate_limits.tenants.%s: tenant name must match %s", t, NameRE)
		}
		validateRate(p, "rate_limits.tenants."+t, r)
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

func validateTenants(p *Problems, t Tenants) {
	if t.Max < 1 {
		p.add("tenants.max: %d must be at least 1", t.Max)
	}
	if r := t.CreateRate; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		p.add("tenants.create_rate: %v must be a finite number of new tenants per second", r)
	}
	if t.CreateBurst < 0 {
		p.add("tenants.create_burst: %d must not be negative", t.CreateBurst)
	}
}

// validateStorage checks the log, its segments and the delivery stage's
// memory: the sections that size what the node holds on disk and in
// memory.
func validateStorage(p *Problems, c *Config) {
	if !slices.Contains([]string{"disk", "none"}, c.WAL.Type) {
		p.add("wal.type: %q must be disk or none", c.WAL.Type)
	}
	if c.WAL.MaxFileBytes < 1<<20 {
		p.add("wal.max_file_bytes: %d is below the minimum of 1MiB", c.WAL.MaxFileBytes)
	}
	if need := c.Limits.MaxBodyBytes + c.Limits.MaxHeaderBytes + 64<<10; c.WAL.MaxBatchBytes < need {
		p.add("wal.max_batch_bytes: %d must hold one whole hook (limits.max_body_bytes + limits.max_header_bytes + 64KiB = %d)", c.WAL.MaxBatchBytes, need)
	}
	if c.Storage.ReserveBytes < 1<<20 || c.Storage.ReserveBytes > 64<<30 {
		p.add("storage.reserve_bytes: %d must be between 1MiB and 64GiB", c.Storage.ReserveBytes)
	}
	if c.Segment.MaxBytes < 64<<10 || c.Segment.MaxBytes > 4<<30 {
		p.add("segment.max_bytes: %d must be between 64KiB and 4GiB", c.Segment.MaxBytes)
	}
	if c.Segment.MaxAge < Duration(10*time.Millisecond) {
		p.add("segment.max_age: %v must be at least 10ms", time.Duration(c.Segment.MaxAge))
	}
	if r := c.Segment.ScrubRate; r != nil && *r != 0 && (*r < MinScrubRate || *r > MaxScrubRate) {
		p.add("segment.scrub_rate: %d bytes/s must be 0 (scrubber off) or between 64KiB and 4GiB", *r)
	}
	if c.Dispatch.IntakeBytes < 1<<20 {
		p.add("dispatch.intake_bytes: %d is below the minimum of 1MiB", c.Dispatch.IntakeBytes)
	}
	if c.Dispatch.AttemptLogTTL < Duration(time.Minute) {
		p.add("dispatch.attempt_log_ttl: %v must be at least 1m", time.Duration(c.Dispatch.AttemptLogTTL))
	}
}

func validateArchive(p *Problems, a Archive) {
	if !slices.Contains([]string{"none", "dir", "s3"}, a.Type) {
		p.add("archive.type: %q must be s3, dir or none", a.Type)
	}
	if a.Concurrency < 1 || a.Concurrency > 64 {
		p.add("archive.concurrency: %d must be between 1 and 64", a.Concurrency)
	}
	if a.Type == "dir" && a.Path == "" {
		p.add("archive.path: required with archive.type: dir")
	}
	if a.Type == "s3" && (a.Endpoint == "" || a.Bucket == "") {
		p.add("archive: endpoint and bucket are required with archive.type: s3")
	}
}

func validateClaims(p *Problems, c Claims) {
	for _, name := range slices.Sorted(maps.Keys(c.Stores)) {
		st := c.Stores[name]
		at := "claims.stores." + name
		if !NameRE.MatchString(name) {
			p.add("%s: a claim store's name must match %s", at, NameRE)
		}
		switch st.Type {
		case "dir":
			if st.Path == "" {
				p.add("%s.path: required with type: dir", at)
			}
			for _, k := range []struct {
				key string
				set bool
			}{{"endpoint", st.Endpoint != ""}, {"bucket", st.Bucket != ""}, {"region", st.Region != ""},
				{"access_key", st.AccessKey.IsSet()}, {"secret_key", st.SecretKey.IsSet()}, {"tls", st.TLS}} {
				if k.set {
					p.add("%s.%s: a key of s3 claim stores; this one is dir", at, k.key)
				}
			}
		case "s3":
			if st.Endpoint == "" || st.Bucket == "" {
				p.add("%s: endpoint and bucket are required with type: s3", at)
			}
			if st.Path != "" {
				p.add("%s.path: a key of dir claim stores; this one is s3 (its objects go under prefix in bucket)", at)
			}
		default:
			p.add("%s.type: %q must be s3 or dir", at, st.Type)
		}
		if st.Retain < Duration(time.Minute) {
			p.add("%s.retain: %v must be at least 1m", at, time.Duration(st.Retain))
		}
		if st.PackBytes < 1<<20 || st.PackBytes > 256<<20 {
			p.add("%s.pack_bytes: %d must be between 1MiB and 256MiB (a node holds up to 4 packs of it in memory)", at, st.PackBytes)
		}
		if st.PackDelay < Duration(time.Millisecond) || st.PackDelay > Duration(time.Minute) {
			p.add("%s.pack_delay: %v must be between 1ms and 1m (a delivery waits for its pack)", at, time.Duration(st.PackDelay))
		}
	}
}

// ClaimStoreNames are the names under claims.stores, sorted.
func (c *Config) ClaimStoreNames() []string { return slices.Sorted(maps.Keys(c.Claims.Stores)) }

func validateSourceStore(p *Problems, s SourceStore) {
	switch s.Type {
	case "static":
	case "persistent":
	case "redis":
		validateRedisStore(p, s)
	default:
		p.add("source_store.type: %q must be static, persistent or redis", s.Type)
	}
	if s.Type != "redis" {
		for _, k := range []struct {
			key string
			set bool
		}{{"url", s.URL != ""}, {"namespace", s.Namespace != ""}, {"tick_ms", s.TickMs != 0}} {
			if k.set {
				p.add("source_store.%s: only the redis store takes it (source_store.type is %q)", k.key, s.Type)
			}
		}
	}
}

// DefaultSourceStoreTickMs is how often a node of a redis source store
// checks the store's version when no pub/sub message came.
const DefaultSourceStoreTickMs = 1000

// validateRedisStore checks source_store: {type: redis}; defaults have
// filled url and namespace from redis: when they were left out.
func validateRedisStore(p *Problems, s SourceStore) {
	switch {
	case s.URL == "":
		p.add("source_store.url: required with source_store.type: redis (or set redis.url); want redis://host:port/db")
	case !strings.HasPrefix(s.URL, "redis://") && !strings.HasPrefix(s.URL, "rediss://") && !strings.HasPrefix(s.URL, "unix://"):
		p.add("source_store.url: %q is not a redis://, rediss:// or unix:// URL", RedactURL(s.URL))
	}
	if s.Namespace == "" || len(s.Namespace) > 128 || strings.ContainsAny(s.Namespace, " \t\r\n*?[]\\") {
		p.add("source_store.namespace: %q must be 1 to 128 characters without spaces or any of *?[]\\", s.Namespace)
	}
	if s.TickMs < 10 || s.TickMs > 60000 {
		p.add("source_store.tick_ms: %d must be between 10 and 60000", s.TickMs)
	}
}

// validateShared checks what a fleet shares through Redis: dedupe keys
// and rate-limit buckets.
func validateShared(p *Problems, c *Config) {
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
}

// validateQuarantinePen checks the bound of the quarantine pen.
func validateQuarantinePen(p *Problems, l Limits) {
	if l.MaxQuarantineBytes < 1<<20 {
		p.add("limits.max_quarantine_bytes: %d is below the minimum of 1MiB", l.MaxQuarantineBytes)
	}
}

func validateLog(p *Problems, l Log) {
	if !slices.Contains([]string{"json", "console"}, l.Format) {
		p.add("log.format: %q must be json or console", l.Format)
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		p.add("log.level: %q must be debug, info, warn or error", l.Level)
	}
}

// validateNotYetBuilt refuses the keys of parts of the design this build
// does not run yet, so that none is accepted and silently ignored: the
// node roles other than archive (every node runs the edge, dispatch and
// the admin listener).
func validateNotYetBuilt(p *Problems, c *Config) {
	known := !slices.ContainsFunc(c.Node.Roles, func(r string) bool { return !slices.Contains(allRoles, r) })
	for _, r := range []string{"edge", "dispatch", "admin"} {
		if known && !slices.Contains(c.Node.Roles, r) {
			p.add("node.roles: %v leaves out %q, but this build runs the edge, dispatch and the admin listener on every node (only archive may be left out); list %v", c.Node.Roles, r, allRoles)
			break
		}
	}
}
