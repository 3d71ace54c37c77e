package tenant

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ankusa/ankusa/config"
)

// OverrideStore holds the runtime overrides a node loads at boot (the
// meta store). Changes are saved by the caller of SetOverride and
// ClearOverride, which writes each with its audit row.
type OverrideStore interface {
	RateLimitOverrides() (map[string]config.RateLimit, error)
}

// Policy is every tenant's limits (rate, burst, max_queue,
// max_queue_bytes): a runtime override if one is set, else the config's
// rate_limits.tenants entry, else rate_limits.default. Reads take no lock.
type Policy struct {
	def     config.RateLimit
	conf    map[string]config.RateLimit
	mu      sync.Mutex // serialises writers of over
	over    atomic.Pointer[map[string]config.RateLimit]
	hasDef  bool
	version atomic.Uint64 // bumped by every override change
}

// NewPolicy is the limits of rl, without runtime overrides.
func NewPolicy(rl config.RateLimits) *Policy {
	p := &Policy{conf: rl.Tenants}
	if rl.Default != nil {
		p.def, p.hasDef = *rl.Default, true
	}
	empty := map[string]config.RateLimit{}
	p.over.Store(&empty)
	return p
}

// LoadOverrides loads the runtime overrides s holds (at boot).
func (p *Policy) LoadOverrides(s OverrideStore) error {
	m, err := s.RateLimitOverrides()
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.over.Store(&m)
	p.version.Add(1)
	return nil
}

// Of is the tenant's limits; finite is false when its rate is unbounded.
func (p *Policy) Of(tenant string) (rl config.RateLimit, finite bool) {
	if rl, ok := (*p.over.Load())[tenant]; ok {
		return rl, rl.Finite()
	}
	if rl, ok := p.conf[tenant]; ok {
		return rl, rl.Finite()
	}
	return p.def, p.hasDef && p.def.Finite()
}

// CheckOverride says what is wrong with an override, naming the field.
func CheckOverride(rl config.RateLimit) error {
	switch {
	case math.IsNaN(rl.Rate) || rl.Rate < 0:
		return fmt.Errorf("rate: %v must be a number of hooks per second, 0 or more (.inf for no limit)", rl.Rate)
	case rl.Burst < 0 || rl.MaxQueue < 0 || rl.MaxQueueBytes < 0:
		return fmt.Errorf("burst, max_queue and max_queue_bytes must not be negative")
	case rl.Rate > 0 && !math.IsInf(rl.Rate, 1) && rl.Burst < 1:
		return fmt.Errorf("burst: %d must be at least 1 with a finite rate", rl.Burst)
	}
	return nil
}

// SetOverride sets the tenant's limits at runtime; the next request
// reads them. save, when not nil, makes the change durable before it
// applies (the admin API writes the override with its audit row in one
// synced batch); it runs under the writers' lock, so changes are saved in
// the order they apply, and its error leaves the policy unchanged.
func (p *Policy) SetOverride(tenant string, rl config.RateLimit, save func() error) error {
	if err := CheckOverride(rl); err != nil {
		return err
	}
	return p.change(tenant, save, func(m map[string]config.RateLimit) { m[tenant] = rl })
}

// ClearOverride removes the tenant's runtime override, saved by save as
// SetOverride's.
func (p *Policy) ClearOverride(tenant string, save func() error) error {
	return p.change(tenant, save, func(m map[string]config.RateLimit) { delete(m, tenant) })
}

// change saves, then applies f to a copy of the overrides and publishes
// it.
func (p *Policy) change(tenant string, save func() error, f func(map[string]config.RateLimit)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if save != nil {
		if err := save(); err != nil {
			return fmt.Errorf("rate limit override of tenant %s: %w", tenant, err)
		}
	}
	cur := *p.over.Load()
	next := make(map[string]config.RateLimit, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	f(next)
	p.over.Store(&next)
	p.version.Add(1)
	return nil
}

// Override is the tenant's runtime override, if it has one.
func (p *Policy) Override(tenant string) (config.RateLimit, bool) {
	rl, ok := (*p.over.Load())[tenant]
	return rl, ok
}
