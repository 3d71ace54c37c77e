package source

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
)

// Backend keeps a writable store's records: the node's meta store
// (MetaBackend), or the fleet's Redis (the redis store, fleet.go). Commit
// makes ops durable together with the audit row; concurrent commits may
// be grouped by the backend, and the store calls Commit from many
// goroutines at once. A shared backend checks each op's Expect against
// the entity's version in the shared store and refuses the whole commit
// (*Error, CodeConflict, CodeExists, CodeNotFound or CodeTokenExists)
// when another node changed it first; it returns the version the commit
// gave its entities (0 for a node-local backend, which has none).
type Backend interface {
	Sources(fn func(tenant, name string, record []byte) error) error
	Routes(fn func(tenant, id string, record []byte) error) error
	Commit(ops []Op, audit meta.AuditRow) (version uint64, err error)
}

// OpKind says what an Op writes.
type OpKind uint8

// The kinds of Op.
const (
	PutSource OpKind = iota
	DeleteSource
	PutRoute
	DeleteRoute
	// ClaimToken takes a route token's digest (Name, hex) for the route
	// Tenant/Record names, refused when another route holds it;
	// FreeToken gives it back. A node-local backend ignores both: the
	// node's snapshot is the whole truth there.
	ClaimToken
	FreeToken
)

// Op is one record write of a Commit: a source's (Name) or a route's
// (Name is its id) record of Tenant; Record is empty for a removal.
// Expect is the entity's version the write was checked against (0: the
// entity did not exist), for a shared backend.
type Op struct {
	Kind   OpKind
	Tenant string
	Name   string
	Record []byte
	Expect uint64
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
func (m MetaBackend) Commit(ops []Op, audit meta.AuditRow) (uint64, error) {
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
		return 0, err
	}
	return 0, b.Commit(meta.Sync)
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
	// BeforeWrite, when not nil, runs at the start of every write, before
	// it is checked against the snapshot: the redis store catches up with
	// the shared store there, and refuses the write (its error, as it is)
	// when Redis does not answer.
	BeforeWrite func() error
	// Keyring seals the secrets of the records the store writes and opens
	// them when it reads (nil or not enabled: they rest in clear).
	Keyring *secrets.Keyring
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
	// remote is the shared store's version the snapshot holds every
	// change up to (the redis store; 0 otherwise): a write of this node
	// at or below it is in the snapshot already, or something newer is.
	remote uint64
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
	l := newLoader(&o)
	if err := o.Backend.Sources(func(tenant, name string, v []byte) error { return l.source(tenant, name, 0, v) }); err != nil {
		return nil, nil, fmt.Errorf("cannot load the stored sources: %w", err)
	}
	l.sourcesDone()
	if err := o.Backend.Routes(func(tenant, id string, v []byte) error { return l.route(tenant, id, 0, v) }); err != nil {
		return nil, nil, fmt.Errorf("cannot load the stored routes: %w", err)
	}
	snap, warnings := l.finish()
	return newPersistent(o, snap), warnings, nil
}

// newPersistent is a store of o publishing snap.
func newPersistent(o PersistentOptions, snap *Snapshot) *Persistent {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Persistent{o: o, busy: map[string]chan struct{}{}}
	p.snap.Store(snap)
	lastPublished.Store(snap)
	return p
}

// loader builds a writable store's first snapshot: the config's seeds,
// then every stored source, then every stored route.
type loader struct {
	o        *PersistentOptions
	snap     *Snapshot
	st, ot   *iradix.Txn[*Source]
	warnings []string
	// clear counts the stored sources holding secrets in clear while a
	// KEK is set, and their secrets.
	clearSources, clearSecrets int
}

func newLoader(o *PersistentOptions) *loader {
	cfg := o.Config
	snap := NewSnapshot(cfg.Sources, cfg.Routes.Table, int64(cfg.Limits.MaxBodyBytes))
	return &loader{o: o, snap: snap, st: snap.sources.Txn(), ot: snap.owned.Txn()}
}

// source adds a stored source record at the shared store's version (0 for
// a node-local store). A record that does not decode, or whose sealed
// secrets no configured key opens, is an error naming it.
func (l *loader) source(tenant, name string, version uint64, v []byte) error {
	cfg := l.o.Config
	rec, spec, st, err := decodeSourceRecord(tenant, name, v, cfg.Dedupe.TTL, l.o.Keyring)
	if err != nil {
		return err
	}
	if st.Clear > 0 && l.o.Keyring.Enabled() {
		l.clearSources++
		l.clearSecrets += st.Clear
	}
	if _, seeded := cfg.Sources[name]; seeded {
		l.warnings = append(l.warnings, fmt.Sprintf("stored source %q of tenant %q is hidden by the config's source of the same name", name, tenant))
		return nil
	}
	if probs := config.ValidateSource(name, &spec, l.o.Context); len(probs) > 0 {
		l.warnings = append(l.warnings, fmt.Sprintf("stored source %q of tenant %q fails today's rules and keeps serving as it is; saving it again needs the fix: %v", name, tenant, probs))
	}
	src := Build(name, spec, int64(cfg.Limits.MaxBodyBytes), false)
	src.Created, src.Updated, src.Version = rec.Created, rec.Updated, version
	l.st.Insert([]byte(name), src)
	l.ot.Insert(ownedKey(tenant, name), src)
	if src.Dedupe != nil {
		l.snap.dedupe++
	}
	return nil
}

// sourcesDone ends the sources: routes follow.
func (l *loader) sourcesDone() {
	l.snap.sources, l.snap.owned = l.st.Commit(), l.ot.Commit()
}

// route adds a stored route record at the shared store's version.
func (l *loader) route(tenant, id string, version uint64, v []byte) error {
	r, err := decodeRouteRecord(tenant, id, v)
	if err != nil {
		return err
	}
	if l.snap.Route(tenant, id) != nil {
		l.warnings = append(l.warnings, fmt.Sprintf("stored route %q of tenant %q is hidden by the config's route of the same id", id, tenant))
		return nil
	}
	r.Version = version
	l.snap = l.snap.withRoute(r)
	return nil
}

// finish returns the snapshot and the warnings: those of the records, and
// how many secrets rest in clear while a KEK is set.
func (l *loader) finish() (*Snapshot, []string) {
	if l.clearSources > 0 {
		l.warnings = append(l.warnings, fmt.Sprintf("%d stored sources hold %d secrets in clear although secrets.kek is set; each is sealed at its next write, and `ankusa rewrap` seals them all now", l.clearSources, l.clearSecrets))
	}
	return l.snap, l.warnings
}

// Snapshot returns the current snapshot.
func (p *Persistent) Snapshot() *Snapshot { return p.snap.Load() }

// beforeWrite runs the store's BeforeWrite hook.
func (p *Persistent) beforeWrite() error {
	if p.o.BeforeWrite == nil {
		return nil
	}
	return p.o.BeforeWrite()
}

// ifNewer is change, unless the shared store's changes the snapshot
// holds already reach version (the write is there, or a later one of the
// same entity is); p.mu is held when it runs. A node-local store's
// writes have version 0 and always apply.
func (p *Persistent) ifNewer(version uint64, change func(*Snapshot) *Snapshot) func(*Snapshot) *Snapshot {
	return func(s *Snapshot) *Snapshot {
		if version != 0 && version <= p.remote {
			return s
		}
		return change(s)
	}
}

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
	CodeConflict     = "conflict"
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
