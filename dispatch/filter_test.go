package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// filterCount reads a filter counter of source "src"'s sink.
func filterCount(name, sink string) uint64 {
	return metrics.GetOrCreateCounter(fmt.Sprintf(`%s{source="src",sink="%s"}`, name, sink)).Get()
}

// commitRaw commits one hook of tenant acme to "src" with headers and body.
func (n *node) commitRaw(headers []envelope.Header, body string) envelope.Envelope {
	n.t.Helper()
	e, err := commitEnvelope(n.wal.Commit, envelope.Envelope{
		TenantID: "acme", SourceID: "src", ReceivedAt: time.Now().UnixNano(),
		Headers: headers, Body: []byte(body), Verification: envelope.Verification{Verifier: "none"},
	})
	if err != nil {
		n.t.Fatal(err)
	}
	return e
}

func ghHeaders(event string) []envelope.Header {
	return []envelope.Header{{Name: "X-GitHub-Event", Value: event}, {Name: "Content-Type", Value: "application/json"}}
}

func stripeBody(typ string, amount int) string {
	return fmt.Sprintf(`{"id":"evt_1","type":%q,"data":{"object":{"object":"charge","amount":%d,"currency":"usd"}}}`, typ, amount)
}

// A source with two filtered sinks: each hook gets a row, and a first
// attempt, for exactly the sinks whose filter matches; a hook no filter
// matches has no row, and the checkpoint and retention do not wait for
// it. The sinks refuse everything with a long backoff, so every row
// written stays pending where the test can see it.
func TestFilterRows(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Err: errors.New("receiver down")}
	})
	sinks := twoSinks(func(s *config.Sink) {
		s.RetryBase, s.RetryMax = config.Duration(time.Hour), config.Duration(time.Hour)
	})
	sinks[0].Filter = `headers[?'x-github-event'].orValue('') == 'push'`
	sinks[1].Filter = `has(body.data) && body.type.startsWith('invoice.') && body.data.object.amount > 1000`
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: sinks})
	defer n.close()
	skipA, skipB := filterCount("ankusa_filter_skipped_total", "a"), filterCount("ankusa_filter_skipped_total", "b")
	errA, errB := filterCount("ankusa_filter_errors_total", "a"), filterCount("ankusa_filter_errors_total", "b")

	hooks := []struct {
		name string
		e    envelope.Envelope
		a, b bool
	}{
		{"github push", n.commitRaw(ghHeaders("push"), `{"ref":"refs/heads/main"}`), true, false},
		{"github pull_request", n.commitRaw(ghHeaders("pull_request"), `{"action":"opened"}`), false, false},
		{"stripe invoice.paid 2000", n.commitRaw(nil, stripeBody("invoice.paid", 2000)), false, true},
		{"stripe invoice.paid 500", n.commitRaw(nil, stripeBody("invoice.paid", 500)), false, false},
		{"stripe charge.succeeded 2000", n.commitRaw(nil, stripeBody("charge.succeeded", 2000)), false, false},
		{"push carrying an invoice", n.commitRaw(ghHeaders("push"), stripeBody("invoice.created", 5000)), true, true},
		{"not JSON, no headers", n.commitRaw(nil, `plain text`), false, false},
	}
	last := hooks[len(hooks)-1].e
	waitFor(t, 5*time.Second, "the checkpoint past the last hook", func() bool { return n.meta.DurableCheckpoint() >= last.Seq })
	for _, h := range hooks {
		for _, sk := range []struct {
			id   string
			want bool
		}{{"a", h.a}, {"b", h.b}} {
			got, err := n.meta.RowExists(meta.RowID{Ord: h.e.TenantOrdinal, Seq: h.e.Seq, Sink: sk.id})
			if err != nil {
				t.Fatal(err)
			}
			if got != sk.want {
				t.Errorf("%s: sink %s has a row: %v, want %v", h.name, sk.id, got, sk.want)
			}
			if sk.want {
				waitFor(t, 5*time.Second, h.name+"'s first attempt", func() bool { return fk.attemptsOf(sk.id, h.e.ID) > 0 })
			} else if n := fk.attemptsOf(sk.id, h.e.ID); n != 0 {
				t.Errorf("%s: sink %s was attempted %d times, its filter does not match", h.name, sk.id, n)
			}
		}
		live, err := n.meta.HoldsLive(h.e.Seq, h.e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if live != (h.a || h.b) {
			t.Errorf("%s: HoldsLive = %v; a hook with no row must not hold its segment", h.name, live)
		}
	}
	if d := filterCount("ankusa_filter_skipped_total", "a") - skipA; d != 5 {
		t.Errorf("sink a skipped %d hooks, want 5", d)
	}
	if d := filterCount("ankusa_filter_skipped_total", "b") - skipB; d != 5 {
		t.Errorf("sink b skipped %d hooks, want 5", d)
	}
	// body.type on a GitHub body is not reached (has(body.data) is false),
	// and a header a hook lacks is an optional's default: no errors.
	if da, db := filterCount("ankusa_filter_errors_total", "a")-errA, filterCount("ankusa_filter_errors_total", "b")-errB; da != 0 || db != 0 {
		t.Errorf("filter errors a %d b %d, want none", da, db)
	}
	if pending, _ := dispatch.BacklogGauges(n.disp.Load()); pending != 4 {
		t.Errorf("pending rows %d, want 4", pending)
	}
}

