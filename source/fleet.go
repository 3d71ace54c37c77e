package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// FleetTimeout is the default bound of one exchange with Redis; the
// client's read and write timeouts must be at least as long (redisx.
// NewClientWith).
const FleetTimeout = 2 * time.Second

// FleetOptions configure the redis store (source_store: redis).
type FleetOptions struct {
	// PersistentOptions are the store's, as for the persistent store;
	// Backend and BeforeWrite are the fleet's own and must be left nil.
	PersistentOptions
	Redis *redis.Client
	// Addr is source_store.url with its password redacted, for messages.
	Addr      string
	Namespace string
	// Tick is how often the node checks the store's version when no
	// pub/sub message came (source_store.tick_ms).
	Tick time.Duration
	// Meta keeps the local mirror and the pending changes.
	Meta *meta.Store
	Log  *zap.Logger
	// Timeout bounds one exchange with Redis (default 2s): a catch-up of
	// many batches takes as many.
	Timeout time.Duration
}

// Fleet is the redis store: the admin API's sources and routes live in
// Redis under a namespace, and every node of the namespace serves them
// from an in-memory mirror (the Persistent it embeds), never from Redis
// on the request path. A write goes to Redis first (check-and-set on the
// entity's version: a node that checked its write against an older
// version gets 409 conflict), then into this node's snapshot; the other
// nodes reload what changed on the pub/sub message the write publishes,
// or at their next tick. The mirror is kept in the meta store too, so a
// node that has run once boots and serves while Redis is down.
//
// A write's audit row and lifecycle event are the node's (its meta
// store): the change is recorded there as pending (synced) before it is
// sent, and turned into its audit row once Redis accepted it; a node that
// lost Redis's answer asks later (the write's mark), so no change of the
// store goes without its event, and no refused one gets one.
type Fleet struct {
	*Persistent
	o FleetOptions
	k fleetKeys

	mu       sync.Mutex          // one catch-up at a time; guards state and mirrored
	state    meta.MirrorState    // what the mirror holds
	mirrored map[string]mirrored // log member → what the local mirror holds of it
	warned   map[string]bool     // seeds hiding a stored entity, logged once

	kick     chan struct{}
	inflight sync.Map // pending change id → struct{}: writes under way
	// whole makes the next sync read the namespace whole even at the
	// mirror's epoch: the boot's, so a node serves what Redis holds, not
	// what its mirror says Redis held (a record changed in Redis under
	// the same version, by hand or by damage, is read and checked).
	whole bool
	// earlier are the pending changes an earlier run of the node left:
	// no write of theirs can still be on its way, so they are settled at
	// once, without waiting settleAfter.
	earlier   map[string]bool
	reconcile atomic.Bool
	down      atomic.Bool
	cancel    context.CancelFunc
	done      chan struct{}
}

var _ Writer = (*Fleet)(nil)

