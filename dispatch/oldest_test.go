package dispatch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// TestOldestUndelivered: the receipt time of the oldest hook with a row
// (pending or dead; delivered hooks have none), across tenants, and
// nothing once every row is gone.
func TestOldestUndelivered(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		switch d.Envelope.TenantID {
		case "dead":
			return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
		case "live":
			if failing.Load() {
				return &dispatch.Error{Status: 503, Err: errors.New("down")}
			}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(nil)})
	defer n.close()
	d := n.disp.Load()
	if at, ok := d.OldestUndelivered(); ok {
		t.Fatalf("OldestUndelivered with no hooks: %v, true", at)
	}
	now := time.Now().Truncate(time.Millisecond)
	commitAt := func(tenant string, at time.Time) envelope.Envelope {
		t.Helper()
		e, err := commitEnvelope(n.wal.Commit, envelope.Envelope{TenantID: tenant, SourceID: "src", ReceivedAt: at.UnixNano(),
			Body: []byte(`{}`), Verification: envelope.Verification{Verifier: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	okHook := commitAt("ok", now.Add(-3*time.Hour))
	commitAt("dead", now.Add(-2*time.Hour))
	for i := range 5 {
		commitAt("live", now.Add(-time.Hour+time.Duration(i)*time.Minute))
	}
	commitAt("dead", now.Add(-30*time.Minute))
	waitFor(t, 5*time.Second, "the dead letters and the delivery", func() bool {
		rows, _, _ := d.Dead(context.Background(), "dead", dispatch.Filter{}, "", 100)
		return len(rows) == 4 && fk.delivered("a", okHook.ID) == 1
	})
	check := func(want time.Time, wantOK bool) {
		t.Helper()
		at, ok := d.OldestUndelivered()
		if ok != wantOK || (ok && !at.Equal(want)) {
			t.Fatalf("OldestUndelivered: %v, %v; want %v, %v", at, ok, want, wantOK)
		}
	}
	check(now.Add(-2*time.Hour), true) // the dead letter counts
	if _, err := d.DropAll(context.Background(), "dead", dispatch.Filter{}, func(k int) meta.AuditRow {
		return auditOf("deliveries.drop_all", "dead", "", "io.ankusa.delivery.bulk_dropped", "dead", map[string]int{"count": k})
	}); err != nil {
		t.Fatal(err)
	}
	check(now.Add(-time.Hour), true)
	failing.Store(false)
	waitFor(t, 10*time.Second, "the retries", func() bool { _, ok := d.OldestUndelivered(); return !ok })
}