// A filter that fails at run time (a field the hook does not have) is no
// match: no row, counted as an error, logged through the throttle (one
// line for a burst).
func TestFilterRuntimeErrors(t *testing.T) {
	fk := newFakeSinks(nil)
	sinks := twoSinks(nil)
	sinks[0].Filter = `body.data.object.amount > 1000` // GitHub bodies have no data
	core, logs := observer.New(zapcore.WarnLevel)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: sinks, logger: zap.New(core)})
	defer n.close()
	errA, skipA := filterCount("ankusa_filter_errors_total", "a"), filterCount("ankusa_filter_skipped_total", "a")
	var hooks []envelope.Envelope
	for i := range 5 {
		hooks = append(hooks, n.commitRaw(ghHeaders("push"), fmt.Sprintf(`{"ref":"refs/heads/b%d"}`, i)))
	}
	for _, e := range hooks {
		waitFor(t, 5*time.Second, "sink b's delivery", func() bool { return fk.delivered("b", e.ID) == 1 })
	}
	waitFor(t, 5*time.Second, "the checkpoint", func() bool { return n.meta.DurableCheckpoint() >= hooks[4].Seq })
	for _, e := range hooks {
		if fk.attemptsOf("a", e.ID) != 0 {
			t.Fatalf("hook %s reached sink a though its filter failed", e.ID)
		}
		if ok, err := n.meta.RowExists(meta.RowID{Ord: e.TenantOrdinal, Seq: e.Seq, Sink: "a"}); ok || err != nil {
			t.Fatalf("hook %s has a row for sink a (%v)", e.ID, err)
		}
	}
	if d := filterCount("ankusa_filter_errors_total", "a") - errA; d != 5 {
		t.Errorf("filter errors %d, want 5", d)
	}
	if d := filterCount("ankusa_filter_skipped_total", "a") - skipA; d != 5 {
		t.Errorf("skipped %d, want 5", d)
	}
	lines := logs.FilterMessageSnippet("a sink filter failed").All()
	if len(lines) != 1 {
		t.Fatalf("%d log lines for 5 failures within the throttle's interval, want 1", len(lines))
	}
	f := lines[0].ContextMap()
	if f["sink"] != "a" || f["source"] != "src" || f["held_back"] != int64(0) || f["error"] != "no such key: data" {
		t.Errorf("the log line's fields: %v", f)
	}
}

// A quarantined hook released by the operator gets rows only for the
// sinks whose filter matches it.
func TestFilterRelease(t *testing.T) {
	fk := newFakeSinks(nil)
	sinks := twoSinks(nil)
	sinks[0].Filter = `body.held == 1`
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: sinks, source: githubSource})
	defer n.close()
	d := n.disp.Load()
	one := n.commitQuarantined("acme", 1, "other-secret")
	two := n.commitQuarantined("acme", 2, "other-secret")
	waitFor(t, 5*time.Second, "both hooks in the pen", func() bool { return len(penList(t, d, "acme")) == 2 })
	ctx := context.Background()
	r, err := d.Release(ctx, "acme", one.ID, dispatch.ReleaseForced, opsAudit("quarantine.release_forced", "acme"))
	if err != nil || r.Rows != 2 {
		t.Fatalf("release of the hook both sinks take: %+v %v", r, err)
	}
	r, err = d.Release(ctx, "acme", two.ID, dispatch.ReleaseForced, opsAudit("quarantine.release_forced", "acme"))
	if err != nil || r.Rows != 1 {
		t.Fatalf("release of the hook only sink b takes: %+v %v", r, err)
	}
	waitFor(t, 5*time.Second, "the released hooks' deliveries", func() bool {
		return fk.delivered("a", one.ID) == 1 && fk.delivered("b", one.ID) == 1 && fk.delivered("b", two.ID) == 1
	})
	time.Sleep(50 * time.Millisecond)
	if fk.attemptsOf("a", two.ID) != 0 {
		t.Fatal("sink a was handed a released hook its filter does not match")
	}
}

