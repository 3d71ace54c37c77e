package dispatch_test

// wal.type: none (DESIGN.md §2.4): Direct is the edge's commit step, so a
// hook is acknowledged only once its source's sinks took it and one of
// them is durable. The ingest answer 503 no_durable_sink cannot be reached
// through a config file (boot refuses such a source), so it is covered
// here, on Direct itself.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap/zaptest"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// directNode is the node ordinal the Direct tests run as.
const directNode = 7

// Sink specs of the Direct tests. mqSink is durable by its type (what
// config validation and Direct both read); httpSink is not.
var (
	mqSink = config.Sink{ID: "mq", Type: "rabbitmq", URL: "amqp://guest:guest@127.0.0.1:5672/", Exchange: "hooks",
		ConnectTimeout: config.Duration(50 * time.Millisecond), Timeout: config.Duration(150 * time.Millisecond)}
	httpSink = config.Sink{ID: "h", Type: "http", URL: "http://receiver.example/in",
		ConnectTimeout: config.Duration(50 * time.Millisecond), Timeout: config.Duration(150 * time.Millisecond)}
)

// directSources is a static store of shared sources with the given sinks.
func directSources(sinks map[string][]config.Sink) *source.Static {
	cfg := &config.Config{Sources: map[string]config.Source{}}
	for name, s := range sinks {
		cfg.Sources[name] = config.Source{TenantID: config.DefaultTenant, Verify: config.Verify{Type: "none"}, Sinks: slices.Clone(s)}
	}
	cfg.ApplyDefaults()
	return source.NewStatic(cfg)
}

// durableFake is the harness's fake sink that says its ok is durable, as
// the RabbitMQ sink does. A hook whose body holds "hang" blocks until the
// attempt's deadline.
type durableFake struct{ *fakeSink }

func (durableFake) Durable() bool { return true }

func (s durableFake) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	if bytes.Contains(d.Envelope.Body, []byte("hang")) {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.fakeSink.Deliver(ctx, d)
}

// seen is what a fake sink was handed: the envelope's identity at delivery
// time, which must already be the identity the 201 will carry.
type seen struct {
	seq uint64
	id  envelope.ID
	ord uint32
}

// directRig is a Direct over a meta store, with fake sinks that record
// the identity of every envelope they get.
type directRig struct {
	t       *testing.T
	fs      vfs.FS
	dir     string
	sources source.Store
	fk      *fakeSinks
	fail    map[string]string // sink id -> body marker that makes it fail
	badSink string            // NewSink refuses this sink id
	maxTen  int               // tenants.max (0: no cap)

	mu   sync.Mutex
	got  map[string][]seen // "<sink>/<body>" -> deliveries
	meta *meta.Store
	d    *dispatch.Direct
}

func newDirectRig(t *testing.T, fs vfs.FS, dir string, sources source.Store) *directRig {
	r := &directRig{t: t, fs: fs, dir: dir, sources: sources, fail: map[string]string{}, got: map[string][]seen{}}
	r.fk = newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		e := d.Envelope
		r.mu.Lock()
		k := sink + "/" + string(e.Body)
		r.got[k] = append(r.got[k], seen{e.Seq, e.ID, e.TenantOrdinal})
		marker := r.fail[sink]
		r.mu.Unlock()
		if marker != "" && bytes.Contains(e.Body, []byte(marker)) {
			return &dispatch.Error{Err: fmt.Errorf("fake sink %s refuses %q", sink, e.Body)}
		}
		return nil
	})
	r.open()
	return r
}

// open opens the meta store and a Direct on it.
func (r *directRig) open() {
	r.t.Helper()
	m, err := meta.Open(meta.Options{Dir: filepath.Join(r.dir, "meta"), FS: r.fs})
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := dispatch.OpenDirect(dispatch.DirectOptions{
		Meta:    m,
		Sources: r.sources,
		NewSink: func(src string, spec config.Sink) (dispatch.Sink, error) {
			if spec.ID == r.badSink {
				return nil, fmt.Errorf("fake: cannot build sink %s", spec.ID)
			}
			fs := r.fk.build(spec)
			if spec.Durable() {
				return durableFake{fs}, nil
			}
			return fs, nil
		},
		Node:       directNode,
		MaxTenants: r.maxTen,
		Logger:     zaptest.NewLogger(r.t),
	})
	if err != nil {
		m.Close()
		r.t.Fatal(err)
	}
	r.meta, r.d = m, d
}

