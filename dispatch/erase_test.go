package dispatch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// The tenant erase's part in dispatch (issue 20): a closed ordinal gets
// nothing written under it, an attempt running at the close cannot put a
// row back, and the erase leaves no row, index entry, attempt record or
// counter of it, while another tenant's hooks are delivered as before.

// ordRows counts the delivery rows and attempt records of ordinal ord's
// hooks.
func ordRows(t *testing.T, m *meta.Store, ord uint32, hooks []envelope.Envelope) (rows, attempts int) {
	t.Helper()
	if err := m.TenantRows(ord, func(meta.RowID, *meta.Delivery) bool { rows++; return false }); err != nil {
		t.Fatal(err)
	}
	for _, e := range hooks {
		if err := m.HookAttempts(ord, e.Seq, func(string, uint16, *meta.AttemptRecord) { attempts++ }); err != nil {
			t.Fatal(err)
		}
	}
	return rows, attempts
}

// TestCloseTenantStopsWriterAndClaims: once an ordinal is closed, its
// hooks committed after get no row and no counter, its pending rows are
// claimed no more, the operator's calls on its rows answer
// ErrTenantErasing, and EraseTenantRows deletes every key of it (a second
// call finds none), without the next checkpoint writing its counters
// back. Another tenant's hooks are delivered all along.
func TestCloseTenantStopsWriterAndClaims(t *testing.T) {
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if d.Envelope.TenantID == "gone" {
			return errors.New("gone's receiver is down") // rows stay pending, retried
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	d := n.disp.Load()
	ctx := context.Background()
	var gone, keep []envelope.Envelope
	for i := range 4 {
		gone = append(gone, n.commit("gone", i))
		keep = append(keep, n.commit("keep", i))
	}
	ord := gone[0].TenantOrdinal
	waitFor(t, 5*time.Second, "gone's hooks attempted on both sinks", func() bool {
		for _, e := range gone {
			if fk.attemptsOf("a", e.ID) == 0 || fk.attemptsOf("b", e.ID) == 0 {
				return false
			}
		}
		return true
	})

	d.CloseTenant(ord)
	if err := d.WaitTenantIdle(ctx, ord, n.wal.LastSeq()); err != nil {
		t.Fatal(err)
	}
	atClose := d.TenantCounts(ord)
	if atClose.Hooks != 4 {
		t.Fatalf("gone's counters at the close %+v, want 4 hooks", atClose)
	}
	goneAttempts := func() int {
		n := 0
		for _, e := range gone {
			n += fk.attemptsOf("a", e.ID) + fk.attemptsOf("b", e.ID)
		}
		return n
	}
	atIdle := goneAttempts()
	var late []envelope.Envelope
	for i := range 3 {
		late = append(late, n.commit("gone", 10+i)) // committed in the race with the edge's close
		keep = append(keep, n.commit("keep", 10+i))
	}
	waitFor(t, 5*time.Second, "keep's hooks delivered", func() bool {
		for _, e := range keep {
			if fk.delivered("a", e.ID) != 1 || fk.delivered("b", e.ID) != 1 {
				return false
			}
		}
		return true
	})
	if err := d.WaitTenantIdle(ctx, ord, n.wal.LastSeq()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond) // several retry periods (10-50ms)
	if got := goneAttempts(); got != atIdle {
		t.Fatalf("gone's rows were attempted %d times after the close", got-atIdle)
	}
	for _, e := range late {
		if got := fk.attemptsOf("a", e.ID) + fk.attemptsOf("b", e.ID); got != 0 {
			t.Fatalf("a hook committed after the close was attempted %d times", got)
		}
		if _, found, err := n.meta.Row(meta.RowID{Ord: ord, Seq: e.Seq, Sink: "a"}); err != nil || found {
			t.Fatalf("a hook committed after the close got a row (found %v, %v)", found, err)
		}
	}
	if got := d.TenantCounts(ord); got != atClose {
		t.Fatalf("gone's counters moved after the close: %+v, at the close %+v", got, atClose)
	}

	audit := meta.AuditRow{At: time.Now(), Principal: "ops", Action: "delivery.retry", Tenant: "gone"}
	if err := d.Retry(ctx, "gone", gone[0].ID, "a", audit); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("Retry of a tenant being erased: %v, want ErrTenantErasing", err)
	}
	if err := d.Drop(ctx, "gone", gone[0].ID, "a", audit); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("Drop: %v, want ErrTenantErasing", err)
	}
	one := func(int) meta.AuditRow { return audit }
	if _, err := d.RetryAll(ctx, "gone", dispatch.Filter{}, one); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("RetryAll: %v, want ErrTenantErasing", err)
	}
	if _, err := d.DropAll(ctx, "gone", dispatch.Filter{}, one); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("DropAll: %v, want ErrTenantErasing", err)
	}
	if _, err := d.DropAllQuarantined(ctx, "gone", dispatch.Filter{}, one); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("DropAllQuarantined: %v, want ErrTenantErasing", err)
	}
	if _, err := d.Release(ctx, "gone", gone[0].ID, dispatch.ReleaseForced, audit); !errors.Is(err, dispatch.ErrTenantErasing) {
		t.Fatalf("Release: %v, want ErrTenantErasing", err)
	}
	if backlog, err := d.SourceBacklog("src", nil); err != nil || backlog != 0 {
		t.Fatalf("SourceBacklog counts the erasing tenant's rows: %d %v, want 0", backlog, err)
	}

	if rows, attempts := ordRows(t, n.meta, ord, gone); rows != 8 || attempts == 0 {
		t.Fatalf("before the erase gone has %d rows, %d attempt records; want 8 and some", rows, attempts)
	}
	deleted, err := d.EraseTenantRows(ord)
	if err != nil || deleted < 16 {
		t.Fatalf("EraseTenantRows deleted %d keys (%v), want at least 8 rows and 8 due entries", deleted, err)
	}
	if rows, attempts := ordRows(t, n.meta, ord, gone); rows != 0 || attempts != 0 {
		t.Fatalf("after the erase gone has %d rows, %d attempt records", rows, attempts)
	}
	// The backlog gauges drop the erased rows: they agree with a count of
	// the store, as at boot.
	if c, err := n.meta.CountRows(); err != nil {
		t.Fatal(err)
	} else if pending, dead := dispatch.BacklogGauges(d); pending != c.Rows-c.Dead || dead != c.Dead {
		t.Fatalf("after the erase the gauges say %d pending and %d dead, the store %+v", pending, dead, c)
	}
	if again, err := d.EraseTenantRows(ord); err != nil || again != 0 {
		t.Fatalf("a second EraseTenantRows deleted %d keys (%v), want 0", again, err)
	}
	if got := d.TenantCounts(ord); got != (meta.TenantCounts{}) {
		t.Fatalf("gone's counters after the erase: %+v, want none", got)
	}
	// The erase's final batch removes the persisted counters; no
	// checkpoint after it writes them back.
	if _, err := n.meta.DeleteTenantFamilies(ord, "", "tenant-counts"); err != nil {
		t.Fatal(err)
	}
	last := n.commit("keep", 99)
	waitFor(t, 5*time.Second, "a checkpoint past keep's last hook", func() bool { return d.Checkpoint() >= last.Seq })
	counts, err := n.meta.AllTenantCounts()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := counts[ord]; ok {
		t.Fatalf("a checkpoint wrote the erased ordinal's counters back: %+v", c)
	}
	if counts[keep[0].TenantOrdinal].Hooks != uint64(len(keep)+1) {
		t.Fatalf("keep's persisted counters %+v, want %d hooks", counts[keep[0].TenantOrdinal], len(keep)+1)
	}
}

