package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Redeliver sends a delivered hook to one sink again (and only that
// sink), retries a dead letter as Retry does, and refuses a hook whose
// delivery to the sink is pending, an unknown sink, another tenant's
// hook, and a change without its audit row.
func TestRedeliver(t *testing.T) {
	var broken atomic.Bool
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		switch {
		case sink == "b" && broken.Load():
			// Pending for an hour: the row stays pending.
			return &dispatch.Error{Status: 503, RetryAfter: time.Hour, Err: errors.New("come back later")}
		case sink == "a" && broken.Load():
			return &dispatch.Error{Status: 500, Err: errors.New("receiver down")}
		}
		return nil
	})
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: twoSinks(func(s *config.Sink) { s.MaxAttempts = 2 })})
	defer n.close()
	d := n.disp.Load()
	ctx := context.Background()
	audit := func(id envelope.ID, sink string) meta.AuditRow {
		return meta.AuditRow{At: time.Now().UTC(), Principal: "ops", Action: "hooks.redeliver", Tenant: "acme", Outcome: "ok",
			Event: meta.Event{Type: meta.EventType("delivery", "redelivered"), Subject: id.String(), Data: json.RawMessage(fmt.Sprintf(`{"event_id":%q,"sink":%q}`, id, sink))}}
	}

	hooks := n.commitMany(3, 1, func(int) string { return "acme" })
	waitFor(t, 10*time.Second, "every first delivery", func() bool { return fk.ok.Load() == 6 })
	h := hooks[1]
	if err := d.Redeliver(ctx, "acme", h.ID, "a", audit(h.ID, "a")); err != nil {
		t.Fatalf("redeliver a delivered hook: %v", err)
	}
	waitFor(t, 10*time.Second, "the redelivery", func() bool { return fk.delivered("a", h.ID) == 2 })
	time.Sleep(100 * time.Millisecond)
	if got := fk.delivered("b", h.ID); got != 1 {
		t.Fatalf("sink b got the hook %d times after a redelivery to a, want once", got)
	}
	for _, c := range []struct {
		what         string
		tenant, sink string
		audit        meta.AuditRow
		want         error
	}{
		{"an unknown sink", "acme", "nope", audit(h.ID, "nope"), dispatch.ErrNoSink},
		{"another tenant's hook", "globex", "a", audit(h.ID, "a"), dispatch.ErrNoDelivery},
		{"without its audit row", "acme", "a", meta.AuditRow{}, nil},
	} {
		err := d.Redeliver(ctx, c.tenant, h.ID, c.sink, c.audit)
		if c.want == nil && err == nil || c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("redeliver %s: %v, want %v", c.what, err, c.want)
		}
	}

	// A hook whose delivery to b is pending (its receiver asked for an
	// hour) and whose delivery to a is dead.
	broken.Store(true)
	late := n.commitMany(1, 1, func(int) string { return "acme" })[0]
	waitFor(t, 10*time.Second, "the dead letter", func() bool {
		rows, _, err := d.Dead(ctx, "acme", dispatch.Filter{}, "", 10)
		return err == nil && len(rows) == 1
	})
	waitFor(t, 10*time.Second, "b's first attempt", func() bool { return fk.attemptsOf("b", late.ID) == 1 })
	if err := d.Redeliver(ctx, "acme", late.ID, "b", audit(late.ID, "b")); !errors.Is(err, dispatch.ErrPending) {
		t.Fatalf("redeliver while b's delivery is pending: %v, want ErrPending", err)
	}
	broken.Store(false)
	if err := d.Redeliver(ctx, "acme", late.ID, "a", audit(late.ID, "a")); err != nil {
		t.Fatalf("redeliver a dead letter: %v", err)
	}
	waitFor(t, 10*time.Second, "the dead letter delivered", func() bool { return fk.delivered("a", late.ID) == 1 })
	if rows, _, err := d.Dead(ctx, "acme", dispatch.Filter{}, "", 10); err != nil || len(rows) != 0 {
		t.Fatalf("dead letters after the redelivery: %d, %v; want none", len(rows), err)
	}
	all, err := n.meta.Audit(time.Time{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, a := range all {
		if a.Action == "hooks.redeliver" {
			rows++
		}
	}
	if rows != 2 {
		t.Fatalf("%d audit rows of redeliveries, want 2 (the refused ones leave none)", rows)
	}
}
