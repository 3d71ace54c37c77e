package config

import (
	"os"
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
	DefaultReadTimeout     = 30 * time.Second
	DefaultWriteTimeout    = 10 * time.Second
	DefaultIdleTimeout     = 60 * time.Second
	DefaultWALFileBytes    = 64 << 20
	DefaultWALBatchBytes   = 8 << 20
	DefaultTenantsMax      = 100000
	// DefaultTenantCreateRate and DefaultTenantCreateBurst bound how fast
	// new tenants are created, node-wide.
	DefaultTenantCreateRate  = 100
	DefaultTenantCreateBurst = 1000
	DefaultTenant            = "default"
)

// ApplyDefaults fills every key left out.
func (c *Config) ApplyDefaults() {
	if c.Node.Name == "" {
		if h, err := os.Hostname(); err == nil && NameRE.MatchString(h) {
			c.Node.Name = h
		} else {
			c.Node.Name = "local"
		}
	}
	if c.Node.DataDir == "" {
		c.Node.DataDir = "./data"
	}
	if len(c.Node.Roles) == 0 {
		c.Node.Roles = []string{"edge", "dispatch", "archive", "admin"}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Admin.Listen == "" {
		c.Admin.Listen = DefaultAdminListen
	}
	l := &c.Limits
	setSize(&l.MaxBodyBytes, DefaultMaxBodyBytes)
	setSize(&l.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setSize(&l.MaxPipelineBytes, DefaultMaxPipelineBytes)
	setSize(&l.MaxQuarantineBytes, DefaultMaxQuarantine)
	if l.MaxHeaderCount == 0 {
		l.MaxHeaderCount = DefaultMaxHeaderCount
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	setDur(&l.ReadTimeout, DefaultReadTimeout)
	setDur(&l.WriteTimeout, DefaultWriteTimeout)
	setDur(&l.IdleTimeout, DefaultIdleTimeout)
	if c.RouteResolver.Type == "" {
		c.RouteResolver.Type = "path"
	}
	// The built-in resolvers default to /webhooks; a registered one keeps
	// its own default when the config names no prefix.
	if c.RouteResolver.Prefix == nil && (c.RouteResolver.Type == "path" || c.RouteResolver.Type == "tenantpath") {
		c.RouteResolver.Prefix = []string{"webhooks"}
	}
	if c.RateLimits.Scope == "" {
		c.RateLimits.Scope = "node"
	}
	if c.Tenants.Max == 0 {
		c.Tenants.Max = DefaultTenantsMax
	}
	if c.Tenants.CreateRate == 0 {
		c.Tenants.CreateRate = DefaultTenantCreateRate
	}
	if c.Tenants.CreateBurst == 0 {
		c.Tenants.CreateBurst = DefaultTenantCreateBurst
	}
	if c.WAL.Type == "" {
		c.WAL.Type = "disk"
	}
	setSize(&c.WAL.MaxFileBytes, DefaultWALFileBytes)
	setSize(&c.WAL.MaxBatchBytes, DefaultWALBatchBytes)
	setSize(&c.Segment.MaxBytes, 64<<20)
	setDur(&c.Segment.MaxAge, 10*time.Second)
	setDur(&c.Segment.RetainLocal, 24*time.Hour)
	setSize(&c.Dispatch.IntakeBytes, 64<<20)
	setDur(&c.Dispatch.AttemptLogTTL, 24*time.Hour)
	if c.Archive.Type == "" {
		c.Archive.Type = "none"
	}
	if c.Archive.Concurrency == 0 {
		c.Archive.Concurrency = 4
	}
	if c.SourceStore.Type == "" {
		c.SourceStore.Type = "static"
	}
	if c.Redis.Namespace == "" {
		c.Redis.Namespace = "ankusa:"
	}
	if c.Dedupe.Scope == "" {
		c.Dedupe.Scope = "node"
	}
	setDur(&c.Dedupe.TTL, 72*time.Hour)
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "json"
	}
	for i := range c.Routes.Table {
		if c.Routes.Table[i].TenantID == "" {
			c.Routes.Table[i].TenantID = DefaultTenant
		}
	}
	for name, s := range c.Sources {
		if s.TenantID == "" {
			s.TenantID = DefaultTenant
		}
		if s.OnVerifyFailure == "" {
			s.OnVerifyFailure = "reject"
		}
		applySinkDefaults(s.Sinks)
		ApplySourceDefaults(&s, c.Dedupe.TTL)
		c.Sources[name] = s
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
