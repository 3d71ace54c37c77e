package source

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// Backend keeps a writable store's records: the node's meta store
// (MetaBackend), or a shared one. Commit makes ops durable together with
// the audit row, in one synced write; concurrent commits may be grouped
// by the backend, and the store calls Commit from many goroutines at once.
type Backend interface {
	Sources(fn func(tenant, name string, record []byte) error) error
	Routes(fn func(tenant, id string, record []byte) error) error
	Commit(ops []Op, audit meta.AuditRow) error
}

// OpKind says what an Op writes.
type OpKind uint8

// The kinds of Op.
const (
	PutSource OpKind = iota
	DeleteSource
	PutRoute
	DeleteRoute
)

// Op is one record write of a Commit: a source's (Name) or a route's
// (Name is its id) record of Tenant; Record is empty for a removal.
type Op struct {
	Kind   OpKind
	Tenant string
	Name   string
	Record []byte
}

// MetaBackend keeps the records in the node's meta store (source_store:
// persistent): one synced key per source and per route.
type MetaBackend struct{ Store *meta.Store }

// Sources lists the stored sources.
func (m MetaBackend) Sources(fn func(tenant, name string, record []byte) error) error {
	return m.Store.Sources(fn)
}

// Routes lists the stored routes.
func (m MetaBackend) Routes(fn func(tenant, id string, record []byte) error) error {
	return m.Store.Routes(fn)
}

// Commit writes ops and the audit row, with its lifecycle event, in one
// synced batch; the meta store's outbox committer groups concurrent ones
// into one log sync.
func (m MetaBackend) Commit(ops []Op, audit meta.AuditRow) error {
	b := m.Store.NewBatch()
	defer b.Close()
	for _, op := range ops {
		switch op.Kind {
		case PutSource:
			b.PutSource(op.Tenant, op.Name, op.Record)
		case DeleteSource:
			b.DeleteSource(op.Tenant, op.Name)
		case PutRoute:
			b.PutRoute(op.Tenant, op.Name, op.Record)
		case DeleteRoute:
			b.DeleteRoute(op.Tenant, op.Name)
		}
	}
	if err := b.AddAudit(audit); err != nil {
		return err
	}
	return b.Commit(meta.Sync)
}

// PersistentOptions configure a writable store.
type PersistentOptions struct {
	// Config gives the seeds (sources:, routes.table), the node's body
	// bound and the dedupe ttl default.
	Config *config.Config
	// Context is what a written source is validated against: the same
	// rules as the file's (config.ValidateSource).
	Context config.SourceContext
	Backend Backend
	// Now stamps records and audit rows; nil: time.Now.
	Now func() time.Time
}

// Persistent is a writable store (source_store: persistent, and the
// shape of redis): the config's sources and routes as seeds, plus those
// written through the admin API, each one record in the backend. A write
// is durable before its snapshot is published, and publishing it is one
// pointer swap of a snapshot that shares everything it did not change.
type Persistent struct {
	o    PersistentOptions
	snap atomic.Pointer[Snapshot]

	mu      sync.Mutex
	busy    map[string]chan struct{} // entities with a write in flight
	subs    []func(*Snapshot)
	retired []retiredSource // oldest first
}

// RetiredFor is how long a removed source stays in LookupForDelivery: far
// longer than a hook takes from the edge's lookup to its commit.
const RetiredFor = 10 * time.Minute

type retiredSource struct {
	src *Source
	at  time.Time
}

