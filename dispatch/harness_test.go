package dispatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// node is a WAL, meta store, segment store and dispatcher on one file
// system, wired as `ankusa serve` wires them.
type node struct {
	t     testing.TB
	fs    vfs.FS
	wal   *wal.WAL
	meta  *meta.Store
	store *segment.Store
	disp  atomic.Pointer[dispatch.Dispatcher]
	sinks *fakeSinks
	fatal chan error
	// sources is the node's source store; tests edit it as the admin API
	// would (set, then the dispatcher's SourcesChanged).
	sources *editSources
}

type nodeOptions struct {
	sinks       []config.Sink // the sinks of source "src" (defaults applied here)
	intakeBytes int64
	now         func() time.Time
	noDispatch  bool // open storage only
	// metaFS wraps the meta store's file system (fault injection); the
	// meta store's fatal errors go to the node's fatal channel with it.
	metaFS func(vfs.FS) vfs.FS
	// expectFatal: a stage's failure is what the test wants, not an error;
	// such a node is abandoned, not closed, so it logs nowhere.
	expectFatal bool
	// source edits the spec of source "src" (a verifier, dedupe).
	source func(*config.Source)
	// dedupeNode writes node-scope dedupe keys; maxPenBytes caps the pen.
	dedupeNode  bool
	maxPenBytes int64
	// newSink replaces the fake sinks (a real HTTP sink).
	newSink func(src string, spec config.Sink) (dispatch.Sink, error)
	// erased are the ordinals of erased tenants (Options.Erased).
	erased []uint32
	// logger replaces the test's logger (a test that reads the log).
	logger *zap.Logger
}

func openNode(t testing.TB, fs vfs.FS, fk *fakeSinks, o nodeOptions) *node {
	t.Helper()
	n := &node{t: t, fs: fs, sinks: fk, fatal: make(chan error, 4)}
	onFatal := func(err error) {
		if !o.expectFatal {
			t.Errorf("a stage failed: %v", err)
		}
		select {
		case n.fatal <- err:
		default:
		}
	}
	if err := vfsutil.MkdirAllSynced(fs, "data"); err != nil {
		t.Fatal(err)
	}
	mo := meta.Options{Dir: "data/meta", FS: fs}
	if o.metaFS != nil {
		mo.FS = o.metaFS(fs)
		// Fatalf must not return; the process would exit here, so the
		// goroutine stops for good and the test looks at what was told.
		mo.Fatalf = func(format string, args ...any) {
			onFatal(fmt.Errorf(format, args...))
			select {}
		}
	}
	m, err := meta.Open(mo)
	if err != nil {
		t.Fatal(err)
	}
	n.meta = m
	logger := zaptest.NewLogger(t)
	if o.expectFatal {
		logger = zap.NewNop()
	}
	if o.logger != nil {
		logger = o.logger
	}
	spec := config.Source{TenantID: config.DefaultTenant, Verify: config.Verify{Type: "none"}, Sinks: o.sinks}
	if o.source != nil {
		o.source(&spec)
	}
	sources := newEditSources(map[string]config.Source{"src": spec})
	n.sources = sources
	newSink := fk.newSink
	if o.newSink != nil {
		newSink = o.newSink
	}
	in := dispatch.NewIntake(dispatch.IntakeOptions{Sources: sources, MaxBytes: o.intakeBytes, DedupeNode: o.dedupeNode})
	w, err := wal.Open(wal.Options{
		FS: fs, Dir: "data/wal", Node: 3, MaxFileBytes: 1 << 20, Meta: m,
		OnDurable: in.Handoff,
		OnFatal:   onFatal,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.wal = w
	s, err := segment.Open(segment.Options{
		FS: fs, Dir: "data/segments", Log: w, Meta: m, MaxBytes: 256 << 10, MaxAge: 50 * time.Millisecond,
		Keeper:  m,
		OnFatal: onFatal,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.store = s
	if o.noDispatch {
		return n
	}
	d, err := dispatch.Open(dispatch.Options{
		Meta: m, Hooks: s, Sources: sources, Intake: in,
		NewSink:         newSink,
		Ordinal:         w.Ordinal,
		LastSeq:         w.LastSeq(),
		CheckpointEvery: 10 * time.Millisecond,
		Logger:          logger,
		Now:             o.now,
		OnFatal:         onFatal,
		MaxPenBytes:     o.maxPenBytes,
		Erased:          o.erased,
	})
	if err != nil {
		t.Fatal(err)
	}
	n.disp.Store(d)
	return n
}

func (n *node) close() {
	n.t.Helper()
	if d := n.disp.Load(); d != nil {
		if err := d.Close(); err != nil {
			n.t.Fatal(err)
		}
	}
	if err := n.store.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.wal.Close(); err != nil {
		n.t.Fatal(err)
	}
	if err := n.meta.Close(); err != nil {
		n.t.Fatal(err)
	}
	if m := meta.APIMisuses(); m != 0 {
		n.t.Fatalf("pebble reported %d misuses of the meta store (a due entry written twice before its single delete?)", m)
	}
	select {
	case err := <-n.fatal:
		n.t.Fatalf("a stage failed: %v", err)
	default:
	}
}

// commit commits one hook of tenant and returns its envelope.
func (n *node) commit(tenant string, i int) envelope.Envelope {
	n.t.Helper()
	e, err := commitHook(n.wal.Commit, tenant, "src", fmt.Appendf(nil, `{"i":%d,"tenant":%q}`, i, tenant))
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

// commitHook hands commit (the WAL's, or Direct's) a request holding a
// JSON hook of tenant to source src with body, as the ingest path seals
// it, and returns the envelope with the identity the request got back
// (set also when commit fails).
func commitHook(commit func(*wal.Request) error, tenant, src string, body []byte) (envelope.Envelope, error) {
	return commitEnvelope(commit, envelope.Envelope{
		TenantID: tenant, SourceID: src, ReceivedAt: time.Now().UnixNano(),
		Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}},
		Body:         body,
		Verification: envelope.Verification{Verifier: "none"},
	})
}

// commitEnvelope commits e as the ingest path does and returns it with
// the identity it got.
func commitEnvelope(commit func(*wal.Request) error, e envelope.Envelope) (envelope.Envelope, error) {
	req := wal.AcquireRequest()
	defer wal.ReleaseRequest(req)
	req.Buf = e.AppendTo(req.Buf)
	wal.SealPayload(req.Buf)
	err := commit(req)
	e.Seq, e.ID, e.TenantOrdinal = req.Seq, req.ID, req.Ordinal
	return e, err
}

// commitMany commits count hooks over tenants from workers goroutines.
func (n *node) commitMany(count, workers int, tenant func(i int) string) []envelope.Envelope {
	out := make([]envelope.Envelope, count)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				out[i] = n.commit(tenant(i), i)
			}
		}()
	}
	wg.Wait()
	return out
}

