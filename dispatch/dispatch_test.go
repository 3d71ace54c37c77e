package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Every committed hook reaches every sink of its source, once in a clean
// run, and the checkpoint catches up with the log.
func TestDeliversEveryHookToEverySink(t *testing.T) {
	fk := newFakeSinks(nil)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	const count = 5000
	hooks := n.commitMany(count, 16, func(i int) string { return fmt.Sprintf("t%d", i%20) })
	waitFor(t, 20*time.Second, "every delivery", func() bool { return fk.ok.Load() == 2*count })
	for _, e := range hooks {
		for _, s := range []string{"a", "b"} {
			if got := fk.delivered(s, e.ID); got != 1 {
				t.Fatalf("hook %s (seq %d) reached sink %s %d times, want once", e.ID, e.Seq, s, got)
			}
		}
	}
	d := n.disp.Load()
	// Attempts run on workers that take the next one themselves: far
	// fewer goroutines start than attempts run (one each before).
	conc := 2 * config.DefaultSinkConcurrency // twoSinks leaves it at its default
	if w := dispatch.WorkersStarted(d); w > int64(4*conc) {
		t.Errorf("%d attempt workers started for %d attempts at a concurrency of %d; want at most %d", w, 2*count, conc, 4*conc)
	} else {
		t.Logf("%d attempt workers for %d attempts", w, 2*count)
	}
	waitFor(t, 5*time.Second, "the checkpoint", func() bool { return d.Checkpoint() == n.wal.LastSeq() })
	// A fake sink counts a delivery before the attempt's outcome is
	// recorded, which deletes the row: the last few deletes can follow
	// the count by a moment.
	waitFor(t, 5*time.Second, "every row deleted once delivered", func() bool {
		live, err := n.meta.HoldsLive(1, n.wal.LastSeq())
		if err != nil {
			t.Fatalf("HoldsLive: %v", err)
		}
		return !live
	})
	n.close()
}