// stop is SIGTERM: Direct records the numbering floor, then the store closes.
func (r *directRig) stop() {
	r.t.Helper()
	if err := r.d.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.meta.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// commit hands one hook of tenant to src through Direct; body identifies
// it. On success the request carries the hook's identity.
func (r *directRig) commit(tenant, src, body string) (seq uint64, id envelope.ID, ord uint32, err error) {
	e, err := commitHook(r.d.Commit, tenant, src, []byte(body))
	return e.Seq, e.ID, e.TenantOrdinal, err
}

// mustCommit commits and checks that every sink that is told about the
// hook saw the identity the request got back.
func (r *directRig) mustCommit(tenant, src, body string, sinks ...string) (uint64, envelope.ID, uint32) {
	r.t.Helper()
	seq, id, ord, err := r.commit(tenant, src, body)
	if err != nil {
		r.t.Fatalf("commit of %q (tenant %s, source %s): %v", body, tenant, src, err)
	}
	if seq == 0 || id.IsZero() {
		r.t.Fatalf("commit of %q succeeded without an identity: seq %d id %v", body, seq, id)
	}
	if id.Seq() != seq || id.Node() != directNode {
		r.t.Fatalf("commit of %q: id %v holds seq %d node %d, want seq %d node %d", body, id, id.Seq(), id.Node(), seq, directNode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range sinks {
		got := r.got[s+"/"+body]
		if len(got) != 1 || got[0] != (seen{seq, id, ord}) {
			r.t.Fatalf("commit of %q answered seq %d id %v ordinal %d; sink %s was handed %+v, want exactly that once", body, seq, id, ord, s, got)
		}
	}
	return seq, id, ord
}

func (r *directRig) attempts(sink, body string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[sink+"/"+body])
}

// A source without a durable sink is refused with ErrNoDurableSink (the
// edge's 503 no_durable_sink) and no sink is handed the hook; so is a
// source the store no longer has. A source with one commits.
func TestDirectRefusesSourceWithoutDurableSink(t *testing.T) {
	r := newDirectRig(t, vfs.Default, t.TempDir(), directSources(map[string][]config.Sink{
		"web":    {httpSink},
		"bare":   nil,
		"orders": {mqSink, httpSink},
	}))
	defer r.stop()
	for _, src := range []string{"web", "bare", "ghost"} {
		seq, id, _, err := r.commit("acme", src, "to-"+src)
		if !errors.Is(err, source.ErrNoDurableSink) {
			t.Fatalf("commit to source %q: %v, want an error wrapping source.ErrNoDurableSink", src, err)
		}
		if seq != 0 || !id.IsZero() {
			t.Fatalf("commit to source %q failed but the request carries seq %d id %v", src, seq, id)
		}
	}
	if n := r.fk.calls.Load(); n != 0 {
		t.Fatalf("%d sink deliveries for hooks of sources without a durable sink, want none", n)
	}
	seq, id, _ := r.mustCommit("acme", "orders", "to-orders", "mq", "h")
	t.Logf("web, bare and ghost refused with %q; orders committed as seq %d (%v)", source.ErrNoDurableSink, seq, id)
}

// Nothing is acknowledged unless every sink took the hook: a failing
// durable sink, a failing non-durable sink, a sink that does not answer
// before its timeout and a sink that cannot be built each fail the
// commit, and the request carries no identity.
func TestDirectFailingSinkFailsCommit(t *testing.T) {
	bad := mqSink
	bad.ID = "bad"
	r := newDirectRig(t, vfs.Default, t.TempDir(), directSources(map[string][]config.Sink{
		"orders": {mqSink, httpSink},
		"broken": {bad},
	}))
	defer r.stop()
	r.fail["mq"], r.fail["h"], r.badSink = "fail-mq", "fail-h", "bad"
	s1, _, _ := r.mustCommit("acme", "orders", "ok-1", "mq", "h")

	for _, c := range []struct {
		src, body, want string
		cause           error
	}{
		{"orders", "fail-mq", `sink mq of source "orders"`, nil},
		{"orders", "fail-h", `sink h of source "orders"`, nil},
		{"orders", "hang", `sink mq of source "orders"`, context.DeadlineExceeded},
		{"broken", "unbuildable", `cannot build sink bad of source "broken"`, nil},
	} {
		start := time.Now()
		seq, id, _, err := r.commit("acme", c.src, c.body)
		took := time.Since(start)
		switch {
		case err == nil:
			t.Fatalf("commit of %q succeeded (seq %d id %v), want an error", c.body, seq, id)
		case errors.Is(err, source.ErrNoDurableSink):
			t.Fatalf("commit of %q: %v, want a sink failure, not no_durable_sink", c.body, err)
		case !strings.Contains(err.Error(), c.want):
			t.Fatalf("commit of %q: %v, want it to name %s", c.body, err, c.want)
		case c.cause != nil && !errors.Is(err, c.cause):
			t.Fatalf("commit of %q: %v, want it to wrap %v", c.body, err, c.cause)
		case seq != 0 || !id.IsZero():
			t.Fatalf("commit of %q failed but the request carries seq %d id %v", c.body, seq, id)
		case took > 2*time.Second:
			t.Fatalf("commit of %q took %v; a sink's connect_timeout+timeout is 200ms", c.body, took)
		}
		t.Logf("%s: refused in %v: %v", c.body, took.Round(time.Millisecond), err)
	}
	// Every sink of the source was attempted (deliveries run side by side).
	if r.attempts("h", "fail-mq") != 1 || r.attempts("mq", "fail-h") != 1 {
		t.Fatalf("a failing sink stopped the other sink's attempt: h got fail-mq %d times, mq got fail-h %d times",
			r.attempts("h", "fail-mq"), r.attempts("mq", "fail-h"))
	}
	s2, _, _ := r.mustCommit("acme", "orders", "ok-2", "mq", "h")
	if s2 <= s1 {
		t.Fatalf("after the failures: seq %d, not above %d", s2, s1)
	}
}

// wal.type: none numbers with the commit loop's allocator (wal.Reserved
// over wal.Numbers, whose own tests hold numbering, ordinals and crashes),
// so tenants.max holds here too: a new tenant past it is ErrTenantLimit
// (the edge's 403 tenant_limit), nothing is delivered, and Direct's Close
// and reopen keep the tenants recorded.
func TestDirectTenantLimit(t *testing.T) {
	sources := directSources(map[string][]config.Sink{"orders": {mqSink}})
	dir := t.TempDir()
	r := &directRig{t: t, fs: vfs.Default, dir: dir, sources: sources, fail: map[string]string{}, got: map[string][]seen{}, maxTen: 2}
	r.fk = newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		k := sink + "/" + string(d.Envelope.Body)
		r.got[k] = append(r.got[k], seen{d.Envelope.Seq, d.Envelope.ID, d.Envelope.TenantOrdinal})
		return nil
	})
	r.open()
	r.mustCommit("acme", "orders", "one", "mq")
	r.mustCommit("globex", "orders", "two", "mq")
	if r.d.TenantsFull() != true {
		t.Fatal("TenantsFull is false with tenants.max tenants")
	}
	if _, _, _, err := r.commit("initech", "orders", "three"); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("a third tenant under tenants.max 2: %v, want wal.ErrTenantLimit", err)
	}
	if n := r.attempts("mq", "three"); n != 0 {
		t.Fatalf("the refused hook was delivered %d times", n)
	}
	r.mustCommit("acme", "orders", "four", "mq")
	r.stop()
	r.open()
	defer r.stop()
	if _, _, _, err := r.commit("initech", "orders", "five"); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("after a restart, a third tenant: %v, want wal.ErrTenantLimit", err)
	}
	if o, ok := r.d.Ordinal("globex"); !ok || o == 0 {
		t.Fatalf("Ordinal(globex) after a restart = %d, %v", o, ok)
	}
}
