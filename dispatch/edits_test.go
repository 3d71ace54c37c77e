package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/sink/httpsink"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// Source edits at runtime (issue 15): dispatch follows the snapshot.

// srcSpec is source "src" (shared, no verifier) with sinks.
func srcSpec(sinks []config.Sink) config.Source {
	return config.Source{TenantID: config.DefaultTenant, Verify: config.Verify{Type: "none"}, Sinks: sinks}
}

// fastSinks are sinks a and b retrying every few ms, up to many attempts.
func fastSinks(urlA, urlB string) []config.Sink {
	s := twoSinks(func(s *config.Sink) { s.MaxAttempts = 1000; s.RetryMax = config.Duration(20 * time.Millisecond) })
	s[0].URL, s[1].URL = urlA, urlB
	return s
}

// An edited sink URL is used for the next attempt of every pending hook,
// retries and first attempts alike, through a real HTTP sink: the old
// receiver never answers 2xx, so each hook is delivered only if dispatch
// moves to the new one.
func TestEditedSinkURLTakesTheNextAttempt(t *testing.T) {
	var oldHits, newHits atomic.Int64
	var mu sync.Mutex
	gotNew := map[string]int{}
	oldSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oldHits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer oldSrv.Close()
	newSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		newHits.Add(1)
		mu.Lock()
		gotNew[r.Header.Get("x-ankusa-event-id")]++
		mu.Unlock()
	}))
	defer newSrv.Close()
	sinks := func(url string) []config.Sink {
		s := fastSinks(url, "")[:1]
		s[0].AllowPrivate, s[0].ID = true, "a"
		return s
	}
	var built atomic.Int64
	n := openNode(t, vfs.NewMem(), nil, nodeOptions{
		sinks: sinks(oldSrv.URL + "/in"),
		newSink: func(src string, spec config.Sink) (dispatch.Sink, error) {
			built.Add(1)
			return httpsink.New(httpsink.Options{Spec: spec, Source: src})
		},
	})
	defer n.close()
	const count = 20
	hooks := n.commitMany(count, 4, func(i int) string { return fmt.Sprintf("t%d", i%3) })
	waitFor(t, 10*time.Second, "every hook tried at the old receiver", func() bool { return oldHits.Load() >= 2*count })
	n.sources.set(map[string]config.Source{"src": srcSpec(sinks(newSrv.URL + "/in"))})
	n.disp.Load().SourcesChanged()
	late := n.commitMany(5, 1, func(int) string { return "t9" }) // first attempts after the edit
	waitFor(t, 10*time.Second, "every hook at the new receiver", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(gotNew) == count+len(late)
	})
	for _, e := range append(hooks, late...) {
		mu.Lock()
		got := gotNew[e.ID.String()]
		mu.Unlock()
		if got != 1 {
			t.Errorf("hook %s reached the new receiver %d times, want 1", e.ID, got)
		}
	}
	if b := built.Load(); b != 2 {
		t.Errorf("%d sinks built, want 2 (one per spec)", b)
	}
	// The receiver answers before the row is deleted.
	waitFor(t, 5*time.Second, "no backlog", func() bool {
		backlog, err := n.disp.Load().SourceBacklog("src", nil)
		return err == nil && backlog == 0
	})
}

