package config

import (
	"os"
	"slices"
	"time"
)

// Defaults of keys an operator may leave out.
const (
	DefaultListen           = "127.0.0.1:8080"
	DefaultAdminListen      = "127.0.0.1:9090"
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxHeaderBytes   = 16 << 10
	DefaultMaxHeaderCount   = 100
	DefaultMaxPipelineBytes = 256 << 20
	DefaultMaxQuarantine    = 256 << 20
	// DefaultQuarantineRate and DefaultQuarantineBurst are a source's
	// quarantine bucket when it names none.
	DefaultQuarantineRate  = 5
	DefaultQuarantineBurst = 50
	DefaultMaxConnections  = 10000
	// DefaultMinConnectionsPerClient is the floor of the default of
	// limits.max_connections_per_client (half of max_connections).
	DefaultMinConnectionsPerClient = 64
	DefaultReadTimeout             = 30 * time.Second
	DefaultWriteTimeout            = 10 * time.Second
	DefaultIdleTimeout             = 60 * time.Second
	DefaultWALFileBytes            = 64 << 20
	DefaultWALBatchBytes           = 8 << 20
	// DefaultReserveBytes is storage.reserve_bytes.
	DefaultReserveBytes = 64 << 20
	DefaultTenantsMax   = 100000
	// DefaultTenantCreateRate and DefaultTenantCreateBurst bound how fast
	// new tenants are created, node-wide.
	DefaultTenantCreateRate  = 100
	DefaultTenantCreateBurst = 1000
	DefaultTenant            = "default"
)

// segment.scrub_rate: the default, and the bounds of a rate that is not 0
// (off).
const (
	DefaultScrubRate = 8 << 20
	MinScrubRate     = 64 << 10
	MaxScrubRate     = 4 << 30
)

// Defaults of the admin listener's bounds (admin.*).
const (
	DefaultAdminReadTimeout       = 10 * time.Second
	DefaultAdminReadHeaderTimeout = 5 * time.Second
	DefaultAdminWriteTimeout      = 60 * time.Second
	DefaultAdminIdleTimeout       = 60 * time.Second
	DefaultAdminMaxConnections    = 256
	DefaultAdminMaxBodyBytes      = 1 << 20
)

// ApplyDefaults fills every key left out, section by section.
func (c *Config) ApplyDefaults() {
	c.applyNodeDefaults()
	c.Limits.applyDefaults()
	c.applyRoutingDefaults()
	c.applyStorageDefaults()
	c.applySharedDefaults()
	c.applySourceDefaults()
	c.Lifecycle.applyDefaults()
}

// applyNodeDefaults fills the node's identity, its listeners and its log.
func (c *Config) applyNodeDefaults() {
	if c.Node.Name == "" {
		if h, err := os.Hostname(); err == nil && NameRE.MatchString(h) {
			c.Node.Name = h
		} else {
			c.Node.Name = "local"
		}
	}
	setString(&c.Node.DataDir, "./data")
	if len(c.Node.Roles) == 0 {
		c.Node.Roles = slices.Clone(allRoles)
	}
	setString(&c.Listen, DefaultListen)
	c.Admin.applyDefaults()
	setString(&c.Log.Level, "info")
	setString(&c.Log.Format, "json")
}

func (a *Admin) applyDefaults() {
	setString(&a.Listen, DefaultAdminListen)
	setDur(&a.ReadTimeout, DefaultAdminReadTimeout)
	setDur(&a.ReadHeaderTimeout, DefaultAdminReadHeaderTimeout)
	setDur(&a.WriteTimeout, DefaultAdminWriteTimeout)
	setDur(&a.IdleTimeout, DefaultAdminIdleTimeout)
	setInt(&a.MaxConnections, DefaultAdminMaxConnections)
	setSize(&a.MaxBodyBytes, DefaultAdminMaxBodyBytes)
}