// OpenPersistent loads the seeds and every stored record. A record that
// does not decode stops it, naming the record; a stored source that fails
// today's rules keeps serving, and is named in the warnings (saving it
// again needs the fix), as is a stored source that a seed of the same name
// hides.
func OpenPersistent(o PersistentOptions) (p *Persistent, warnings []string, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg := o.Config
	p = &Persistent{o: o, busy: map[string]chan struct{}{}}
	snap := NewSnapshot(cfg.Sources, cfg.Routes.Table, int64(cfg.Limits.MaxBodyBytes))
	st, ot := snap.sources.Txn(), snap.owned.Txn()
	err = o.Backend.Sources(func(tenant, name string, v []byte) error {
		rec, spec, err := decodeSourceRecord(tenant, name, v, cfg.Dedupe.TTL)
		if err != nil {
			return err
		}
		if _, seeded := cfg.Sources[name]; seeded {
			warnings = append(warnings, fmt.Sprintf("stored source %q of tenant %q is hidden by the config's source of the same name", name, tenant))
			return nil
		}
		if probs := config.ValidateSource(name, &spec, o.Context); len(probs) > 0 {
			warnings = append(warnings, fmt.Sprintf("stored source %q of tenant %q fails today's rules and keeps serving as it is; saving it again needs the fix: %v", name, tenant, probs))
		}
		src := Build(name, spec, int64(cfg.Limits.MaxBodyBytes), false)
		src.Created, src.Updated = rec.Created, rec.Updated
		st.Insert([]byte(name), src)
		ot.Insert(ownedKey(tenant, name), src)
		if src.Dedupe != nil {
			snap.dedupe++
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load the stored sources: %w", err)
	}
	snap.sources, snap.owned = st.Commit(), ot.Commit()
	err = o.Backend.Routes(func(tenant, id string, v []byte) error {
		r, err := decodeRouteRecord(tenant, id, v)
		if err != nil {
			return err
		}
		if snap.Route(tenant, id) != nil {
			warnings = append(warnings, fmt.Sprintf("stored route %q of tenant %q is hidden by the config's route of the same id", id, tenant))
			return nil
		}
		snap = snap.withRoute(r)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load the stored routes: %w", err)
	}
	p.snap.Store(snap)
	lastPublished.Store(snap)
	return p, warnings, nil
}

// Snapshot returns the current snapshot.
func (p *Persistent) Snapshot() *Snapshot { return p.snap.Load() }

// OnPublish calls fn with every snapshot a write publishes, after it is
// published (dispatch follows source edits this way). fn must not write
// to the store.
func (p *Persistent) OnPublish(fn func(*Snapshot)) {
	p.mu.Lock()
	p.subs = append(p.subs, fn)
	p.mu.Unlock()
}

// reserve marks entities as being written, waiting for a write in flight
// on any of them to finish first. release publishes the result of the
// write (change, unless nil), tells the subscribers, runs after (unless
// nil) while the entities are still reserved, and frees them.
func (p *Persistent) reserve(keys ...string) (release func(change func(*Snapshot) *Snapshot, after func())) {
	sort.Strings(keys)
	for {
		p.mu.Lock()
		var wait chan struct{}
		for _, k := range keys {
			if ch, ok := p.busy[k]; ok {
				wait = ch
				break
			}
		}
		if wait == nil {
			ch := make(chan struct{})
			for _, k := range keys {
				p.busy[k] = ch
			}
			p.mu.Unlock()
			return func(change func(*Snapshot) *Snapshot, after func()) { p.release(keys, ch, change, after) }
		}
		p.mu.Unlock()
		<-wait
	}
}

func (p *Persistent) release(keys []string, ch chan struct{}, change func(*Snapshot) *Snapshot, after func()) {
	p.mu.Lock()
	var published *Snapshot
	if change != nil {
		published = p.pruneRetired(change(p.snap.Load()))
		p.snap.Store(published)
		lastPublished.Store(published)
	}
	subs := p.subs
	p.mu.Unlock()
	if published != nil {
		for _, fn := range subs {
			fn(published)
		}
	}
	if after != nil {
		after()
	}
	p.mu.Lock()
	for _, k := range keys {
		delete(p.busy, k)
	}
	close(ch)
	p.mu.Unlock()
}

// pruneRetired forgets the sources retired more than RetiredFor ago;
// p.mu is held.
func (p *Persistent) pruneRetired(s *Snapshot) *Snapshot {
	now := p.o.Now()
	for len(p.retired) > 0 && now.Sub(p.retired[0].at) > RetiredFor {
		s = s.withoutRetired(p.retired[0].src.Name, p.retired[0].src)
		p.retired = p.retired[1:]
	}
	return s
}

// Error is a write the store refused, with the admin API's error code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// The codes of Error (DESIGN.md §2.10).
const (
	CodeReadOnly     = "source_store_read_only"
	CodeFromConfig   = "source_from_config"
	CodeExists       = "source_exists"
	CodeInvalid      = "invalid_source"
	CodeNotFound     = "not_found"
	CodeRouteExists  = "route_exists"
	CodeTokenExists  = "token_exists"
	CodeInvalidRoute = "invalid_route"
	CodeUnavailable  = "source_store_unavailable"
)

func refuse(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrReadOnly is what the static store answers every write.
var ErrReadOnly = &Error{Code: CodeReadOnly, Message: "source_store.type is static: sources come from the config file only; use source_store: {type: persistent} to manage them through the API"}

// unavailable wraps a backend's failure.
func unavailable(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: CodeUnavailable, Message: "the source store cannot write: " + err.Error()}
}

// The store's metrics: writes by entity and outcome (ok; refused: the
// write was invalid or conflicted; failed: the backend could not commit
// it), and the snapshot's size.
var (
	writeOutcomes = map[string]*metrics.Counter{}
	_             = metrics.NewGauge(`ankusa_source_store_sources`, func() float64 { return float64(gaugeSnap().Len()) })
	_             = metrics.NewGauge(`ankusa_source_store_routes`, func() float64 { return float64(gaugeSnap().RouteCount()) })
	lastPublished atomic.Pointer[Snapshot]
)

func init() {
	for _, kind := range []string{"source", "route"} {
		for _, outcome := range []string{"ok", "refused", "failed"} {
			writeOutcomes[kind+"/"+outcome] = metrics.NewCounter(`ankusa_source_store_writes_total{entity="` + kind + `",outcome="` + outcome + `"}`)
		}
	}
}

// gaugeSnap is the snapshot the store published last (an empty one before).
func gaugeSnap() *Snapshot {
	if s := lastPublished.Load(); s != nil {
		return s
	}
	return emptySnapshot()
}

// counted counts a write of kind (source, route) by its outcome and
// returns err as it is.
func counted(kind string, err error) error {
	outcome := "ok"
	var e *Error
	switch {
	case errors.As(err, &e) && e.Code == CodeUnavailable:
		outcome = "failed"
	case err != nil:
		outcome = "refused"
	}
	writeOutcomes[kind+"/"+outcome].Inc()
	return err
}