// The redis store's metrics.
var (
	fleetUp          = metrics.NewCounter(`ankusa_source_store_redis_reconnects_total`)
	fleetFailures    = metrics.NewCounter(`ankusa_source_store_redis_failures_total`)
	fleetApplied     = metrics.NewCounter(`ankusa_source_store_changes_applied_total`)
	fleetRefused     = metrics.NewCounter(`ankusa_source_store_records_refused_total`)
	fleetRestored    = metrics.NewCounter(`ankusa_source_store_entities_restored_total`)
	fleetVersion     atomic.Uint64
	fleetDown        atomic.Bool
	fleetPending     atomic.Int64
	_                = metrics.NewGauge(`ankusa_source_store_pending_changes`, func() float64 { return float64(fleetPending.Load()) })
	_                = metrics.NewGauge(`ankusa_source_store_version`, func() float64 { return float64(fleetVersion.Load()) })
	_                = metrics.NewGauge(`ankusa_source_store_redis_up`, func() float64 { return boolGauge(!fleetDown.Load()) })
	fleetBatchLimit  = 500
	fleetRestoreSize = 200
)

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// OpenFleet opens the redis store: the local mirror (if this node has one
// of the namespace), caught up with Redis. A node that cannot reach Redis
// and has no mirror of the namespace refuses (an error naming
// source_store.url): it would run with no sources. One with a mirror
// serves it, and catches up once Redis answers (Run). A stored secret no
// configured key opens is an error naming the source and the field.
func OpenFleet(o FleetOptions) (f *Fleet, warnings []string, err error) {
	if o.Timeout == 0 {
		o.Timeout = FleetTimeout
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	f = &Fleet{o: o, k: newFleetKeys(o.Namespace), mirrored: map[string]mirrored{}, warned: map[string]bool{}, kick: make(chan struct{}, 1)}
	st, found, err := o.Meta.Mirror()
	if err != nil {
		return nil, nil, err
	}
	local := found && st.Namespace == o.Namespace
	if found && !local {
		warnings = append(warnings, fmt.Sprintf("the local mirror is of source_store.namespace %q, not %q: it is dropped", st.Namespace, o.Namespace))
		b := o.Meta.NewBatch()
		b.ClearMirror()
		err := b.Commit(meta.Sync)
		b.Close()
		if err != nil {
			return nil, nil, err
		}
	}
	f.state = meta.MirrorState{Namespace: o.Namespace}
	if local {
		f.state = st
	}
	f.earlier = map[string]bool{}
	if err := o.Meta.PendingChanges(func(pc meta.PendingChange) error {
		f.earlier[pc.ID] = true
		fleetPending.Add(1)
		return nil
	}); err != nil {
		return nil, nil, err
	}

	// The mirror as this node last kept it, then what changed since.
	raw := map[string]change{}
	stale := o.Meta.NewBatch()
	defer stale.Close()
	for _, kind := range []meta.MirrorKind{meta.MirrorSource, meta.MirrorRoute} {
		err := o.Meta.Mirrored(kind, func(tenant, name string, version uint64, record []byte) error {
			c := change{route: kind == meta.MirrorRoute, tenant: tenant, name: name, version: version, record: append([]byte(nil), record...)}
			c.member = sourceMember(name)
			if c.route {
				c.member = routeMember(tenant, name)
			}
			if had, ok := f.mirrored[c.member]; ok {
				// Two entries of one name (a mirror kept before the
				// name's tenant changed): the later one is the source,
				// the other goes.
				if had.version > version {
					stale.DeleteMirrored(kind, tenant, name)
					return nil
				}
				stale.DeleteMirrored(kind, had.tenant, name)
				delete(raw, c.member)
			}
			f.mirrored[c.member] = mirrored{tenant: tenant, version: version, gone: len(record) == 0}
			if len(record) > 0 {
				raw[c.member] = c
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if err := stale.Commit(meta.NoSync); err != nil {
		return nil, nil, err
	}
	f.whole = true
	err = f.sync(context.Background(), func(cs []change, rebuild bool) {
		if rebuild {
			clear(raw)
		}
		for _, c := range cs {
			if c.record == nil {
				delete(raw, c.member)
			} else {
				raw[c.member] = c
			}
		}
	})
	if err != nil {
		if !local {
			return nil, nil, fmt.Errorf("source_store.url %s: cannot reach Redis on this node's first boot with source_store.namespace %q (there is no local mirror to serve from): %v", o.Addr, o.Namespace, err)
		}
		f.down.Store(true)
		fleetDown.Store(true)
		warnings = append(warnings, fmt.Sprintf("source_store.url %s: Redis does not answer (%v); serving the local mirror of source_store.namespace %q at version %d until it does", o.Addr, err, o.Namespace, f.state.Version))
	} else {
		f.reconcile.Store(true)
	}

	// The first snapshot: seeds, then sources, then routes.
	members := make([]string, 0, len(raw))
	for m := range raw {
		members = append(members, m)
	}
	sort.Strings(members) // "r/" sorts before "s/": sources first below
	l := newLoader(&o.PersistentOptions)
	for _, m := range members {
		if c := raw[m]; !c.route {
			if err := l.source(c.tenant, c.name, c.version, c.record); err != nil {
				return nil, nil, err
			}
		}
	}
	l.sourcesDone()
	for _, m := range members {
		if c := raw[m]; c.route {
			if err := l.route(c.tenant, c.name, c.version, c.record); err != nil {
				return nil, nil, err
			}
		}
	}
	snap, w := l.finish()
	warnings = append(warnings, w...)
	po := o.PersistentOptions
	po.Backend, po.BeforeWrite = f, f.beforeWrite
	f.Persistent = newPersistent(po, snap)
	f.Persistent.remote = f.state.Version
	fleetVersion.Store(f.state.Version)
	return f, warnings, nil
}

// Run follows the store until ctx ends: a pub/sub message or a tick
// makes the node catch up; a catch-up that fails is logged once per
// outage and tried again at the next tick.
func (f *Fleet) Run(ctx context.Context) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		ps := f.o.Redis.Subscribe(ctx, f.k.channel)
		defer ps.Close()
		msgs := ps.Channel()
		tick := time.NewTicker(f.o.Tick)
		defer tick.Stop()
		f.catchUp(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					msgs = nil // the subscription is closed: the tick goes on
					continue
				}
				if v, err := strconv.ParseUint(m.Payload, 10, 64); err == nil && v <= f.version() {
					continue // this node's own write, or one it has read already
				}
				f.catchUp(ctx)
			case <-tick.C:
				f.catchUp(ctx)
			case <-f.kick:
				f.catchUp(ctx)
			}
		}
	}()
}

// Close stops Run.
func (f *Fleet) Close() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

func (f *Fleet) version() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.Version
}

