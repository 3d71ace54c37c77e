package tenant

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

var (
	fleetFallbacks = metrics.NewCounter("ankusa_rate_limit_fleet_fallbacks_total")
	fleetLocal     = metrics.NewGauge("ankusa_rate_limit_fleet_local", nil)
)

// gcraScript is one fleet decision (rate_limits.scope: fleet), one round
// trip: GCRA over the tenant's theoretical arrival time in µs, on Redis's
// own clock so the nodes' clocks do not matter. ARGV: µs per token, burst,
// 1 to take a token or 0 to look. It answers {allowed, µs to wait}.
var gcraScript = redis.NewScript(`
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local nxt = tat + interval
local over = nxt - now - burst * interval
if over > 0 then
	return {0, math.ceil(over)}
end
if ARGV[3] == '1' then
	redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
end
return {1, 0}
`)

// FleetLimiter keeps the tenants' buckets in Redis, shared by every node,
// and falls back to the node's own buckets (at the same rates) while Redis
// does not answer: a client is never refused because Redis is down. It
// says so in the log and in ankusa_rate_limit_fleet_local, and goes back
// to Redis once it answers (tried at most once a second meanwhile).
type FleetLimiter struct {
	limits  *Limiter // the rates, and the local buckets of a fallback
	rdb     *redis.Client
	ns      string
	log     *zap.Logger
	timeout time.Duration
	local   atomic.Bool  // falling back
	retryAt atomic.Int64 // unix ns of the next try while local
}

// NewFleetLimiter decides with Redis rdb, keys under ns
// ("<ns>rl:<tenant>", so an erase can delete them), at the rates of rl.
func NewFleetLimiter(rl config.RateLimits, rdb *redis.Client, ns string, mono func() int64, log *zap.Logger) *FleetLimiter {
	return NewPolicyFleetLimiter(NewPolicy(rl), rdb, ns, mono, log)
}

// NewPolicyFleetLimiter is NewFleetLimiter at the rates of p, overrides
// included.
func NewPolicyFleetLimiter(p *Policy, rdb *redis.Client, ns string, mono func() int64, log *zap.Logger) *FleetLimiter {
	if log == nil {
		log = zap.NewNop()
	}
	return &FleetLimiter{limits: NewPolicyLimiter(p, mono), rdb: rdb, ns: ns, log: log, timeout: 100 * time.Millisecond}
}

// Key is the Redis key of a tenant's bucket.
func (f *FleetLimiter) Key(tenant string) string { return f.ns + "rl:" + tenant }

// Check is router step 7 (see Limiter.Check).
func (f *FleetLimiter) Check(tenant string) (bool, time.Duration) { return f.decide(tenant, false) }

// Take is router step 12 (see Limiter.Take).
func (f *FleetLimiter) Take(tenant string) (bool, time.Duration) { return f.decide(tenant, true) }

func (f *FleetLimiter) decide(tenant string, take bool) (bool, time.Duration) {
	rl, finite := f.limits.policy.Of(tenant)
	if !finite {
		return true, 0
	}
	if f.local.Load() && time.Now().UnixNano() < f.retryAt.Load() {
		return f.limits.decide(tenant, take)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	flag := "0"
	if take {
		flag = "1"
	}
	res, err := gcraScript.Run(ctx, f.rdb, []string{f.Key(tenant)}, strconv.FormatFloat(1e6/rl.Rate, 'f', 3, 64), rl.Burst, flag).Int64Slice()
	if err != nil || len(res) != 2 {
		fleetFallbacks.Inc()
		f.retryAt.Store(time.Now().Add(time.Second).UnixNano())
		if !f.local.Swap(true) {
			fleetLocal.Set(1)
			f.log.Warn("rate_limits.scope fleet: Redis does not answer; each node limits tenants with its own buckets until it does", zap.Error(err))
		}
		return f.limits.decide(tenant, take)
	}
	if f.local.Swap(false) {
		fleetLocal.Set(0)
		f.log.Info("rate_limits.scope fleet: Redis answers again; tenants' buckets are shared again")
	}
	if res[0] != 1 {
		limitedTotal.Inc()
		return false, time.Duration(res[1]) * time.Microsecond
	}
	if take {
		allowedTotal.Inc()
	}
	return true, 0
}

// Local reports whether the limiter is falling back to the node's buckets.
func (f *FleetLimiter) Local() bool { return f.local.Load() }
