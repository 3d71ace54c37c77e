package cli

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/internal/redisx"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// openRouter builds the edge's router over the commit step and the
// tenant limits.
func (n *node) openRouter(commit edge.Committer) error {
	resolver, err := edge.NewResolver(n.cfg.RouteResolver)
	if err != nil {
		return err
	}
	// Every tenant's limits: the config's, and overrides set at runtime
	// (stored in the meta store, so they survive a restart).
	policy := tenant.NewPolicy(n.cfg.RateLimits)
	if err := policy.LoadOverrides(n.meta); err != nil {
		return err
	}
	n.policy = policy // the admin API changes its overrides
	limiter, err := n.rateLimiter(policy)
	if err != nil {
		return err
	}
	stage, err := n.dedupeStage()
	if err != nil {
		return err
	}
	var pen edge.Pen // nil with wal.type: none: a quarantined hook is refused
	if n.dispatch != nil {
		pen = n.dispatch
	}
	var ids interface {
		Ordinal(string) (uint32, bool)
		TenantsFull() bool
	} = n.direct
	if n.wal != nil {
		ids = n.wal
	}
	mono := monotonic()
	n.queues = tenant.NewPolicyQueues(policy)
	n.router = edge.NewRouter(edge.Options{
		Resolver:      resolver,
		Sources:       n.sources,
		RoutesEnabled: n.cfg.Routes.Enabled,
		WAL:           commit,
		Limits:        n.cfg.Limits,
		Logger:        n.log,
		Pen:           pen,
		Dedupe:        stage,
		Tenants:       limiter,
		Queues:        n.queues,
		Closed:        n.closed,
		Mono:          mono,
		TenantKnown:   func(t string) bool { _, ok := ids.Ordinal(t); return ok },
		TenantsFull:   ids.TenantsFull,
		NewTenants:    tenant.NewBucket(n.cfg.Tenants.CreateRate, n.cfg.Tenants.CreateBurst, mono()),
	})
	return nil
}

// monotonic is a monotonic clock in nanoseconds.
func monotonic() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// rateLimiter is the tenants' token buckets: on the node, or shared
// through Redis (rate_limits.scope: fleet).
func (n *node) rateLimiter(policy *tenant.Policy) (edge.RateLimiter, error) {
	if n.cfg.RateLimits.Scope != "fleet" {
		return tenant.NewPolicyLimiter(policy, monotonic()), nil
	}
	redis.SetLogger(redisLogger{n.log.Named("redis")})
	rdb, addr, err := redisx.NewClient(n.cfg.Redis.URL)
	if err != nil {
		return nil, err
	}
	n.rdb = rdb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		n.log.Warn("rate_limits.scope is fleet and Redis does not answer; each node limits tenants with its own buckets until it does", zap.String("redis.url", addr), zap.Error(err))
	}
	n.fleetLimiter = tenant.NewPolicyFleetLimiter(policy, rdb, n.cfg.Redis.Namespace, monotonic(), n.log)
	return n.fleetLimiter, nil
}

// dedupeStage is router step 13 for the configured scope, or nil when no
// source dedupes.
func (n *node) dedupeStage() (*dedupe.Stage, error) {
	// A writable store may gain a source with a dedupe key at any time:
	// the stage exists whenever one is possible (node scope needs the
	// node's log, and validation refuses such a source without one).
	_, writable := n.sources.(source.Writer)
	uses := n.sources.Snapshot().Dedupes() || writable && (n.cfg.Dedupe.Scope == "fleet" || n.dispatch != nil)
	if !uses {
		return nil, nil
	}
	if n.cfg.Dedupe.Scope == "fleet" {
		return n.fleetDedupe()
	}
	if n.dispatch == nil {
		return nil, errors.New("dedupe.scope: node needs the node's log (wal.type: disk)")
	}
	return dedupe.NewNodeStage(dedupe.NewNode(n.meta, n.wal.Ordinal), n.dispatch.Written, n.log), nil
}

func (n *node) fleetDedupe() (*dedupe.Stage, error) {
	redis.SetLogger(redisLogger{n.log.Named("redis")})
	f, err := dedupe.NewFleet(dedupe.FleetOptions{URL: n.cfg.Redis.URL, Namespace: n.cfg.Redis.Namespace, Logger: n.log})
	if err != nil {
		return nil, err
	}
	n.fleet = f
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := f.Ping(ctx); err != nil {
		// Dedupe never drops a hook: without Redis, hooks go through
		// as new ones until it answers.
		n.log.Warn("dedupe.scope is fleet and Redis does not answer; hooks are not deduplicated until it does", zap.String("redis.url", redactURL(n.cfg.Redis.URL)), zap.Error(err))
	}
	return dedupe.NewFleetStage(f, n.log), nil
}
