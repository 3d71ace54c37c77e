package tenant

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
)

var (
	queuedHooks = metrics.NewGauge("ankusa_tenant_queue_hooks", nil)
	queuedBytes = metrics.NewGauge("ankusa_tenant_queue_bytes", nil)
	overloads   = metrics.NewCounter(`ankusa_rate_limit_decisions_total{outcome="tenant_overload"}`)
)

// Queues count, per tenant, the hooks and bytes admitted and not yet
// committed (router step 8): reserved from what a request will cost
// before its body is read, released on every exit. Past a tenant's
// max_queue or max_queue_bytes it gets 429 tenant_overload, so one tenant
// cannot fill the commit pipeline for the others. A tenant's entry stays
// while it is idle and is swept once the shard has grown (as the token
// buckets are), so a tenant sending one hook at a time costs no allocation
// and memory stays bounded. Safe for concurrent use.
type Queues struct {
	policy *Policy
	seed   maphash.Seed
	shards [limiterShards]queueShard
	active atomic.Int64 // tenants with something queued
	hooks  atomic.Int64
	bytes  atomic.Int64
}

type queueShard struct {
	mu   sync.Mutex
	m    map[string]*queue
	ops  int // reservations since the last sweep
	next int // reservations between sweeps
}

type queue struct{ hooks, bytes int64 }

// NewQueues builds the caps rl describes (0: no cap).
func NewQueues(rl config.RateLimits) *Queues { return NewPolicyQueues(NewPolicy(rl)) }

// NewPolicyQueues builds the caps of p, overrides included.
func NewPolicyQueues(p *Policy) *Queues {
	q := &Queues{policy: p, seed: maphash.MakeSeed()}
	for i := range q.shards {
		q.shards[i].m = map[string]*queue{}
	}
	return q
}

func (q *Queues) capsOf(tenant string) (hooks, bytes int64) {
	rl, _ := q.policy.Of(tenant)
	return int64(rl.MaxQueue), int64(rl.MaxQueueBytes)
}

// Reserve takes one hook of cost bytes in the tenant's queue. share, when
// positive, is a byte bound the tenant may not pass either (the node near
// its own bound gives each tenant its share, so the one holding the most
// is refused first). ok false: the tenant is over a cap, nothing taken.
func (q *Queues) Reserve(tenant string, cost, share int64) bool {
	maxHooks, maxBytes := q.capsOf(tenant)
	s := &q.shards[maphash.String(q.seed, tenant)%limiterShards]
	s.mu.Lock()
	e := s.m[tenant]
	var held queue
	if e != nil {
		held = *e
	}
	if maxHooks > 0 && held.hooks+1 > maxHooks || maxBytes > 0 && held.bytes+cost > maxBytes || share > 0 && held.bytes > 0 && held.bytes+cost > share {
		s.mu.Unlock()
		overloads.Inc()
		return false
	}
	if e == nil {
		// The name may point into a request's buffer: keep a copy.
		e = &queue{}
		s.m[strings.Clone(tenant)] = e
	}
	if e.hooks == 0 {
		q.active.Add(1)
	}
	e.hooks++
	e.bytes += cost
	if s.ops++; s.ops >= max(256, s.next) {
		s.ops = 0
		for name, idle := range s.m {
			if idle.hooks == 0 {
				delete(s.m, name)
			}
		}
		s.next = len(s.m)
	}
	s.mu.Unlock()
	queuedHooks.Set(float64(q.hooks.Add(1)))
	queuedBytes.Set(float64(q.bytes.Add(cost)))
	return true
}

// Release gives back a reservation of cost bytes.
func (q *Queues) Release(tenant string, cost int64) {
	s := &q.shards[maphash.String(q.seed, tenant)%limiterShards]
	s.mu.Lock()
	e := s.m[tenant]
	if e == nil {
		s.mu.Unlock()
		panic("BUG: tenant: a queue reservation released twice, or for another tenant")
	}
	e.hooks--
	e.bytes -= cost
	if e.hooks < 0 {
		s.mu.Unlock()
		panic("BUG: tenant: a queue reservation released twice")
	}
	if e.hooks == 0 {
		if e.bytes != 0 {
			s.mu.Unlock()
			panic("BUG: tenant: queue bytes do not return to zero with the hooks")
		}
		q.active.Add(-1)
	}
	s.mu.Unlock()
	queuedHooks.Set(float64(q.hooks.Add(-1)))
	queuedBytes.Set(float64(q.bytes.Add(-cost)))
}

// Queued is the number of the tenant's hooks admitted and not yet
// committed (the erase job waits for 0 once the tenant is closed).
func (q *Queues) Queued(tenant string) int64 {
	s := &q.shards[maphash.String(q.seed, tenant)%limiterShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[tenant]; e != nil {
		return e.hooks
	}
	return 0
}

// Active is the number of tenants with something queued.
func (q *Queues) Active() int64 { return q.active.Load() }

// Totals are the hooks and bytes queued, node-wide.
func (q *Queues) Totals() (hooks, bytes int64) { return q.hooks.Load(), q.bytes.Load() }
