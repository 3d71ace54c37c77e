package tenant

import (
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
)

var (
	allowedTotal  = metrics.NewCounter(`ankusa_rate_limit_decisions_total{outcome="allowed"}`)
	limitedTotal  = metrics.NewCounter(`ankusa_rate_limit_decisions_total{outcome="limited"}`)
	evictedTotal  = metrics.NewCounter("ankusa_rate_limit_buckets_evicted_total")
	trackedBucket = metrics.NewGauge("ankusa_rate_limit_buckets", nil)
)

const limiterShards = 64

// Limiter holds the node's per-tenant token buckets (rate_limits, node
// scope). A bucket is made when its tenant first sends and forgotten once
// it is full again (a full bucket is the same as a new one), so memory
// stays bounded by the tenants sending within one burst's refill time,
// however many tenant names arrive in URLs. Safe for concurrent use; a
// tenant that has a bucket costs no allocation.
type Limiter struct {
	policy *Policy
	mono   func() int64
	seed   maphash.Seed
	shards [limiterShards]limShard
}

// limited is a tenant's bucket with the limits it was made for: an
// override changes them in place, keeping the tokens held.
type limited struct {
	b     *Bucket
	rate  float64
	burst int
}

type limShard struct {
	mu   sync.Mutex
	m    map[string]*limited
	ops  int // decisions since the last sweep
	next int // decisions between sweeps: the size after the last one
}

// NewLimiter builds the buckets rl describes; mono is a monotonic clock in
// nanoseconds.
func NewLimiter(rl config.RateLimits, mono func() int64) *Limiter {
	return NewPolicyLimiter(NewPolicy(rl), mono)
}

// NewPolicyLimiter builds the buckets of p, overrides included.
func NewPolicyLimiter(p *Policy, mono func() int64) *Limiter {
	l := &Limiter{policy: p, mono: mono, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].m = map[string]*limited{}
	}
	return l
}

// Check is router step 7: does the tenant's bucket hold a token now? It
// takes none (Take does, once the hook passed verification). wait is the
// time until a token when not.
func (l *Limiter) Check(tenant string) (ok bool, wait time.Duration) {
	return l.decide(tenant, false)
}

// Take is router step 12: it takes one token from the tenant's bucket.
func (l *Limiter) Take(tenant string) (ok bool, wait time.Duration) {
	return l.decide(tenant, true)
}

func (l *Limiter) decide(tenant string, take bool) (bool, time.Duration) {
	rl, finite := l.policy.Of(tenant)
	if !finite {
		return true, 0
	}
	now := l.mono()
	s := &l.shards[maphash.String(l.seed, tenant)%limiterShards]
	s.mu.Lock()
	e := s.m[tenant]
	if e == nil {
		// The name may point into a request's buffer: keep a copy.
		e = &limited{b: NewBucket(rl.Rate, rl.Burst, now), rate: rl.Rate, burst: rl.Burst}
		s.m[strings.Clone(tenant)] = e
		trackedBucket.Inc()
	} else if e.rate != rl.Rate || e.burst != rl.Burst {
		e.b.Reconfigure(rl.Rate, rl.Burst, now)
		e.rate, e.burst = rl.Rate, rl.Burst
	}
	b := e.b
	// Decided under the shard's lock, so a sweep cannot forget a bucket
	// between its lookup and its use (the token would be taken from a
	// bucket no one sees again).
	var ok bool
	var wait time.Duration
	if take {
		ok, wait = b.Take(now)
	} else {
		ok, wait = b.Peek(now)
	}
	// Sweeps cost the shard's size; one every that many decisions keeps
	// the cost per decision constant and the map at most twice what is
	// live.
	if s.ops++; s.ops >= max(256, s.next) {
		l.sweep(s, now)
	}
	s.mu.Unlock()
	if !ok {
		limitedTotal.Inc()
	} else if take {
		allowedTotal.Inc()
	}
	return ok, wait
}

// sweep forgets the shard's full buckets; under s.mu.
func (l *Limiter) sweep(s *limShard, now int64) {
	s.ops = 0
	for name, e := range s.m {
		if e.b.Full(now) {
			delete(s.m, name)
			evictedTotal.Inc()
			trackedBucket.Dec()
		}
	}
	s.next = len(s.m)
}

// Tracked is the number of buckets held.
func (l *Limiter) Tracked() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
