package source

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/verify"
)

// Source is one source as the edge sees it. It is immutable once published
// in a snapshot.
type Source struct {
	Name     string
	TenantID string
	// Shared is true for a source of tenant "default": it stores each hook
	// under the request's tenant.
	Shared bool
	// MaxBodyBytes is the effective body bound: the source's own, capped by
	// limits.max_body_bytes.
	MaxBodyBytes int64
	// Verifier checks the source's signatures.
	Verifier verify.Verifier
	// CredentialHeader is the header whose value is the source's shared
	// credential (verify.CredentialHeader): stored redacted, or "".
	CredentialHeader string
	// Dedupe reads a hook's dedupe key (nil: the source does not dedupe);
	// DedupeTTL is how long a key is remembered.
	Dedupe    *dedupe.Extractor
	DedupeTTL time.Duration
	// Counters are the source's metrics, looked up once per snapshot so
	// the request path does not build names.
	Counters *Counters
	// Spec is the source's spec, defaults applied and secrets resolved.
	Spec config.Source
	// FromConfig is true for a source of the config file (a seed of a
	// writable store): the admin API cannot change it.
	FromConfig bool
	// Created and Updated are when the admin API wrote the source (zero
	// for one of the config).
	Created, Updated time.Time
	// Version is the shared store's version of the source's last write
	// (the redis store; 0 otherwise).
	Version uint64
}

// Counters are a source's verification and dedupe metrics. The source
// label is bounded by the sources the node has.
type Counters struct {
	// Verified counts verification outcomes: index 0 is a pass, the rest
	// are envelope.Fail* reasons.
	Verified    [envelope.FailExpired + 1]*metrics.Counter
	Quarantined *metrics.Counter
	Flagged     *metrics.Counter
	Duplicates  *metrics.Counter
}

// storedCounters are the counters of every source written through the
// admin API: their names are unbounded (a SaaS has 100,000), and a metric
// label must not be.
var storedCounters = sync.OnceValue(func() *Counters { return countersFor("_api") })

func countersFor(name string) *Counters {
	c := &Counters{
		Quarantined: metrics.GetOrCreateCounter(`ankusa_quarantined_total{source="` + name + `"}`),
		Flagged:     metrics.GetOrCreateCounter(`ankusa_flagged_total{source="` + name + `"}`),
		Duplicates:  metrics.GetOrCreateCounter(`ankusa_duplicates_total{source="` + name + `"}`),
	}
	for i := range c.Verified {
		outcome := envelope.FailureName(uint8(i))
		if i == 0 {
			outcome = "ok"
		}
		c.Verified[i] = metrics.GetOrCreateCounter(`ankusa_verifications_total{source="` + name + `",outcome="` + outcome + `"}`)
	}
	return c
}

// Store publishes snapshots of sources.
type Store interface {
	// Snapshot returns the current snapshot; never nil.
	Snapshot() *Snapshot
}

// Static is the store of sources declared in the config file; it never
// changes at runtime, and admin writes against it are refused.
type Static struct {
	snap atomic.Pointer[Snapshot]
}

// NewStatic returns a static store of the config's sources.
func NewStatic(cfg *config.Config) *Static {
	st := &Static{}
	st.snap.Store(NewSnapshot(cfg.Sources, cfg.Routes.Table, int64(cfg.Limits.MaxBodyBytes)))
	lastPublished.Store(st.snap.Load())
	return st
}

// Snapshot returns the store's snapshot.
func (s *Static) Snapshot() *Snapshot { return s.snap.Load() }

// ErrNoDurableSink: with wal.type: none, a hook's source has no sink whose
// ok means durable, so it cannot be acknowledged (503 until the source is
// updated).
var ErrNoDurableSink = errors.New("source has no durable sink and the node runs without a WAL")

// Build makes the edge's form of a source from its spec (defaults applied,
// secrets resolved); globalMax is limits.max_body_bytes. A verifier or a
// dedupe key that cannot be built does not stop it: validation refuses such
// a spec before it is built, and one that gets here anyway (stored before a
// rule existed) fails closed on verification and goes without dedupe (it
// never drops a hook).
func Build(name string, spec config.Source, globalMax int64, fromConfig bool) *Source {
	tenant := spec.TenantID
	if tenant == "" {
		tenant = config.DefaultTenant
	}
	maxBody := globalMax
	if spec.MaxBodyBytes > 0 && int64(spec.MaxBodyBytes) < maxBody {
		maxBody = int64(spec.MaxBodyBytes)
	}
	v, err := verify.New(spec.Verify)
	if err != nil {
		v = verify.Refuse{Type: spec.Verify.Type, Err: err}
	}
	var x *dedupe.Extractor
	var ttl time.Duration
	if spec.Dedupe != nil {
		if x, err = dedupe.NewExtractorAuto(spec.Dedupe.Key, spec.Verify.Type, verify.AutoDedupeKey, verify.AutoDedupeTypes()); err != nil {
			x = nil
		}
		ttl = spec.Dedupe.TTL.D()
	}
	counters := storedCounters()
	if fromConfig {
		counters = countersFor(name)
	}
	return &Source{
		Name: name, TenantID: tenant, Shared: tenant == config.DefaultTenant,
		MaxBodyBytes: maxBody, Verifier: v, CredentialHeader: verify.CredentialHeader(spec.Verify), Dedupe: x, DedupeTTL: ttl,
		Counters: counters, Spec: spec, FromConfig: fromConfig,
	}
}