// An edit to another sink of the source, or to another source, keeps a
// sink's runner (no new sink, no Close); the edited sink's runner is
// replaced and its old sink closed; every attempt after the edit uses the
// new URL.
func TestUnrelatedEditKeepsTheRunner(t *testing.T) {
	var fixed atomic.Bool
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if sink == "b" && !fixed.Load() {
			return &dispatch.Error{Status: 503, Err: errors.New("down")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: fastSinks("http://a.example/in", "http://b.example/v1")})
	defer n.close()
	d := n.disp.Load()
	hooks := n.commitMany(10, 2, func(int) string { return "acme" })
	waitFor(t, 10*time.Second, "sink a delivered, b tried twice", func() bool {
		return fk.ok.Load() == 10 && fk.attemptsOf("b", hooks[9].ID) >= 2
	})
	other := srcSpec(fastSinks("http://other.example/in", "http://other.example/b"))
	specs := map[string]config.Source{"src": srcSpec(fastSinks("http://a.example/in", "http://b.example/v1")), "other": other}
	n.sources.set(specs) // another source added, src's pointer new, nothing changed
	d.SourcesChanged()
	other.Sinks[0].URL = "http://other.example/v2"
	specs["other"] = other
	n.sources.set(specs)
	d.SourcesChanged()
	time.Sleep(50 * time.Millisecond) // let retries run through the kept runners
	if fk.builds("a") != 1 || fk.builds("b") != 1 || fk.closes("a") != 0 || fk.closes("b") != 0 {
		t.Fatalf("after unrelated edits: builds a=%d b=%d closes a=%d b=%d; want 1 1 0 0",
			fk.builds("a"), fk.builds("b"), fk.closes("a"), fk.closes("b"))
	}
	specs["src"] = srcSpec(fastSinks("http://a.example/in", "http://b.example/v2"))
	n.sources.set(specs)
	edited := time.Now()
	d.SourcesChanged()
	// b's receiver comes back only once the old runner is closed: an
	// attempt it had in flight at the edit could otherwise succeed at the
	// old URL, which is allowed (it started before the edit).
	waitFor(t, 5*time.Second, "b's old sink closed", func() bool { return fk.closes("b") == 1 })
	fixed.Store(true)
	waitFor(t, 10*time.Second, "every hook at b", func() bool { return fk.ok.Load() == 20 })
	if fk.builds("a") != 1 || fk.closes("a") != 0 || fk.builds("b") != 2 {
		t.Fatalf("after editing b: builds a=%d b=%d closes a=%d; want 1 2 0", fk.builds("a"), fk.builds("b"), fk.closes("a"))
	}
	for _, e := range hooks {
		urls, at := fk.urlsOf("b", e.ID), fk.times("b", e.ID)
		if urls[len(urls)-1] != "http://b.example/v2" {
			t.Errorf("hook %s: delivered to %s, want the new URL", e.ID, urls[len(urls)-1])
		}
		for i, u := range urls {
			// An attempt already past its check when the edit came may
			// still reach the old URL, a moment after.
			if u == "http://b.example/v1" && at[i].After(edited.Add(20*time.Millisecond)) {
				t.Errorf("hook %s: attempt %d went to the old URL %v after the edit", e.ID, i+1, at[i].Sub(edited))
			}
		}
	}
}

// A deleted source's runners are closed, and its pending rows are dead
// letters naming the source, with an attempt log entry; a sink removed by
// an edit likewise. Neither is retried again.
func TestGoneSourceAndSinkRowsAreDeadLettered(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Status: 503, Err: errors.New("down")}
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: fastSinks("http://a.example/in", "http://b.example/in")})
	defer n.close()
	d := n.disp.Load()
	hooks := n.commitMany(6, 2, func(i int) string { return []string{"acme", "beta"}[i%2] })
	waitFor(t, 10*time.Second, "every hook tried twice", func() bool {
		for _, e := range hooks {
			if fk.attemptsOf("a", e.ID) < 2 || fk.attemptsOf("b", e.ID) < 2 {
				return false
			}
		}
		return true
	})
	// A PUT that removes sink b.
	n.sources.set(map[string]config.Source{"src": srcSpec(fastSinks("http://a.example/in", "")[:1])})
	d.SourcesChanged()
	waitFor(t, 5*time.Second, "b's runner closed", func() bool { return fk.closes("b") == 1 })
	waitFor(t, 5*time.Second, "b's rows dead", func() bool { return deadCount(t, d, "b") == 6 })
	checkDead(t, d, hooks, "b", `sink "b" is no longer a sink of source "src"`)
	// The source deleted.
	n.sources.set(map[string]config.Source{})
	d.SourcesChanged()
	waitFor(t, 5*time.Second, "a's runner closed", func() bool { return fk.closes("a") == 1 })
	waitFor(t, 5*time.Second, "a's rows dead", func() bool { return deadCount(t, d, "a") == 6 })
	checkDead(t, d, hooks, "a", `source "src" no longer exists (sink "a")`)
	calls := fk.calls.Load()
	time.Sleep(100 * time.Millisecond)
	if got := fk.calls.Load(); got != calls {
		t.Fatalf("%d attempts after the rows were dead, want none", got-calls)
	}
	if backlog, err := d.SourceBacklog("src", nil); err != nil || backlog != 0 {
		t.Fatalf("SourceBacklog = %d, %v; want 0", backlog, err)
	}
}

// deadCount is the dead letters of sink over tenants acme and beta.
func deadCount(t *testing.T, d *dispatch.Dispatcher, sink string) int {
	n := 0
	for _, tenant := range []string{"acme", "beta"} {
		rows, _, err := d.Dead(context.Background(), tenant, dispatch.Filter{}, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Sink == sink {
				n++
			}
		}
	}
	return n
}

