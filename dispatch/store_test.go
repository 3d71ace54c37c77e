package dispatch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/wal"
)

// A stored row that does not decode, and a due entry without a row, are
// logged and left for an operator or dropped; the tenant's other rows are
// delivered and the node keeps running.
//
// The damage is what no write of the node leaves, so it is written with
// pebble itself, into the store while no node has it open.
func TestDamagedRowsDoNotStopDelivery(t *testing.T) {
	fs := vfs.NewMem()
	n := openNode(t, fs, nil, nodeOptions{noDispatch: true})
	first := n.commit("acme", 0) // gives acme its ordinal
	n.close()
	bad := meta.RowID{Ord: first.TenantOrdinal, Seq: 1 << 40, Sink: "a"}
	missing := meta.RowID{Ord: first.TenantOrdinal, Seq: 1 << 41, Sink: "a"} // no row at all
	rawStore(t, fs, func(db *pebble.DB) {
		for _, kv := range [][2][]byte{
			{meta.RowKey(nil, bad), []byte("not a row")},
			{meta.DueKey(nil, bad, 1), nil},
			{meta.DueKey(nil, missing, 2), nil},
		} {
			if err := db.Set(kv[0], kv[1], pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
	})
	fk := newFakeSinks(nil)
	n = openNode(t, fs, fk, nodeOptions{sinks: twoSinks(nil)[:1]})
	hooks := n.commitMany(50, 4, func(int) string { return "acme" })
	waitFor(t, 5*time.Second, "the good rows' deliveries", func() bool { return fk.ok.Load() >= 51 })
	for _, e := range append(hooks, first) {
		if fk.delivered("a", e.ID) != 1 {
			t.Fatalf("hook %d not delivered beside the damaged row", e.Seq)
		}
	}
	if _, _, err := n.meta.Row(bad); !errors.Is(err, meta.ErrBadRecord) {
		t.Fatalf("the damaged row was changed or removed: %v", err)
	}
	for _, c := range []struct {
		id  meta.RowID
		due int64
	}{{bad, 1}, {missing, 2}} {
		waitFor(t, 3*time.Second, "the due entries of the damaged and the missing row to be dropped", func() bool {
			exists, err := n.meta.DueExists(c.id, c.due)
			return err == nil && !exists
		})
	}
	n.close()
	rawStore(t, fs, func(db *pebble.DB) {
		if v, closer, err := db.Get(meta.RowKey(nil, bad)); err != nil || string(v) != "not a row" {
			t.Fatalf("the damaged row was changed or removed: %q %v", v, err)
		} else {
			closer.Close()
		}
	})
}

// rawStore opens the node's meta store with pebble itself, for damage no
// write of the node leaves.
func rawStore(t *testing.T, fs vfs.FS, fn func(*pebble.DB)) {
	t.Helper()
	db, err := pebble.Open("data/meta", &pebble.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	fn(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// A segment holds live rows until every hook in it is delivered or dead:
// retention asks HoldsLive before it removes one.
func TestHoldsLiveUntilDeliveredOrDead(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if failing.Load() && d.Envelope.TenantID != "dead" {
			return &dispatch.Error{Status: 503, Err: errors.New("down")}
		}
		if d.Envelope.TenantID == "dead" {
			return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	d := n.disp.Load()
	live := n.commitMany(20, 2, func(int) string { return "live" })
	dead := n.commitMany(20, 2, func(int) string { return "dead" })
	waitFor(t, 5*time.Second, "the dead letters", func() bool {
		rows, _, _ := d.Dead(context.Background(), "dead", dispatch.Filter{}, "", 100)
		return len(rows) == 40
	})
	holds := func(first, last uint64) bool {
		h, err := n.meta.HoldsLive(first, last)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if !holds(live[0].Seq, live[0].Seq) || !holds(1, n.wal.LastSeq()) {
		t.Fatal("HoldsLive is false while hooks wait for a retry")
	}
	lo, hi := dead[0].Seq, dead[0].Seq
	for _, e := range dead {
		lo, hi = min(lo, e.Seq), max(hi, e.Seq)
	}
	for _, e := range live {
		if e.Seq >= lo && e.Seq <= hi {
			hi = lo - 1 // interleaved: use only the dead hooks' own range below
		}
	}
	if hi >= lo && holds(lo, hi) {
		t.Fatal("HoldsLive is true over hooks that are only dead letters")
	}
	failing.Store(false)
	waitFor(t, 10*time.Second, "the retries", func() bool { return fk.ok.Load() == 40 })
	waitFor(t, 2*time.Second, "the rows to go", func() bool { return !holds(1, n.wal.LastSeq()) })
}

// The attempt log is swept past its TTL.
func TestAttemptLogSwept(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	fk := newFakeSinks(nil)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil), now: now})
	defer n.close()
	d := n.disp.Load()
	hooks := n.commitMany(30, 3, func(int) string { return "acme" })
	// A delivery's attempt entry is written after the sink returned: wait
	// for the entries, not only the deliveries.
	waitFor(t, 5*time.Second, "the attempt log of every delivery", func() bool {
		n := 0
		for _, h := range hooks {
			att, _ := d.Attempts(context.Background(), "acme", h.ID)
			n += len(att)
		}
		return n == 60
	})
	att, err := d.Attempts(context.Background(), "acme", hooks[0].ID)
	if err != nil || len(att) != 2 || att[0].Outcome != "delivered" {
		t.Fatalf("attempt log before the sweep: %+v, %v", att, err)
	}
	if n, err := dispatch.SweepAttempts(d); err != nil || n != 0 {
		t.Fatalf("a sweep before the TTL removed %d entries (%v)", n, err)
	}
	offset.Store(int64(25 * time.Hour))
	if n, err := dispatch.SweepAttempts(d); err != nil || n != 60 {
		t.Fatalf("a sweep past the TTL removed %d entries (%v), want 60", n, err)
	}
	if att, _ := d.Attempts(context.Background(), "acme", hooks[0].ID); len(att) != 0 {
		t.Fatalf("attempt log after the sweep: %+v", att)
	}
}

// Hooks with nothing to deliver (an unknown source, or quarantined) get no
// rows and cost nothing but their seq: the checkpoint still passes them,
// so the WAL behind them can go.
func TestHooksWithoutSinksMoveTheCheckpoint(t *testing.T) {
	fk := newFakeSinks(nil)
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	d := n.disp.Load()
	e := n.commit("acme", 0)
	for i := range 20 {
		h := envelope.Envelope{TenantID: "acme", SourceID: "gone", ReceivedAt: time.Now().UnixNano(), Body: []byte{byte(i)}}
		if i%2 == 1 {
			h.SourceID, h.Verification.Quarantined = "src", true
		}
		req := wal.AcquireRequest()
		req.Buf = h.AppendTo(req.Buf)
		wal.SealPayload(req.Buf)
		if err := n.wal.Commit(req); err != nil {
			t.Fatal(err)
		}
		wal.ReleaseRequest(req)
	}
	waitFor(t, 5*time.Second, "the checkpoint past every hook", func() bool { return d.Checkpoint() == n.wal.LastSeq() })
	waitFor(t, 5*time.Second, "the one deliverable hook", func() bool { return fk.ok.Load() == 2 })
	if fk.delivered("a", e.ID) != 1 || fk.calls.Load() != 2 {
		t.Fatalf("%d attempts; only the hook of a source with sinks, not quarantined, is delivered", fk.calls.Load())
	}
	keys, err := n.meta.Census()
	if err != nil {
		t.Fatal(err)
	}
	if rows := keys["rows"]; rows != 0 {
		t.Fatalf("%d rows left; hooks without sinks must not get any", rows)
	}
}

// A meta store that cannot write stops the node (DESIGN.md §6 item 8):
// the failed synced checkpoint is fatal, and the checkpoint does not move
// past rows that may not be durable. The node is left as a killed process
// would be: not closed.
func TestMetaWriteFailureIsFatal(t *testing.T) {
	var broken atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if broken.Load() && (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileWrite) {
			return errors.New("injected: disk gone")
		}
		return nil
	})
	fk := newFakeSinks(func(string, *dispatch.Delivery) error { return &dispatch.Error{Status: 503, Err: errors.New("down")} })
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) { s.MaxAttempts = 1 }), expectFatal: true,
		metaFS: func(fs vfs.FS) vfs.FS { return errorfs.Wrap(fs, inj) }})
	d := n.disp.Load()
	n.commit("acme", 0)
	waitFor(t, 5*time.Second, "the first checkpoint", func() bool { return d.Checkpoint() == 1 })
	broken.Store(true)
	n.commit("acme", 1)
	select {
	case err := <-n.fatal:
		t.Logf("fatal, as it must be: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("a meta store that cannot write did not stop the node")
	}
	if got := d.Checkpoint(); got != 1 {
		t.Fatalf("the checkpoint moved to %d over rows that were never synced", got)
	}
}