// TestWaitTenantIdleSlowAttempt: an attempt running when its tenant is
// closed is waited for (WaitTenantIdle returns only once it ended), and
// its outcome is not written: after EraseTenantRows no row and no attempt
// record of the ordinal exist, so a running attempt cannot put a row
// back. Claim and close race: the attempt was counted in flight before
// CloseTenant returned.
func TestWaitTenantIdleSlowAttempt(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if d.Envelope.TenantID != "gone" {
			return nil
		}
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return errors.New("gone's receiver failed") // a retry: it would move the row
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) { s.Concurrency = 2; s.TenantConcurrency = 2 })})
	defer n.close()
	d := n.disp.Load()
	e := n.commit("gone", 1)
	ord := e.TenantOrdinal
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow attempt did not start")
	}
	d.CloseTenant(ord)
	if got := d.InFlight(ord); got == 0 {
		t.Fatal("InFlight is 0 with an attempt running")
	}
	short, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	err := d.WaitTenantIdle(short, ord, n.wal.LastSeq())
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitTenantIdle with an attempt running: %v, want its deadline", err)
	}
	var idle atomic.Bool
	done := make(chan error, 1)
	go func() {
		err := d.WaitTenantIdle(context.Background(), ord, n.wal.LastSeq())
		idle.Store(true)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if idle.Load() {
		t.Fatal("WaitTenantIdle returned while the attempt was running")
	}
	other := n.commit("keep", 2)
	waitFor(t, 5*time.Second, "another tenant delivered meanwhile", func() bool {
		return fk.delivered("a", other.ID) == 1 && fk.delivered("b", other.ID) == 1
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := d.InFlight(ord); got != 0 {
		t.Fatalf("InFlight %d after WaitTenantIdle", got)
	}
	for _, sink := range []string{"a", "b"} {
		row, found, err := n.meta.Row(meta.RowID{Ord: ord, Seq: e.Seq, Sink: sink})
		if err != nil || !found || row.Attempts != 0 || row.LastError != "" {
			t.Fatalf("row %s after the closed attempt: %+v found %v %v; want it untouched", sink, row, found, err)
		}
	}
	if _, attempts := ordRows(t, n.meta, ord, []envelope.Envelope{e}); attempts != 0 {
		t.Fatalf("the closed attempt wrote %d attempt records", attempts)
	}
	if _, err := d.EraseTenantRows(ord); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a scheduler pass or two
	if rows, attempts := ordRows(t, n.meta, ord, []envelope.Envelope{e}); rows != 0 || attempts != 0 {
		t.Fatalf("after the erase: %d rows, %d attempt records of the ordinal", rows, attempts)
	}
}

// TestRebuildSkipsErased: hooks past the checkpoint are rebuilt at Open,
// except those of Options.Erased: no row, no counter, no attempt, while
// another tenant's are rebuilt and delivered.
func TestRebuildSkipsErased(t *testing.T) {
	fs := vfs.NewMem()
	fk := newFakeSinks(nil)
	n := openNode(t, fs, fk, nodeOptions{sinks: twoSinks(nil), noDispatch: true})
	var gone, keep []envelope.Envelope
	for i := range 3 {
		gone = append(gone, n.commit("gone", i))
		keep = append(keep, n.commit("keep", i))
	}
	n.close()
	ord := gone[0].TenantOrdinal
	n = openNode(t, fs, fk, nodeOptions{sinks: twoSinks(nil), erased: []uint32{ord}})
	defer n.close()
	d := n.disp.Load()
	waitFor(t, 5*time.Second, "keep's rebuilt hooks delivered", func() bool {
		for _, e := range keep {
			if fk.delivered("a", e.ID) != 1 || fk.delivered("b", e.ID) != 1 {
				return false
			}
		}
		return true
	})
	time.Sleep(50 * time.Millisecond)
	for _, e := range gone {
		if fk.attemptsOf("a", e.ID)+fk.attemptsOf("b", e.ID) != 0 {
			t.Fatalf("hook %d of an erased tenant was attempted", e.Seq)
		}
	}
	if rows, _ := ordRows(t, n.meta, ord, gone); rows != 0 {
		t.Fatalf("the rebuild made %d rows for an erased tenant", rows)
	}
	if c := d.TenantCounts(ord); c != (meta.TenantCounts{}) {
		t.Fatalf("the rebuild counted an erased tenant's hooks: %+v", c)
	}
	if c := d.TenantCounts(keep[0].TenantOrdinal); c.Hooks != 3 {
		t.Fatalf("keep's counters after the rebuild %+v, want 3 hooks", c)
	}
}

// TestEraseTenantPen: a closed ordinal's quarantined hooks committed after
// the close get no pen row and give their reserved bytes back;
// EraseTenantPen deletes its pen rows and gives back their bytes, leaving
// another tenant's.
func TestEraseTenantPen(t *testing.T) {
	n := openNode(t, vfs.NewMem(), newFakeSinks(nil), nodeOptions{sinks: twoSinks(nil), source: githubSource, maxPenBytes: 200})
	defer n.close()
	d := n.disp.Load()
	var gone []envelope.Envelope
	for i := range 4 {
		gone = append(gone, n.commitQuarantined("gone", i, "wrong"))
	}
	kept := n.commitQuarantined("keep", 0, "wrong")
	ord := gone[0].TenantOrdinal
	waitFor(t, 5*time.Second, "the pen rows written", func() bool { return d.Written() >= kept.Seq })
	d.CloseTenant(ord)
	late := n.commitQuarantined("gone", 9, "wrong") // reserved before the close, committed after
	if err := d.WaitTenantIdle(context.Background(), ord, n.wal.LastSeq()); err != nil {
		t.Fatal(err)
	}
	if _, found, err := n.meta.PenRow(ord, late.Seq); err != nil || found {
		t.Fatalf("a quarantined hook committed after the close got a pen row (%v %v)", found, err)
	}
	deleted, err := d.EraseTenantPen(ord)
	if err != nil || deleted != 4 {
		t.Fatalf("EraseTenantPen deleted %d (%v), want 4", deleted, err)
	}
	if again, err := d.EraseTenantPen(ord); err != nil || again != 0 {
		t.Fatalf("a second EraseTenantPen deleted %d (%v), want 0", again, err)
	}
	if _, found, _ := n.meta.PenRow(kept.TenantOrdinal, kept.Seq); !found {
		t.Fatal("another tenant's pen row went with the erase")
	}
	// Only keep's 10 bytes are held now: 190 more fit under the cap of 200.
	if ok, _ := d.ReservePen("keep", 190); !ok {
		t.Fatal("the erased pen rows' bytes (or the late hook's) were not given back")
	}
	d.UnreservePen(190)
	if ok, _ := d.ReservePen("keep", 191); ok {
		t.Fatal("the pen gave back more than it held")
	}
}