// A sink that fails retries with backoff and dead-letters after
// max_attempts; retry-all delivers once it is fixed.
func TestRetriesThenDeadLettersThenRetryAll(t *testing.T) {
	var broken atomic.Bool
	broken.Store(true)
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if broken.Load() {
			return &dispatch.Error{Status: 503, Err: errors.New("receiver down")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) { s.MaxAttempts = 4 })})
	defer n.close()
	hooks := n.commitMany(50, 4, func(i int) string { return "acme" })
	d := n.disp.Load()
	ctx := context.Background()
	waitFor(t, 20*time.Second, "every row dead", func() bool {
		rows, _, err := d.Dead(ctx, "acme", dispatch.Filter{}, "", 1000)
		return err == nil && len(rows) == 100
	})
	for _, e := range hooks[:5] {
		ts := fk.times("a", e.ID)
		if len(ts) != 4 {
			t.Fatalf("hook %s: %d attempts, want max_attempts = 4", e.ID, len(ts))
		}
		for i := 1; i < len(ts); i++ {
			// Full jitter over min(retry_max 50ms, 10ms<<(i-1)), plus the
			// scheduler's pass.
			if gap := ts[i].Sub(ts[i-1]); gap > 50*time.Millisecond+1500*time.Millisecond {
				t.Fatalf("hook %s: attempt %d came %v after the one before, past the backoff bound", e.ID, i+1, gap)
			}
		}
		att, err := d.Attempts(ctx, "acme", e.ID)
		if err != nil || len(att) != 8 {
			t.Fatalf("attempt log of %s: %d entries, %v; want 4 per sink", e.ID, len(att), err)
		}
		if last := att[3]; last.Outcome != "dead" || last.Status != 503 || last.N != 4 {
			t.Fatalf("last attempt of sink a: %+v; want outcome dead, status 503, n 4", last)
		}
	}
	rows, next, err := d.Dead(ctx, "acme", dispatch.Filter{Source: "src"}, "", 30)
	if err != nil || len(rows) != 30 || next == "" {
		t.Fatalf("first page: %d rows, next %q, %v", len(rows), next, err)
	}
	if rows[0].State != dispatch.Dead || rows[0].Attempts != 4 || rows[0].LastStatus != 503 || rows[0].LastError == "" {
		t.Fatalf("dead row: %+v", rows[0])
	}
	seen := len(rows)
	for next != "" {
		rows, next, err = d.Dead(ctx, "acme", dispatch.Filter{}, next, 30)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(rows)
	}
	if seen != 100 {
		t.Fatalf("paging saw %d dead letters, want 100", seen)
	}
	at := time.Date(2025, 11, 29, 19, 40, 0, 0, time.UTC)
	// The rows and events admin hands dispatch (deliveries.go).
	row := func(action, verb, subject, data string) meta.AuditRow {
		return meta.AuditRow{At: at, Principal: "ops", Action: action, Tenant: "acme", Outcome: "ok",
			Event: meta.Event{Type: meta.EventType("delivery", verb), Subject: subject, Data: json.RawMessage(data)}}
	}
	one := func(action, verb string, id envelope.ID, sink string) meta.AuditRow {
		return row(action, verb, id.String(), fmt.Sprintf(`{"event_id":%q,"sink":%q}`, id, sink))
	}
	batches := func(action, verb string) func(int) meta.AuditRow {
		return func(k int) meta.AuditRow {
			r := row(action, verb, "acme", fmt.Sprintf(`{"count":%d}`, k))
			r.Detail = fmt.Sprintf("%d", k)
			return r
		}
	}
	if err := d.Retry(ctx, "acme", hooks[0].ID, "nope", one("deliveries.retry", "retried", hooks[0].ID, "nope")); !errors.Is(err, dispatch.ErrNoDelivery) {
		t.Fatalf("retry of an unknown sink: %v, want ErrNoDelivery", err)
	}
	if err := d.Retry(ctx, "other", hooks[0].ID, "a", one("deliveries.retry", "retried", hooks[0].ID, "a")); !errors.Is(err, dispatch.ErrNoDelivery) {
		t.Fatalf("retry from another tenant: %v, want ErrNoDelivery", err)
	}
	broken.Store(false)
	if err := d.Drop(ctx, "acme", hooks[1].ID, "a", meta.AuditRow{}); err == nil {
		t.Fatal("a drop without its audit row was done")
	}
	noEvent := one("deliveries.drop", "dropped", hooks[1].ID, "a")
	noEvent.Event = meta.Event{}
	if err := d.Drop(ctx, "acme", hooks[1].ID, "a", noEvent); err == nil {
		t.Fatal("a drop whose audit row has no event was done")
	}
	if err := d.Drop(ctx, "acme", hooks[0].ID, "a", one("deliveries.drop", "dropped", hooks[0].ID, "a")); err != nil {
		t.Fatal(err)
	}
	retried, err := d.RetryAll(ctx, "acme", dispatch.Filter{}, batches("deliveries.retry_all", "bulk_retried"))
	if err != nil || retried != 99 {
		t.Fatalf("retry-all: %d, %v; want 99 (one dropped)", retried, err)
	}
	// One audit row per change, in its batch: the drop, then the retry-all's one batch.
	audit, err := n.meta.Audit(time.Time{}, 10)
	if err != nil || len(audit) != 2 || audit[0].Action != "deliveries.drop" || audit[1].Action != "deliveries.retry_all" || audit[1].Detail != "99" {
		t.Fatalf("audit rows: %+v, %v", audit, err)
	}
	// And one event per change, as given; none of the refused drops.
	wantEvents := []string{
		fmt.Sprintf(`acme io.ankusa.delivery.dropped %s {"event_id":"%s","sink":"a"}`, hooks[0].ID, hooks[0].ID),
		`acme io.ankusa.delivery.bulk_retried acme {"count":99}`,
	}
	if got := outboxEvents(t, n.meta); strings.Join(got, "\n") != strings.Join(wantEvents, "\n") {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	waitFor(t, 10*time.Second, "the retried deliveries", func() bool { return fk.ok.Load() == 99 })
	if got := fk.delivered("a", hooks[0].ID); got != 0 {
		t.Fatalf("the dropped dead letter was delivered %d times", got)
	}
	if rows, _, _ := d.Dead(ctx, "acme", dispatch.Filter{}, "", 1000); len(rows) != 0 {
		t.Fatalf("%d dead letters left after retry-all", len(rows))
	}
}