// checkDead wants every hook's row of sink dead with reason, and the
// reason as the last entry of its attempt log.
func checkDead(t *testing.T, d *dispatch.Dispatcher, hooks []envelope.Envelope, sink, reason string) {
	t.Helper()
	for _, e := range hooks {
		rows, _, err := d.Dead(context.Background(), e.TenantID, dispatch.Filter{}, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rows {
			if r.EventID == e.ID && r.Sink == sink {
				found = true
				if r.LastError != reason {
					t.Errorf("hook %s sink %s: dead with %q, want %q", e.ID, sink, r.LastError, reason)
				}
			}
		}
		if !found {
			t.Errorf("hook %s has no dead letter for sink %s", e.ID, sink)
		}
		as, err := d.Attempts(context.Background(), e.TenantID, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		var last dispatch.Attempt
		for _, a := range as {
			if a.Sink == sink {
				last = a
			}
		}
		if last.Outcome != "dead" || last.Error != reason {
			t.Errorf("hook %s sink %s: last attempt log entry %+v, want dead with %q", e.ID, sink, last, reason)
		}
	}
}

// auditRow is the audit row an operator's change to source "src" of the
// default tenant hands dispatch, with the event admin gives it
// (source.dead_lettered; a source write replaces it with its own).
func auditRow(action string) meta.AuditRow {
	return meta.AuditRow{At: time.Now(), Principal: "ops", Action: action, Tenant: "default", Entity: "src",
		Event: meta.Event{Type: meta.EventType("source", "dead_lettered"), Subject: "src", Data: json.RawMessage(`{"source":"src","action":"` + action + `"}`)}}
}

// outboxEvents is every durable lifecycle event of m's outbox, in order,
// as "tenant type subject data".
func outboxEvents(t *testing.T, m *meta.Store) []string {
	t.Helper()
	var out []string
	err := m.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		out = append(out, fmt.Sprintf("%s %s %s %s", ev.Tenant, ev.Type, ev.Subject, ev.Data))
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SourceBacklog counts a shared source's undelivered rows across tenants
// and by sink; DeadLetterSource moves them, a sink at a time or all, in
// synced batches with one audit row, and they stay dead.
func TestSourceBacklogAndDeadLetterSource(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Status: 503, Err: errors.New("down")}
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: fastSinks("http://a.example/in", "http://b.example/in")})
	defer n.close()
	d := n.disp.Load()
	hooks := n.commitMany(2500, 8, func(i int) string { return []string{"acme", "beta"}[i%2] })
	waitFor(t, 10*time.Second, "every row written", func() bool { return d.Written() == n.wal.LastSeq() })
	for _, tc := range []struct {
		src   string
		sinks []string
		want  int64
	}{{"src", nil, 5000}, {"src", []string{"a"}, 2500}, {"src", []string{"b", "c"}, 2500}, {"src", []string{"c"}, 0}, {"other", nil, 0}, {"sr", nil, 0}} {
		if got, err := d.SourceBacklog(tc.src, tc.sinks); err != nil || got != tc.want {
			t.Errorf("SourceBacklog(%q, %q) = %d, %v; want %d", tc.src, tc.sinks, got, err, tc.want)
		}
	}
	if _, err := d.DeadLetterSource("src", nil, meta.AuditRow{}); err == nil {
		t.Fatal("DeadLetterSource without an audit row: no error")
	}
	// A row without its event fails the first chunk's commit: nothing
	// moves, and the rows the call held are let go (the calls below
	// would find them held, and wait for holders that never come).
	noEvent := auditRow("source.update")
	noEvent.Event = meta.Event{}
	if moved, err := d.DeadLetterSource("src", []string{"b"}, noEvent); err == nil || moved != 0 {
		t.Fatalf("DeadLetterSource with an audit row without its event = %d, %v; want refused", moved, err)
	}
	if got, _ := d.SourceBacklog("src", []string{"b"}); got != 2500 {
		t.Fatalf("b's backlog after a refused dead-lettering = %d, want 2500", got)
	}
	moved, err := d.DeadLetterSource("src", []string{"b"}, auditRow("source.update"))
	if err != nil || moved != 2500 {
		t.Fatalf("DeadLetterSource(b) = %d, %v; want 2500", moved, err)
	}
	if got, _ := d.SourceBacklog("src", []string{"b"}); got != 0 {
		t.Fatalf("b's backlog after dead-lettering = %d", got)
	}
	if got, _ := d.SourceBacklog("src", []string{"a"}); got != 2500 {
		t.Fatalf("a's backlog after dead-lettering b = %d, want 2500", got)
	}
	moved, err = d.DeadLetterSource("src", nil, auditRow("source.delete"))
	if err != nil || moved != 2500 {
		t.Fatalf("DeadLetterSource(all) = %d, %v; want 2500", moved, err)
	}
	if moved, err = d.DeadLetterSource("src", nil, auditRow("source.delete")); err != nil || moved != 0 {
		t.Fatalf("DeadLetterSource again = %d, %v; want 0", moved, err)
	}
	audits, err := n.meta.Audit(time.Time{}, 100)
	if err != nil || len(audits) != 2 || audits[0].Action != "source.update" || audits[1].Action != "source.delete" {
		t.Fatalf("audit rows = %+v, %v; want one per call that moved rows", audits, err)
	}
	// Each audit row's event, as given, in the order of the changes.
	wantEvents := []string{
		`default io.ankusa.source.dead_lettered src {"source":"src","action":"source.update"}`,
		`default io.ankusa.source.dead_lettered src {"source":"src","action":"source.delete"}`,
	}
	if got := outboxEvents(t, n.meta); strings.Join(got, "\n") != strings.Join(wantEvents, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	calls := fk.calls.Load()
	time.Sleep(100 * time.Millisecond)
	if got := fk.calls.Load(); got != calls {
		t.Fatalf("%d attempts after every row was dead", got-calls)
	}
	if backlog, _ := d.SourceBacklog("src", nil); backlog != 0 {
		t.Fatalf("backlog %d after dead-lettering everything (an attempt resurrected a row)", backlog)
	}
	total := 0
	for _, tenant := range []string{"acme", "beta"} {
		for cursor := ""; ; {
			rows, next, err := d.Dead(context.Background(), tenant, dispatch.Filter{}, cursor, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if !strings.Contains(r.LastError, "dead-lettered by ops") {
					t.Fatalf("dead row %+v: the reason does not name the operator", r)
				}
			}
			total += len(rows)
			if cursor = next; next == "" {
				break
			}
		}
	}
	if total != len(hooks)*2 {
		t.Fatalf("%d dead letters, want %d", total, len(hooks)*2)
	}
}

// Rows in flight when their source is dead-lettered: an attempt that then
// fails does not reschedule its row (it is dead), one that succeeds
// deletes it (delivered, not counted), and a queued one is never
// attempted. A call whose commit fails first (its audit row has no
// event) lets go of the rows it held: the next call moves them.
func TestDeadLetterSourceInFlight(t *testing.T) {
	gate := make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gate) }) }
	var started, succeeded atomic.Int64
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		started.Add(1)
		<-gate
		if succeeded.Add(1) <= 2 {
			return nil
		}
		return &dispatch.Error{Status: 503, Err: errors.New("down")}
	})
	sinks := fastSinks("http://a.example/in", "")[:1]
	sinks[0].Concurrency, sinks[0].TenantConcurrency = 4, 4
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: sinks})
	defer n.close()
	// Registered after n.close, so it runs first: a test that fails while
	// the attempts wait at the gate must not leave close waiting on them.
	defer release()
	d := n.disp.Load()
	n.commitMany(10, 1, func(int) string { return "acme" })
	waitFor(t, 5*time.Second, "4 attempts in flight", func() bool { return started.Load() == 4 })
	noEvent := auditRow("source.delete")
	noEvent.Event = meta.Event{}
	if moved, err := d.DeadLetterSource("src", nil, noEvent); err == nil || moved != 0 {
		t.Fatalf("DeadLetterSource with an audit row without its event = %d, %v; want refused", moved, err)
	}
	if backlog, err := d.SourceBacklog("src", nil); err != nil || backlog != 10 {
		t.Fatalf("SourceBacklog after a refused dead-lettering = %d, %v; want 10", backlog, err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		moved, err := d.DeadLetterSource("src", nil, auditRow("source.delete"))
		done <- result{moved, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("DeadLetterSource returned %d, %v while attempts were in flight", r.n, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	var r result
	select {
	case r = <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("DeadLetterSource did not return 45s after the attempts were let go")
	}
	if r.err != nil || r.n != 8 {
		t.Fatalf("DeadLetterSource = %d, %v; want 8 (10 rows, 2 delivered in flight)", r.n, r.err)
	}
	want := `default io.ankusa.source.dead_lettered src {"source":"src","action":"source.delete"}`
	if got := outboxEvents(t, n.meta); len(got) != 1 || got[0] != want {
		t.Fatalf("events %q, want the one call that moved rows: %s", got, want)
	}
	time.Sleep(100 * time.Millisecond) // past several retry backoffs
	if got := started.Load(); got != 4 {
		t.Fatalf("%d attempts, want the 4 that were in flight", got)
	}
	if backlog, err := d.SourceBacklog("src", nil); err != nil || backlog != 0 {
		t.Fatalf("SourceBacklog = %d, %v; want 0 (a failed attempt resurrected its row)", backlog, err)
	}
	rows, _, err := d.Dead(context.Background(), "acme", dispatch.Filter{}, "", 100)
	if err != nil || len(rows) != 8 {
		t.Fatalf("%d dead letters, %v; want 8", len(rows), err)
	}
	if fk.ok.Load() != 2 {
		t.Fatalf("%d delivered, want 2", fk.ok.Load())
	}
}

// Direct (wal.type: none) follows edits as the dispatcher does: an edited
// sink is rebuilt for the next hook and the old one closed, an unrelated
// edit keeps it, a deleted source's sinks close on SourcesChanged.
func TestDirectFollowsSourceEdits(t *testing.T) {
	mq2 := mqSink
	mq2.URL = "amqp://guest:guest@127.0.0.1:5673/"
	spec := func(s config.Sink) map[string]config.Source {
		return map[string]config.Source{
			"src":   srcSpec([]config.Sink{s, httpSink}),
			"other": srcSpec([]config.Sink{mqSink}),
		}
	}
	sources := newEditSources(spec(mqSink))
	r := newDirectRig(t, vfs.NewMem(), "data", sources)
	defer r.stop()
	r.mustCommit("acme", "src", "one", "mq", "h")
	sources.set(spec(mqSink)) // new pointers, same specs
	r.d.SourcesChanged()
	r.mustCommit("acme", "src", "two", "mq", "h")
	if r.fk.builds("mq") != 1 || r.fk.builds("h") != 1 || r.fk.closes("mq") != 0 {
		t.Fatalf("unchanged specs: builds mq=%d h=%d closes mq=%d; want 1 1 0", r.fk.builds("mq"), r.fk.builds("h"), r.fk.closes("mq"))
	}
	sources.set(spec(mq2))
	r.mustCommit("acme", "src", "three", "mq", "h")
	waitFor(t, 5*time.Second, "the old mq sink closed", func() bool { return r.fk.closes("mq") == 1 })
	if r.fk.builds("mq") != 2 || r.fk.builds("h") != 1 || r.fk.closes("h") != 0 {
		t.Fatalf("after editing mq: builds mq=%d h=%d closes h=%d; want 2 1 0", r.fk.builds("mq"), r.fk.builds("h"), r.fk.closes("h"))
	}
	r.mustCommit("acme", "other", "four", "mq")
	sources.set(map[string]config.Source{"other": srcSpec([]config.Sink{mqSink})})
	r.d.SourcesChanged()
	waitFor(t, 5*time.Second, "src's sinks closed", func() bool { return r.fk.closes("mq") == 2 && r.fk.closes("h") == 1 })
	if r.fk.builds("mq") != 3 {
		t.Fatalf("mq sinks built %d, want 3 (src's twice, other's once)", r.fk.builds("mq"))
	}
}

// A hook the edge admitted just before its source was removed, and the log
// committed after, still gets its rows (the snapshot keeps removed sources
// for delivery a while), and they are dead letters naming the source:
// never a 201 with no row at all.
func TestHookOfRemovedSourceIsDeadLettered(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error { return nil })
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: fastSinks("http://a.example/in", "http://b.example/in")})
	defer n.close()
	d := n.disp.Load()
	// A persistent store that held "src" and removed it.
	cfg := &config.Config{Limits: config.Limits{MaxBodyBytes: 1 << 20}}
	ms, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	p, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: ms},
		Context: config.SourceContext{Resolver: "path", WALType: "disk", DedupeScope: "node"}})
	if err != nil {
		t.Fatal(err)
	}
	doc := config.SourceDoc{Name: "src", HasName: true, Spec: srcSpec(fastSinks("http://a.example/in", "http://b.example/in"))}
	if _, err := p.PutSource(source.SourceWrite{Tenant: config.DefaultTenant, Create: true, Doc: doc, Audit: auditRow("source.create")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteSource(source.SourceDelete{Tenant: config.DefaultTenant, Name: "src", Audit: auditRow("source.delete")}); err != nil {
		t.Fatal(err)
	}
	n.sources.p.Store(p.Snapshot())
	d.SourcesChanged()
	hooks := n.commitMany(4, 2, func(i int) string { return []string{"acme", "beta"}[i%2] })
	waitFor(t, 5*time.Second, "the rows dead", func() bool { return deadCount(t, d, "a") == 4 && deadCount(t, d, "b") == 4 })
	checkDead(t, d, hooks, "a", `source "src" no longer exists (sink "a")`)
	if got := fk.calls.Load(); got != 0 {
		t.Fatalf("%d attempts to a removed source's sinks, want none", got)
	}
}