// wal.type: none: Direct hands a hook only to the sinks whose filter
// takes it and waits for those; a hook no filter takes is acknowledged
// with nothing delivered.
func TestFilterDirect(t *testing.T) {
	mq, web := mqSink, httpSink
	mq.Filter = `body.kind == 'order'`
	web.Filter = `body.kind in ['order', 'refund']`
	r := newDirectRig(t, vfs.Default, t.TempDir(), directSources(map[string][]config.Sink{"shop": {mq, web}}))
	defer r.stop()
	r.mustCommit("acme", "shop", `{"kind":"order"}`, "mq", "h")
	r.mustCommit("acme", "shop", `{"kind":"refund"}`, "h")
	r.mustCommit("acme", "shop", `{"kind":"customer"}`)
	r.fail["h"] = "order" // a failing sink the filter takes still fails the commit
	if _, _, _, err := r.commit("acme", "shop", `{"kind":"order","n":2}`); err == nil {
		t.Fatal("a commit whose matching sink failed succeeded")
	}
	r.fail["mq"] = "customer" // one the filter does not take is never asked
	r.mustCommit("acme", "shop", `{"kind":"customer","n":2}`)
	for _, c := range []struct {
		sink, body string
		want       int
	}{
		{"mq", `{"kind":"refund"}`, 0},
		{"mq", `{"kind":"customer"}`, 0},
		{"h", `{"kind":"customer"}`, 0},
		{"mq", `{"kind":"customer","n":2}`, 0},
		{"h", `{"kind":"order","n":2}`, 1},
	} {
		if got := r.attempts(c.sink, c.body); got != c.want {
			t.Errorf("sink %s was handed %s %d times, want %d", c.sink, c.body, got, c.want)
		}
	}
}

// Editing a sink's filter keeps its sink (no reconnect) and applies to
// the hooks committed after the edit; rows written before it stay.
func TestFilterEditKeepsTheSink(t *testing.T) {
	fk := newFakeSinks(nil)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	d := n.disp.Load()
	before := n.commitRaw(ghHeaders("push"), `{"n":1}`)
	waitFor(t, 5*time.Second, "the first hook at both sinks", func() bool {
		return fk.delivered("a", before.ID) == 1 && fk.delivered("b", before.ID) == 1
	})
	sinks := twoSinks(nil)
	sinks[0].Filter = `body.n > 1`
	n.sources.set(map[string]config.Source{"src": {TenantID: config.DefaultTenant, Verify: config.Verify{Type: "none"}, Sinks: sinks}})
	d.SourcesChanged()
	skipped := n.commitRaw(ghHeaders("push"), `{"n":1}`)
	taken := n.commitRaw(ghHeaders("push"), `{"n":2}`)
	waitFor(t, 5*time.Second, "the later hooks' deliveries", func() bool {
		return fk.delivered("a", taken.ID) == 1 && fk.delivered("b", skipped.ID) == 1 && fk.delivered("b", taken.ID) == 1
	})
	time.Sleep(50 * time.Millisecond)
	if fk.attemptsOf("a", skipped.ID) != 0 {
		t.Fatal("the edited filter did not apply to a hook committed after the edit")
	}
	if fk.builds("a") != 1 || fk.closes("a") != 0 {
		t.Fatalf("editing a filter rebuilt sink a: builds %d closes %d, want 1 0", fk.builds("a"), fk.closes("a"))
	}
}

// TestFilterRebuild: rebuilding rows after a crash (DESIGN.md §6 item 4)
// asks the same filters, so a hook gets a row after the crash exactly where
// its sink's filter takes it, whether or not the crashed node had written
// it: a filtered-out hook is never given a row by the rebuild, and a
// matching one is never left without.
func TestFilterRebuild(t *testing.T) {
	refuse := func(string, *dispatch.Delivery) error { return &dispatch.Error{Err: errors.New("receiver down")} }
	sinks := twoSinks(func(s *config.Sink) {
		s.RetryBase, s.RetryMax = config.Duration(time.Hour), config.Duration(time.Hour)
	})
	sinks[0].Filter = `headers[?'x-github-event'].orValue('') == 'push'`
	sinks[1].Filter = `has(body.data) && body.type.startsWith('invoice.')`
	mem := vfs.NewCrashableMem()
	n := openNode(t, mem, newFakeSinks(refuse), nodeOptions{sinks: sinks})
	push := n.commitRaw(ghHeaders("push"), `{"ref":"refs/heads/main"}`)
	pr := n.commitRaw(ghHeaders("pull_request"), `{"action":"opened"}`)
	inv := n.commitRaw(nil, stripeBody("invoice.paid", 2000))
	charge := n.commitRaw(nil, stripeBody("charge.succeeded", 2000))
	// Crash at once: the rows and the checkpoint may or may not be synced.
	clone := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	n.close()

	n = openNode(t, clone, newFakeSinks(refuse), nodeOptions{sinks: sinks})
	defer n.close()
	waitFor(t, 5*time.Second, "the checkpoint past the last hook", func() bool { return n.meta.DurableCheckpoint() >= charge.Seq })
	for _, h := range []struct {
		name string
		e    envelope.Envelope
		a, b bool
	}{{"push", push, true, false}, {"pull_request", pr, false, false}, {"invoice.paid", inv, false, true}, {"charge.succeeded", charge, false, false}} {
		for _, sk := range []struct {
			id   string
			want bool
		}{{"a", h.a}, {"b", h.b}} {
			got, err := n.meta.RowExists(meta.RowID{Ord: h.e.TenantOrdinal, Seq: h.e.Seq, Sink: sk.id})
			if err != nil {
				t.Fatal(err)
			}
			if got != sk.want {
				t.Errorf("after the crash, %s: sink %s has a row: %v, want %v", h.name, sk.id, got, sk.want)
			}
		}
	}
}