// editSources is a source store whose snapshot a test replaces, as the
// persistent store does on an admin write.
type editSources struct {
	p atomic.Pointer[source.Snapshot]
}

func newEditSources(specs map[string]config.Source) *editSources {
	s := &editSources{}
	s.set(specs)
	return s
}

func (s *editSources) Snapshot() *source.Snapshot { return s.p.Load() }

// set publishes a snapshot of specs (config defaults applied, sink ids
// derived as at load).
func (s *editSources) set(specs map[string]config.Source) {
	cfg := &config.Config{Sources: map[string]config.Source{}}
	for name, spec := range specs {
		spec.Sinks = slices.Clone(spec.Sinks)
		cfg.Sources[name] = spec
	}
	cfg.ApplyDefaults()
	s.p.Store(source.NewSnapshot(cfg.Sources, nil, int64(cfg.Limits.MaxBodyBytes)))
}

// fakeSinks records every attempt; behave decides each outcome.
type fakeSinks struct {
	mu       sync.Mutex
	got      map[string]int // "<sink>/<event id>" -> successful deliveries
	attempts map[string]int // "<sink>/<event id>" -> attempts
	at       map[string][]time.Time
	urls     map[string][]string // "<sink>/<event id>" -> the spec's URL of each attempt
	built    map[string]int      // sink id -> sinks built
	closed   map[string]int      // sink id -> Close calls
	behave   func(sink string, d *dispatch.Delivery) error
	ok       atomic.Int64
	calls    atomic.Int64
}

func newFakeSinks(behave func(sink string, d *dispatch.Delivery) error) *fakeSinks {
	return &fakeSinks{got: map[string]int{}, attempts: map[string]int{}, at: map[string][]time.Time{}, urls: map[string][]string{},
		built: map[string]int{}, closed: map[string]int{}, behave: behave}
}

func (f *fakeSinks) newSink(src string, spec config.Sink) (dispatch.Sink, error) {
	return f.build(spec), nil
}

func (f *fakeSinks) build(spec config.Sink) *fakeSink {
	f.mu.Lock()
	f.built[spec.ID]++
	f.mu.Unlock()
	return &fakeSink{f: f, id: spec.ID, url: spec.URL}
}

// builds and closes count the sinks built and closed for a sink id.
func (f *fakeSinks) builds(sink string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.built[sink]
}

func (f *fakeSinks) closes(sink string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed[sink]
}

func (f *fakeSinks) urlsOf(sink string, id envelope.ID) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.urls[sink+"/"+id.String()])
}

func (f *fakeSinks) delivered(sink string, id envelope.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[sink+"/"+id.String()]
}

func (f *fakeSinks) attemptsOf(sink string, id envelope.ID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[sink+"/"+id.String()]
}

func (f *fakeSinks) times(sink string, id envelope.ID) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at[sink+"/"+id.String()]...)
}

type fakeSink struct {
	f   *fakeSinks
	id  string
	url string // the spec's
}

func (s *fakeSink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	s.f.calls.Add(1)
	k := s.id + "/" + d.Envelope.ID.String()
	s.f.mu.Lock()
	s.f.attempts[k]++
	s.f.at[k] = append(s.f.at[k], time.Now())
	s.f.urls[k] = append(s.f.urls[k], s.url)
	s.f.mu.Unlock()
	var err error
	if s.f.behave != nil {
		err = s.f.behave(s.id, d)
	}
	if err == nil {
		s.f.mu.Lock()
		s.f.got[k]++
		s.f.mu.Unlock()
		s.f.ok.Add(1)
	}
	return err
}

func (s *fakeSink) Durable() bool { return false }
func (s *fakeSink) Close() error {
	s.f.mu.Lock()
	s.f.closed[s.id]++
	s.f.mu.Unlock()
	return nil
}

// Target makes the tenant the breaker's target, as a URL template over
// the tenant would.
func (s *fakeSink) Target(e *envelope.Envelope) string { return e.TenantID }

// twoSinks are the sinks of most tests.
func twoSinks(mod func(*config.Sink)) []config.Sink {
	out := []config.Sink{
		{ID: "a", Type: "http", URL: "http://a.example/in", RetryBase: config.Duration(10 * time.Millisecond), RetryMax: config.Duration(50 * time.Millisecond)},
		{ID: "b", Type: "http", URL: "http://b.example/in", RetryBase: config.Duration(10 * time.Millisecond), RetryMax: config.Duration(50 * time.Millisecond)},
	}
	for i := range out {
		if mod != nil {
			mod(&out[i])
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