// kickLoop has Run catch up soon.
func (f *Fleet) kickLoop() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// catchUp brings the snapshot to the store's version, and settles the
// pending changes once Redis answers.
func (f *Fleet) catchUp(ctx context.Context) {
	err := f.sync(ctx, f.apply)
	f.noteRedis(err)
	if err == nil && f.reconcile.Load() {
		f.settlePending(ctx)
	}
}

// noteRedis logs and counts Redis going away and coming back.
func (f *Fleet) noteRedis(err error) {
	if err != nil {
		fleetFailures.Inc()
		if !f.down.Swap(true) {
			fleetDown.Store(true)
			f.o.Log.Warn("the redis source store does not answer: serving the mirror, refusing source and route writes (503 source_store_unavailable) until it does",
				zap.String("url", f.o.Addr), zap.Error(err))
		}
		return
	}
	if f.down.Swap(false) {
		fleetDown.Store(false)
		fleetUp.Inc()
		f.reconcile.Store(true)
		f.o.Log.Info("the redis source store answers again", zap.String("url", f.o.Addr), zap.Uint64("version", f.version()))
	}
}

// beforeWrite catches up with the store before a write is checked, so a
// write is checked against what the fleet wrote last (fewer conflicts),
// and refuses it when Redis does not answer.
func (f *Fleet) beforeWrite() error {
	err := f.sync(context.Background(), f.apply)
	f.noteRedis(err)
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("source_store.url %s: Redis does not answer (%v); the node serves its mirror, and source and route writes wait until Redis is back", f.o.Addr, err)}
	}
	return nil
}