// A 410 dead-letters at once; Retry-After is honoured.
func TestPermanentAndRetryAfter(t *testing.T) {
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if sink == "a" {
			return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
		}
		if d.Attempt == 1 {
			return &dispatch.Error{Status: 429, RetryAfter: 700 * time.Millisecond, Err: errors.New("slow down")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	e := n.commit("acme", 1)
	waitFor(t, 5*time.Second, "the second attempt to b", func() bool { return fk.delivered("b", e.ID) == 1 })
	ts := fk.times("b", e.ID)
	if gap := ts[1].Sub(ts[0]); gap < 700*time.Millisecond {
		t.Fatalf("retry came %v after a Retry-After of 700ms", gap)
	}
	if got := fk.attemptsOf("a", e.ID); got != 1 {
		t.Fatalf("a 410 was attempted %d times, want 1", got)
	}
	rows, _, err := n.disp.Load().Dead(context.Background(), "acme", dispatch.Filter{}, "", 10)
	if err != nil || len(rows) != 1 || rows[0].Sink != "a" || rows[0].LastStatus != 410 {
		t.Fatalf("dead letters: %+v, %v; want the 410 of sink a", rows, err)
	}
}

// With the intake bound tiny, hooks past it get rows only and are read
// back from the store: nothing is lost.
func TestIntakeOverflowReadsBack(t *testing.T) {
	fk := newFakeSinks(nil)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil), intakeBytes: 1})
	defer n.close()
	hooks := n.commitMany(500, 8, func(i int) string { return fmt.Sprintf("t%d", i%3) })
	for i := 0; i < 400 && fk.ok.Load() != 1000; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if fk.ok.Load() != 1000 {
		dumpState(t, n)
		t.Fatalf("stalled at %d of 1000 deliveries", fk.ok.Load())
	}
	for _, e := range hooks {
		if fk.delivered("a", e.ID) != 1 || fk.delivered("b", e.ID) != 1 {
			t.Fatalf("hook %s not delivered exactly once to each sink", e.ID)
		}
	}
}

// The breaker: a dead target costs little, and other targets of the same
// sink are not held up.
func TestCircuitBreakerPerTarget(t *testing.T) {
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if d.Envelope.TenantID == "dead" {
			return &dispatch.Error{Err: errors.New("connection refused")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) {
		s.RetryBase, s.RetryMax = config.Duration(time.Millisecond), config.Duration(2*time.Millisecond)
		s.MaxAttempts = 1000
	})})
	defer n.close()
	n.commitMany(200, 8, func(i int) string { return "dead" })
	time.Sleep(1500 * time.Millisecond)
	calls := fk.calls.Load()
	// Without a breaker, 400 rows retried every ~2ms for 1.5 s would be
	// tens of thousands of calls; with it, each sink's target sees its 5
	// failures, then a probe per cooldown (1 s, then 2 s).
	if calls > 400+40 {
		t.Fatalf("%d attempts reached a dead target in 1.5 s; the breaker should have stopped them", calls)
	}
	good := n.commit("alive", 1)
	waitFor(t, 3*time.Second, "a healthy tenant's delivery", func() bool {
		return fk.delivered("a", good.ID) == 1 && fk.delivered("b", good.ID) == 1
	})
}

// A target that answers (a broker's return or nack, a 503) is up: however
// often it refuses, the breaker stays closed and backoff paces it.
func TestAnsweredFailuresDoNotOpenTheBreaker(t *testing.T) {
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		return &dispatch.Error{Answered: true, Err: errors.New("unroutable: no queue bound")}
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) {
		s.RetryBase, s.RetryMax = config.Duration(time.Millisecond), config.Duration(2*time.Millisecond)
		s.MaxAttempts = 8
	})[:1]})
	defer n.close()
	n.commitMany(10, 2, func(int) string { return "acme" })
	// 10 hooks x 8 attempts in well under the breaker's first cooldown: it
	// never opened.
	waitFor(t, 900*time.Millisecond, "every attempt", func() bool { return fk.calls.Load() == 80 })
}

// A first attempt whose runner cannot take it (the tenant's queue is
// full) is let go of unsettled: the scheduler claims its row once the
// sink makes room. The row writer marks for the scheduler only the
// tenants of rows no first attempt holds, so this holds only because
// letting go of a held row marks its tenant.
func TestFirstAttemptRefusedIsClaimed(t *testing.T) {
	open := make(chan struct{})
	fk := newFakeSinks(func(_ string, _ *dispatch.Delivery) error {
		<-open
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	defer func() {
		select {
		case <-open:
		default:
			close(open) // a failure: let the attempts end so the node closes
		}
	}()
	// One tenant: 8 attempts in flight per sink and 1,024 queued (the
	// tenant's share of the runner's queue), the rest refused.
	const count = 1500
	hooks := n.commitMany(count, 8, func(int) string { return "acme" })
	d := n.disp.Load()
	waitFor(t, 10*time.Second, "every row written", func() bool { return dispatch.RowsFlushed(d) == uint64(count) })
	time.Sleep(1500 * time.Millisecond) // passes run and find nothing to claim
	close(open)
	waitFor(t, 30*time.Second, "every delivery", func() bool { return fk.ok.Load() == 2*count })
	for _, e := range hooks {
		for _, s := range []string{"a", "b"} {
			if got := fk.delivered(s, e.ID); got != 1 {
				t.Fatalf("hook %d reached sink %s %d times, want once", e.Seq, s, got)
			}
		}
	}
}