func (l *Limits) applyDefaults() {
	setSize(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	setSize(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setSize(&l.MaxPipelineBytes, DefaultMaxPipelineBytes)
	setSize(&l.MaxQuarantineBytes, DefaultMaxQuarantine)
	setInt(&l.MaxHeaderCount, DefaultMaxHeaderCount)
	setInt(&l.MaxConnections, DefaultMaxConnections)
	if l.MaxConnectionsPerClient == 0 {
		l.MaxConnectionsPerClient = max(l.MaxConnections/2, min(l.MaxConnections, DefaultMinConnectionsPerClient))
	}
	setDur(&l.ReadTimeout, DefaultReadTimeout)
	setDur(&l.WriteTimeout, DefaultWriteTimeout)
	setDur(&l.IdleTimeout, DefaultIdleTimeout)
}

// applyRoutingDefaults fills how a request finds its tenant and source,
// and what bounds tenants.
func (c *Config) applyRoutingDefaults() {
	setString(&c.RouteResolver.Type, "path")
	// The built-in resolvers that take a prefix default to /webhooks; a
	// registered one keeps its own default when the config names no
	// prefix, and token takes none (its path says everything).
	if c.RouteResolver.Prefix == nil && builtinResolver(c.RouteResolver.Type) && ResolverTakes(c.RouteResolver.Type).Prefix {
		c.RouteResolver.Prefix = []string{"webhooks"}
	}
	for i := range c.Routes.Table {
		setString(&c.Routes.Table[i].TenantID, DefaultTenant)
	}
	setString(&c.RateLimits.Scope, "node")
	setInt(&c.Tenants.Max, DefaultTenantsMax)
	if c.Tenants.CreateRate == 0 {
		c.Tenants.CreateRate = DefaultTenantCreateRate
	}
	setInt(&c.Tenants.CreateBurst, DefaultTenantCreateBurst)
}

// applyStorageDefaults fills the log, segments, the delivery stage's
// memory and the archive.
func (c *Config) applyStorageDefaults() {
	setString(&c.WAL.Type, "disk")
	setSize(&c.WAL.MaxFileBytes, DefaultWALFileBytes)
	setSize(&c.WAL.MaxBatchBytes, DefaultWALBatchBytes)
	setSize(&c.Segment.MaxBytes, 64<<20)
	setSize(&c.Storage.ReserveBytes, DefaultReserveBytes)
	setDur(&c.Segment.MaxAge, 10*time.Second)
	setDur(&c.Segment.RetainLocal, 24*time.Hour)
	if c.Segment.ScrubRate == nil {
		rate := Size(DefaultScrubRate)
		c.Segment.ScrubRate = &rate
	}
	if c.Segment.Dictionary == nil {
		on := true
		c.Segment.Dictionary = &on
	}
	setSize(&c.Dispatch.IntakeBytes, 64<<20)
	setDur(&c.Dispatch.AttemptLogTTL, 24*time.Hour)
	setString(&c.Archive.Type, "none")
	setInt(&c.Archive.Concurrency, 4)
	for name, st := range c.Claims.Stores {
		setDur(&st.Retain, DefaultClaimRetain)
		setSize(&st.PackBytes, DefaultClaimPackBytes)
		setDur(&st.PackDelay, DefaultClaimPackDelay)
		c.Claims.Stores[name] = st
	}
}

// Claim store defaults.
const (
	DefaultClaimRetain    = 7 * 24 * time.Hour
	DefaultClaimPackBytes = 16 << 20
	DefaultClaimPackDelay = 50 * time.Millisecond
)

// applySharedDefaults fills where sources live and what a fleet shares.
func (c *Config) applySharedDefaults() {
	setString(&c.SourceStore.Type, "static")
	setString(&c.Redis.Namespace, "ankusa:")
	if c.SourceStore.Type == "redis" {
		// The redis source store shares the fleet's Redis unless it names
		// its own.
		setString(&c.SourceStore.URL, c.Redis.URL)
		setString(&c.SourceStore.Namespace, c.Redis.Namespace)
		if c.SourceStore.TickMs == 0 {
			c.SourceStore.TickMs = DefaultSourceStoreTickMs
		}
	}
	setString(&c.Dedupe.Scope, "node")
	setDur(&c.Dedupe.TTL, 72*time.Hour)
}

func (c *Config) applySourceDefaults() {
	for name, s := range c.Sources {
		DefaultSource(&s, c.Dedupe.TTL)
		c.Sources[name] = s
	}
}

// ApplySourceDefaults fills the source keys whose defaults are not zero:
// the dedupe ttl (dedupe.ttl) and the quarantine bucket.
func ApplySourceDefaults(s *Source, dedupeTTL Duration) {
	if s.Dedupe != nil && s.Dedupe.TTL == 0 {
		d := *s.Dedupe
		d.TTL = dedupeTTL
		s.Dedupe = &d
	}
	if s.Quarantine == nil {
		s.Quarantine = &Quarantine{Rate: DefaultQuarantineRate, Burst: DefaultQuarantineBurst}
	}
}

func setString(s *string, d string) {
	if *s == "" {
		*s = d
	}
}

func setInt(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}

func setSize(s *Size, d Size) {
	if *s == 0 {
		*s = d
	}
}

func setDur(v *Duration, d time.Duration) {
	if *v == 0 {
		*v = Duration(d)
	}
}