// sync brings the mirror to the store's version. Redis at the epoch the
// mirror follows: what changed since the mirror's version is read, in
// batches (follow). Redis at another epoch (a new namespace, one Redis
// lost and another node numbered afresh, or one that lost writes and got
// a new epoch here, lossScript): the node gives it back its mirror
// (restore), then reads it whole and makes that its mirror (rebuild). A
// node's first sync has no mirror and only reads; the boot's sync reads
// the namespace whole at any epoch (f.whole).
func (f *Fleet) sync(parent context.Context, apply func(cs []change, rebuild bool)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rdb := f.o.Redis
	ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
	defer cancel()
	epoch, err := rdb.Get(ctx, f.k.epoch).Result()
	if errors.Is(err, redis.Nil) {
		if err := rdb.SetNX(ctx, f.k.epoch, newEpoch(), 0).Err(); err != nil {
			return err
		}
		epoch, err = rdb.Get(ctx, f.k.epoch).Result()
	}
	if err != nil {
		return err
	}
	if epoch == f.state.Epoch {
		cur, err := rdb.Get(ctx, f.k.ver).Uint64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if cur >= f.state.Version && !f.whole {
			return f.follow(parent, epoch, apply)
		}
		if cur >= f.state.Version {
			return f.rebuild(parent, epoch, apply)
		}
		// Redis lost writes of this epoch (its version is below the
		// mirror's): the namespace gets a new epoch, so what is written
		// after the loss is told from what survived it.
		if epoch, err = lossScript.Run(ctx, rdb, []string{f.k.epoch, f.k.ver}, f.state.Epoch, f.state.Version, newEpoch()).Text(); err != nil {
			return err
		}
	}
	if f.state.Epoch != "" {
		f.o.Log.Warn("the redis source store's namespace is at another epoch (Redis lost it or part of it, or it was emptied): the node gives it back its mirror, then reads it whole",
			zap.String("namespace", f.o.Namespace), zap.String("was", f.state.Epoch), zap.String("now", epoch), zap.Uint64("mirror_version", f.state.Version))
		if err := f.restore(parent, epoch); err != nil {
			return err
		}
	}
	return f.rebuild(parent, epoch, apply)
}

// follow reads what changed since the mirror's version, in batches, each
// kept in the meta store and applied before the next. f.mu is held.
func (f *Fleet) follow(parent context.Context, epoch string, apply func(cs []change, rebuild bool)) error {
	for {
		ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
		b, err := f.k.fetchChanges(ctx, f.o.Redis, f.state.Version, fleetBatchLimit)
		cancel()
		if err != nil {
			return err
		}
		if b.epoch != epoch {
			return fmt.Errorf("the namespace's epoch changed while the node read it (%q, then %q)", epoch, b.epoch)
		}
		if len(b.changes) == 0 {
			return nil
		}
		next := f.state
		for _, c := range b.changes {
			next.Version = max(next.Version, c.version)
		}
		if err := f.keep(b.changes, next, false); err != nil {
			return err
		}
		apply(b.changes, false)
		f.state = next
		fleetVersion.Store(next.Version)
		if len(b.changes) < fleetBatchLimit {
			return nil
		}
	}
}

// rebuild reads the whole namespace at epoch, then makes it the mirror in
// one step: one meta batch and one published snapshot, so no reader sees
// a mirror half read, and the mirror's state moves only once it is all
// there (a rebuild cut short is done again). f.mu is held.
func (f *Fleet) rebuild(parent context.Context, epoch string, apply func(cs []change, rebuild bool)) error {
	var all []change
	next := meta.MirrorState{Namespace: f.o.Namespace, Epoch: epoch}
	for {
		ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
		b, err := f.k.fetchChanges(ctx, f.o.Redis, next.Version, fleetBatchLimit)
		cancel()
		if err != nil {
			return err
		}
		if b.epoch != epoch {
			return fmt.Errorf("the namespace's epoch changed while the node read it (%q, then %q)", epoch, b.epoch)
		}
		all = append(all, b.changes...)
		for _, c := range b.changes {
			next.Version = max(next.Version, c.version)
		}
		if len(b.changes) < fleetBatchLimit {
			break
		}
	}
	if err := f.keep(all, next, true); err != nil {
		return err
	}
	apply(all, true)
	f.state = next
	f.whole = false
	fleetVersion.Store(next.Version)
	return nil
}

// restore gives Redis, at epoch, the mirror's entities (removals too)
// that it does not hold a later form of (restoreScript), and the token
// claims of the routes it gave back. f.mu is held.
func (f *Fleet) restore(parent context.Context, epoch string) error {
	var args []any
	restored := 0
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
		defer cancel()
		n, err := restoreScript.Run(ctx, f.o.Redis, []string{f.k.epoch, f.k.ver, f.k.log},
			append([]any{epoch, f.state.Epoch, f.k.prefix, f.k.channel}, args...)...).Int()
		if err != nil {
			return err
		}
		if n < 0 {
			return errors.New("the namespace changed epoch during the restore")
		}
		restored += n
		args = args[:0]
		return nil
	}
	for _, kind := range []meta.MirrorKind{meta.MirrorSource, meta.MirrorRoute} {
		err := f.o.Meta.Mirrored(kind, func(tenant, name string, version uint64, record []byte) error {
			m := sourceMember(name)
			if kind == meta.MirrorRoute {
				m = routeMember(tenant, name)
			}
			args = append(args, m, version, tenant, string(record))
			if len(args) >= 4*fleetRestoreSize {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	// The token claims went with the namespace: the routes' tokens are
	// claimed again for their routes (the first claim stands).
	ctx, cancel := context.WithTimeout(parent, f.o.Timeout)
	defer cancel()
	pipe := f.o.Redis.Pipeline()
	err := f.o.Meta.Mirrored(meta.MirrorRoute, func(tenant, id string, _ uint64, record []byte) error {
		if len(record) == 0 {
			return nil
		}
		r, err := decodeRouteRecord(tenant, id, record)
		if err != nil {
			return nil // the rebuild refuses it, naming it
		}
		for _, t := range r.Tokens {
			pipe.SetNX(ctx, f.k.prefix+"tok/"+hex.EncodeToString(t.Digest[:]), tenant+"/"+id, 0)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	fleetRestored.Add(restored)
	f.o.Log.Warn("the node gave the redis source store back its mirror", zap.String("namespace", f.o.Namespace), zap.String("epoch", epoch), zap.Int("entities_restored", restored))
	return nil
}

// mirrored is what the local mirror holds of an entity: the tenant it is
// kept under ("" when unknown: a source removed before the node mirrored
// it), the version of that form, and whether that form is its removal.
// A removal is kept (an entry with an empty record): a node giving Redis
// back its mirror gives back the removals it saw too, so a restore by a
// node that missed them does not bring the entity back.
type mirrored struct {
	tenant  string
	version uint64
	gone    bool
}

// keep writes a batch of changes and the mirror's new state into the
// meta store, in one batch (a crash leaves the mirror at a version it
// wholly holds). f.mu is held.
func (f *Fleet) keep(cs []change, next meta.MirrorState, rebuild bool) error {
	b := f.o.Meta.NewBatch()
	defer b.Close()
	if rebuild {
		b.ClearMirror()
		clear(f.mirrored)
	}
	for _, c := range cs {
		f.mirror(b, c)
	}
	b.SetMirrorState(next)
	return b.Commit(meta.NoSync)
}

// mirror adds c to the local mirror, unless the mirror holds a later
// form of its entity (a write of this node, kept when Redis took it);
// a source whose name moved to another tenant leaves its old entry.
// f.mu is held.
func (f *Fleet) mirror(b *meta.Batch, c change) {
	kind := meta.MirrorSource
	if c.route {
		kind = meta.MirrorRoute
	}
	had, ok := f.mirrored[c.member]
	if ok && had.version >= c.version {
		return
	}
	tenant := c.tenant
	if c.record == nil && tenant == "" {
		tenant = had.tenant // a removal read from Redis names no tenant
	}
	if ok && had.tenant != "" && had.tenant != tenant {
		b.DeleteMirrored(kind, had.tenant, c.name)
	}
	if tenant != "" {
		b.PutMirrored(kind, tenant, c.name, c.version, c.record) // no record: a removal
	}
	f.mirrored[c.member] = mirrored{tenant: tenant, version: c.version, gone: c.record == nil}
}

// keepOwn adds a write of this node that Redis took at version to the
// local mirror at once, so a later boot or restore (restoreIfLost) has
// it even if the node goes down before its next catch-up.
func (f *Fleet) keepOwn(ops []Op, version uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.o.Meta.NewBatch()
	defer b.Close()
	for _, op := range ops {
		c := change{tenant: op.Tenant, name: op.Name, version: version}
		switch op.Kind {
		case PutSource, DeleteSource:
			c.member = sourceMember(op.Name)
		case PutRoute, DeleteRoute:
			c.member, c.route = routeMember(op.Tenant, op.Name), true
		default:
			continue
		}
		if op.Kind == PutSource || op.Kind == PutRoute {
			c.record = op.Record
		}
		f.mirror(b, c)
	}
	if err := b.Commit(meta.NoSync); err != nil {
		f.o.Log.Warn("cannot keep a write in the local mirror; the next catch-up does", zap.Error(err))
	}
}

// apply puts a batch of changes into the snapshot and publishes it; a
// change older than what the snapshot holds of its entity (this node's
// own write, published already) is skipped. A record that does not open
// or decode is logged and counted, and the entity keeps its last form.
func (f *Fleet) apply(cs []change, rebuild bool) {
	p := f.Persistent
	cfg := p.o.Config
	p.mu.Lock()
	s := p.snap.Load()
	if rebuild {
		// A new epoch numbers from its own start: the old versions say
		// nothing of it.
		s = f.withoutStored(s)
		p.remote = 0
	}
	for _, c := range cs {
		if c.route {
			s = f.applyRoute(s, c)
			continue
		}
		if _, seeded := cfg.Sources[c.name]; seeded {
			f.warnSeeded("source", c.name, c.tenant)
			continue
		}
		cur := s.Lookup([]byte(c.name))
		if cur != nil && (cur.FromConfig || cur.Version >= c.version) {
			continue
		}
		if c.record == nil {
			if cur != nil {
				s = p.retire(s, c.name)
				fleetApplied.Inc()
			}
			continue
		}
		rec, spec, _, err := decodeSourceRecord(c.tenant, c.name, c.record, cfg.Dedupe.TTL, p.o.Keyring)
		if err != nil {
			fleetRefused.Inc()
			f.o.Log.Error("a source of the redis source store cannot be served by this node; it keeps its last form here", zap.Uint64("version", c.version), zap.Error(err))
			continue
		}
		src := Build(c.name, spec, int64(cfg.Limits.MaxBodyBytes), false)
		src.Created, src.Updated, src.Version = rec.Created, rec.Updated, c.version
		s = s.withSource(src)
		fleetApplied.Inc()
	}
	for _, c := range cs {
		p.remote = max(p.remote, c.version)
	}
	s = p.pruneRetired(s)
	p.snap.Store(s)
	lastPublished.Store(s)
	subs := p.subs
	p.mu.Unlock()
	for _, fn := range subs {
		fn(s)
	}
}

func (f *Fleet) applyRoute(s *Snapshot, c change) *Snapshot {
	cur := s.Route(c.tenant, c.name)
	if cur != nil && cur.FromConfig {
		f.warnSeeded("route", c.name, c.tenant)
		return s
	}
	if cur != nil && cur.Version >= c.version {
		return s
	}
	if c.record == nil {
		if cur != nil {
			fleetApplied.Inc()
			return s.withoutRoute(c.tenant, c.name)
		}
		return s
	}
	r, err := decodeRouteRecord(c.tenant, c.name, c.record)
	if err != nil {
		fleetRefused.Inc()
		f.o.Log.Error("a route of the redis source store cannot be served by this node; it keeps its last form here", zap.Uint64("version", c.version), zap.Error(err))
		return s
	}
	r.Version = c.version
	fleetApplied.Inc()
	return s.withRoute(r)
}

// withoutStored is s less every source and route of the store (the seeds
// stay): a rebuild starts from it. p.mu is held.
func (f *Fleet) withoutStored(s *Snapshot) *Snapshot {
	var names []string
	s.sources.Root().Walk(func(k []byte, src *Source) bool {
		if !src.FromConfig {
			names = append(names, src.Name)
		}
		return false
	})
	for _, n := range names {
		s = f.Persistent.retire(s, n)
	}
	var routes []*Route
	s.routes.Root().Walk(func(k []byte, r *Route) bool {
		if !r.FromConfig {
			routes = append(routes, r)
		}
		return false
	})
	for _, r := range routes {
		s = s.withoutRoute(r.TenantID, r.ID)
	}
	return s
}

func (f *Fleet) warnSeeded(kind, name, tenant string) {
	key := kind + "/" + tenant + "/" + name
	if f.warned[key] {
		return
	}
	f.warned[key] = true
	f.o.Log.Warn("an entity of the redis source store is hidden on this node by the config's one of the same name", zap.String("kind", kind), zap.String("name", name), zap.String("tenant", tenant))
}

// Commit sends a write to Redis (Backend): the change is recorded pending
// in the meta store (synced) first, then written by writeScript, then its
// audit row and event are written in place of the pending record. A write
// Redis refused leaves nothing; one whose answer was lost stays pending
// until the node can ask whether it happened (settlePending).
func (f *Fleet) Commit(ops []Op, audit meta.AuditRow) (uint64, error) {
	id := newChangeID()
	f.inflight.Store(id, struct{}{})
	defer f.inflight.Delete(id)
	b := f.o.Meta.NewBatch()
	b.PutPendingChange(meta.NewPendingChange(id, audit))
	err := b.Commit(meta.Sync)
	b.Close()
	if err != nil {
		return 0, err
	}
	fleetPending.Add(1)
	f.mu.Lock()
	epoch := f.state.Epoch
	f.mu.Unlock()
	keys := []string{f.k.ver, f.k.log, f.k.prefix + "w/" + id, f.k.epoch}
	args := []any{f.k.channel, markTTL, epoch}
	for _, op := range ops {
		kind, key, member := "", "", ""
		switch op.Kind {
		case PutSource, DeleteSource:
			member = sourceMember(op.Name)
			key, kind = f.k.prefix+member, "put"
		case PutRoute, DeleteRoute:
			member = routeMember(op.Tenant, op.Name)
			key, kind = f.k.prefix+member, "put"
		case ClaimToken:
			key, kind = f.k.prefix+"tok/"+op.Name, "claim"
		case FreeToken:
			key, kind = f.k.prefix+"tok/"+op.Name, "free"
		}
		if op.Kind == DeleteSource || op.Kind == DeleteRoute {
			kind = "del"
		}
		keys = append(keys, key)
		args = append(args, kind, op.Expect, member, string(op.Record), op.Tenant)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	res, err := writeScript.Run(ctx, f.o.Redis, keys, args...).StringSlice()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			f.dropPending(id) // Redis answered: the script did not write
		} else {
			// The answer was lost: the write may have happened. The
			// pending change stays until Redis says (settlePending).
			f.reconcile.Store(true)
		}
		f.noteRedis(err)
		return 0, fmt.Errorf("source_store.url %s: %v", f.o.Addr, err)
	}
	if len(res) < 2 {
		f.dropPending(id)
		return 0, fmt.Errorf("source_store.url %s: the write script answered %q", f.o.Addr, res)
	}
	switch res[0] {
	case "ok":
		v, err := strconv.ParseUint(res[1], 10, 64)
		if err != nil {
			f.reconcile.Store(true) // it happened: its mark says so
			return 0, fmt.Errorf("source_store.url %s: the write script answered version %q", f.o.Addr, res[1])
		}
		f.keepOwn(ops, v)
		f.settle(meta.NewPendingChange(id, audit), true)
		return v, nil
	case "epoch":
		f.dropPending(id)
		f.kickLoop()
		return 0, &Error{Code: CodeUnavailable, Message: fmt.Sprintf("source_store.namespace %q changed epoch (it was emptied or restored); the node is reloading it, try again", f.o.Namespace)}
	}
	f.dropPending(id)
	f.kickLoop()
	i, _ := strconv.Atoi(res[1])
	if i < 1 || i > len(ops) || len(res) < 3 {
		return 0, fmt.Errorf("source_store.url %s: the write script answered %q", f.o.Addr, res)
	}
	return 0, conflictError(res[0], ops[i-1], res[2])
}

// conflictError is the error of a write Redis refused: the entity changed
// on another node since this one checked the write.
func conflictError(answer string, op Op, current string) error {
	entity := "source"
	if op.Kind == PutRoute || op.Kind == DeleteRoute {
		entity = "route"
	}
	switch {
	case answer == "taken":
		return refuse(CodeTokenExists, "this token is taken; mint one with \"auto\"")
	case op.Expect == 0 && entity == "source":
		return refuse(CodeExists, "a source named %q exists (written by another node); source names are global", op.Name)
	case op.Expect == 0:
		return refuse(CodeRouteExists, "tenant %q has a route %q (written by another node)", op.Tenant, op.Name)
	case current == "0":
		return refuse(CodeNotFound, "no %s %q: another node removed it", entity, op.Name)
	}
	return refuse(CodeConflict, "%s %q changed on another node while this write was checked (it is at version %s, the write was checked against %d); read it again and retry", entity, op.Name, current, op.Expect)
}

// dropPending removes a pending change Redis did not apply.
func (f *Fleet) dropPending(id string) {
	b := f.o.Meta.NewBatch()
	defer b.Close()
	b.DeletePendingChange(id)
	if err := b.Commit(meta.NoSync); err != nil {
		f.reconcile.Store(true)
		f.o.Log.Error("cannot remove a pending source store change; it is settled at the next check", zap.String("change", id), zap.Error(err))
		return
	}
	fleetPending.Add(-1)
}

// settle turns a pending change into its audit row and event (happened)
// or removes it. A failure leaves it pending, for the next check.
func (f *Fleet) settle(pc meta.PendingChange, happened bool) {
	b := f.o.Meta.NewBatch()
	defer b.Close()
	if happened {
		if err := b.AddAudit(pc.Row()); err != nil {
			f.o.Log.Error("a pending source store change has no valid audit row; it is dropped", zap.String("change", pc.ID), zap.Error(err))
		}
	}
	b.DeletePendingChange(pc.ID)
	if err := b.Commit(meta.Sync); err != nil {
		f.reconcile.Store(true)
		f.o.Log.Error("cannot write the audit row of a source store change; it stays pending and is written at the next check", zap.String("change", pc.ID), zap.Error(err))
		return
	}
	fleetPending.Add(-1)
}

// settleAfter is how old a pending change must be before the node asks
// Redis whether it happened: a write whose answer was lost may still be
// on its way to Redis for a moment.
const settleAfter = 10 * time.Second

// settlePending settles the pending changes no write is still waiting on:
// each one's mark in Redis says whether it happened. It runs on Run's
// goroutine only (f.earlier is its own).
func (f *Fleet) settlePending(ctx context.Context) {
	f.reconcile.Store(false)
	var pending []meta.PendingChange
	err := f.o.Meta.PendingChanges(func(pc meta.PendingChange) error {
		if _, busy := f.inflight.Load(pc.ID); !busy {
			pending = append(pending, pc)
		}
		return nil
	})
	if err != nil {
		f.reconcile.Store(true)
		f.o.Log.Error("cannot read the pending source store changes", zap.Error(err))
		return
	}
	for _, pc := range pending {
		if !f.earlier[pc.ID] && time.Since(pc.Audit.At) < settleAfter {
			f.reconcile.Store(true)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, f.o.Timeout)
		n, err := f.o.Redis.Exists(cctx, f.k.prefix+"w/"+pc.ID).Result()
		cancel()
		if err != nil {
			f.reconcile.Store(true)
			return
		}
		f.settle(pc, n > 0)
		f.o.Log.Warn("settled a source store change whose answer was lost", zap.String("change", pc.ID), zap.String("entity", pc.Audit.Entity), zap.Bool("happened", n > 0))
	}
}

// Sources lists the mirrored sources (Backend).
func (f *Fleet) Sources(fn func(tenant, name string, record []byte) error) error {
	return f.o.Meta.Mirrored(meta.MirrorSource, func(tenant, name string, _ uint64, record []byte) error {
		if len(record) == 0 {
			return nil // a removal
		}
		return fn(tenant, name, record)
	})
}

// Routes lists the mirrored routes (Backend).
func (f *Fleet) Routes(fn func(tenant, id string, record []byte) error) error {
	return f.o.Meta.Mirrored(meta.MirrorRoute, func(tenant, id string, _ uint64, record []byte) error {
		if len(record) == 0 {
			return nil // a removal
		}
		return fn(tenant, id, record)
	})
}

func newEpoch() string    { return randomHex(8) }
func newChangeID() string { return randomHex(16) }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("BUG: source: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}
