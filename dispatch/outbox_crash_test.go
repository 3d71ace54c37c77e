package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/outboxcrash"
	"github.com/ankusa/ankusa/meta"
)

// Acceptance 1 of the lifecycle events, the crash half, for the changes
// dispatch writes: a dead letter retried, dropped, all dropped; a
// quarantined hook released, dropped, all dropped. Each is written with
// the meta store crashed at every sync point made meanwhile: after any
// crash, the change (its rows), its audit row and its event are all there
// or none is, and the next event is numbered above every survivor
// (outboxcrash). The other changes: lifecycle's TestOutboxCrash*.

// auditOf is the audit row the admin API hands dispatch with a change,
// and its event (admin/deliveries.go, admin/quarantine_policy.go).
func auditOf(action, tenant, entity, evType, subject string, data any) meta.AuditRow {
	d, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return meta.AuditRow{At: time.Now().UTC(), Principal: "ops", Action: action, Tenant: tenant, Entity: entity, Outcome: "ok",
		Event: meta.Event{Type: evType, Subject: subject, Data: d}}
}

// crashNode is a node whose meta store has sync points, and the rig that
// crashes it; sink edits its sinks' specs (nil: as they are).
func crashNode(t *testing.T, fk *fakeSinks, seed uint64, sink func(*config.Sink)) (*node, *outboxcrash.Rig) {
	t.Helper()
	mem := vfs.NewCrashableMem()
	var fs *outboxcrash.FS
	n := openNode(t, mem, fk, nodeOptions{sinks: twoSinks(sink), source: githubSource,
		metaFS: func(under vfs.FS) vfs.FS { fs = outboxcrash.Wrap(under); return fs }})
	n.meta.SetEventNode(3)
	rig := &outboxcrash.Rig{Mem: mem, FS: fs, Dir: "data/meta", Node: 3, Store: n.meta, Random: 4, RNG: rand.New(rand.NewPCG(seed, 23))}
	// The rows dispatch wrote unsynced become durable with the next
	// synced write: the tenant's ordinal, written again as it is.
	rig.Settle = func() error {
		ord, ok := n.wal.Ordinal("acme")
		if !ok {
			return errors.New("tenant acme has no ordinal")
		}
		return n.meta.SetTenantSynced("acme", ord)
	}
	return n, rig
}

// rowState is what a dead-letter change changes of row id: whether it is
// there, and its max_age clock (a retry restarts it; attempts after the
// retry do not).
func rowState(id meta.RowID) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		row, found, err := s.Row(id)
		if !found {
			return "absent", err
		}
		return fmt.Sprintf("started %d", row.StartedAt), err
	}
}

// revivedSince is how many of rows are there with their max_age clock
// restarted at or after since (retried; the attempts after do not move
// it).
func revivedSince(rows []meta.RowID, since int64) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		n := 0
		for _, id := range rows {
			row, found, err := s.Row(id)
			if err != nil {
				return "", err
			}
			if found && row.StartedAt >= since {
				n++
			}
		}
		return fmt.Sprintf("%d of %d retried", n, len(rows)), nil
	}
}

// deadRowCount is how many dead letters tenant ord has.
func deadRowCount(ord uint32) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		n := 0
		err := s.DeadRows(ord, nil, func(meta.RowID, *meta.Delivery) (bool, error) { n++; return false, nil })
		return fmt.Sprintf("%d dead", n), err
	}
}

// penState is what a pen change changes of hook e: its pen row, and the
// delivery rows a release gives it.
func penState(e envelope.Envelope) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		held, err := s.PenExists(e.TenantOrdinal, e.Seq)
		rows := 0
		for _, sink := range []string{"a", "b"} {
			_, found, rerr := s.Row(meta.RowID{Ord: e.TenantOrdinal, Seq: e.Seq, Sink: sink})
			if found {
				rows++
			}
			err = errors.Join(err, rerr)
		}
		return fmt.Sprintf("held %v, %d delivery rows", held, rows), err
	}
}

// penCount is how many hooks tenant ord holds in the pen.
func penCount(ord uint32) func(*meta.Store) (string, error) {
	return func(s *meta.Store) (string, error) {
		n := 0
		_, err := s.PenRows(ord, 0, func(uint64, *meta.PenRow) bool { n++; return false })
		return fmt.Sprintf("%d held", n), err
	}
}

func TestOutboxCrashDeadLetters(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
	})
	n, rig := crashNode(t, fk, 1, nil)
	defer n.close()
	d := n.disp.Load()
	ctx := context.Background()
	hooks := []envelope.Envelope{n.commit("acme", 1), n.commit("acme", 2), n.commit("acme", 3)}
	allDead := func(n int) {
		waitFor(t, 10*time.Second, fmt.Sprintf("%d dead letters", n), func() bool {
			rows, _, err := d.Dead(ctx, "acme", dispatch.Filter{}, "", 100)
			return err == nil && len(rows) == n
		})
	}
	allDead(2 * len(hooks))
	ord := hooks[0].TenantOrdinal
	one := func(e envelope.Envelope, sink string) meta.RowID { return meta.RowID{Ord: ord, Seq: e.Seq, Sink: sink} }
	data := func(e envelope.Envelope, sink string) map[string]string {
		return map[string]string{"event_id": e.ID.String(), "sink": sink}
	}
	id0 := hooks[0].ID.String()
	res := rig.Write(t, outboxcrash.Change{Name: "dead letter retry", Tenant: "acme", Action: "deliveries.retry", Entity: id0,
		EventType: "io.ankusa.delivery.retried", Subject: id0, State: rowState(one(hooks[0], "a"))},
		func() error {
			return d.Retry(ctx, "acme", hooks[0].ID, "a", auditOf("deliveries.retry", "acme", id0, "io.ankusa.delivery.retried", id0, data(hooks[0], "a")))
		})
	t.Logf("retry: %+v", res)
	allDead(2 * len(hooks)) // the retried row failed again
	id1 := hooks[1].ID.String()
	res = rig.Write(t, outboxcrash.Change{Name: "dead letter drop", Tenant: "acme", Action: "deliveries.drop", Entity: id1,
		EventType: "io.ankusa.delivery.dropped", Subject: id1, State: rowState(one(hooks[1], "b"))},
		func() error {
			return d.Drop(ctx, "acme", hooks[1].ID, "b", auditOf("deliveries.drop", "acme", id1, "io.ankusa.delivery.dropped", id1, data(hooks[1], "b")))
		})
	t.Logf("drop: %+v", res)
	var rest []meta.RowID
	for _, e := range hooks {
		for _, sink := range []string{"a", "b"} {
			if e.ID != hooks[1].ID || sink != "b" {
				rest = append(rest, one(e, sink))
			}
		}
	}
	since := time.Now().UnixNano()
	res = rig.Write(t, outboxcrash.Change{Name: "dead letter retry all", Tenant: "acme", Action: "deliveries.retry_all",
		EventType: "io.ankusa.delivery.bulk_retried", Subject: "acme", State: revivedSince(rest, since)},
		func() error {
			n, err := d.RetryAll(ctx, "acme", dispatch.Filter{}, func(k int) meta.AuditRow {
				return auditOf("deliveries.retry_all", "acme", "", "io.ankusa.delivery.bulk_retried", "acme", map[string]int{"count": k})
			})
			if err == nil && n != len(rest) {
				err = fmt.Errorf("retried %d dead letters, want %d", n, len(rest))
			}
			return err
		})
	t.Logf("retry all: %+v", res)
	allDead(len(rest)) // the retried rows failed again
	res = rig.Write(t, outboxcrash.Change{Name: "dead letter drop all", Tenant: "acme", Action: "deliveries.drop_all",
		EventType: "io.ankusa.delivery.bulk_dropped", Subject: "acme", State: deadRowCount(ord)},
		func() error {
			n, err := d.DropAll(ctx, "acme", dispatch.Filter{}, func(k int) meta.AuditRow {
				return auditOf("deliveries.drop_all", "acme", "", "io.ankusa.delivery.bulk_dropped", "acme", map[string]int{"count": k})
			})
			if err == nil && n != 2*len(hooks)-1 {
				err = fmt.Errorf("dropped %d dead letters, want %d", n, 2*len(hooks)-1)
			}
			return err
		})
	t.Logf("drop all: %+v", res)
}

func TestOutboxCrashQuarantine(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Status: 410, Permanent: true, Err: errors.New("gone")}
	})
	n, rig := crashNode(t, fk, 2, nil)
	defer n.close()
	d := n.disp.Load()
	ctx := context.Background()
	var held []envelope.Envelope
	for i := range 4 {
		held = append(held, n.commitQuarantined("acme", i, "not-the-secret"))
	}
	waitFor(t, 5*time.Second, "the pen rows", func() bool { return len(penList(t, d, "acme")) == len(held) })
	ord := held[0].TenantOrdinal
	penAudit := func(action, verb string, e envelope.Envelope, forced *bool) meta.AuditRow {
		data := map[string]any{"event_id": e.ID.String(), "source": "src"}
		if forced != nil {
			data["forced"] = *forced
		}
		return auditOf(action, "acme", e.ID.String(), "io.ankusa.quarantine."+verb, e.ID.String(), data)
	}
	forced := true
	id0 := held[0].ID.String()
	res := rig.Write(t, outboxcrash.Change{Name: "quarantine release", Tenant: "acme", Action: "quarantine.release_forced", Entity: id0,
		EventType: "io.ankusa.quarantine.released", Subject: id0, State: penState(held[0])},
		func() error {
			out, err := d.Release(ctx, "acme", held[0].ID, dispatch.ReleaseForced, penAudit("quarantine.release_forced", "released", held[0], &forced))
			if err == nil && out.Rows != 2 {
				err = fmt.Errorf("the release made %d delivery rows, want 2", out.Rows)
			}
			return err
		})
	t.Logf("release: %+v", res)
	id1 := held[1].ID.String()
	res = rig.Write(t, outboxcrash.Change{Name: "quarantine drop", Tenant: "acme", Action: "quarantine.drop", Entity: id1,
		EventType: "io.ankusa.quarantine.dropped", Subject: id1, State: penState(held[1])},
		func() error {
			return d.DropQuarantined(ctx, "acme", held[1].ID, penAudit("quarantine.drop", "dropped", held[1], nil))
		})
	t.Logf("drop: %+v", res)
	res = rig.Write(t, outboxcrash.Change{Name: "quarantine drop all", Tenant: "acme", Action: "quarantine.drop_all",
		EventType: "io.ankusa.quarantine.bulk_dropped", Subject: "acme", State: penCount(ord)},
		func() error {
			n, err := d.DropAllQuarantined(ctx, "acme", dispatch.Filter{}, func(k int) meta.AuditRow {
				return auditOf("quarantine.drop_all", "acme", "", "io.ankusa.quarantine.bulk_dropped", "acme", map[string]int{"count": k})
			})
			if err == nil && n != len(held)-2 {
				err = fmt.Errorf("dropped %d held hooks, want %d", n, len(held)-2)
			}
			return err
		})
	t.Logf("drop all: %+v", res)
}

// TestOutboxCrashSourceDeadLettered: the undelivered rows of a removed
// source become dead letters with the change's audit row and event, in
// one batch (fewer rows than a chunk, none held by an attempt: their
// first attempts failed and their next is an hour away).
func TestOutboxCrashSourceDeadLettered(t *testing.T) {
	fk := newFakeSinks(func(string, *dispatch.Delivery) error {
		return &dispatch.Error{Status: 503, Err: errors.New("down")}
	})
	n, rig := crashNode(t, fk, 3, func(s *config.Sink) {
		s.RetryBase, s.RetryMax = config.Duration(time.Hour), config.Duration(time.Hour)
	})
	defer n.close()
	d := n.disp.Load()
	hooks := []envelope.Envelope{n.commit("acme", 1), n.commit("acme", 2), n.commit("acme", 3)}
	waitFor(t, 10*time.Second, "every first attempt", func() bool {
		for _, e := range hooks {
			if fk.attemptsOf("a", e.ID) == 0 || fk.attemptsOf("b", e.ID) == 0 {
				return false
			}
		}
		return true
	})
	res := rig.Write(t, outboxcrash.Change{Name: "source dead-lettered", Tenant: "acme", Action: "source.dead_letter", Entity: "source/src",
		EventType: "io.ankusa.source.dead_lettered", Subject: "src", State: deadRowCount(hooks[0].TenantOrdinal)},
		func() error {
			moved, err := d.DeadLetterSource("src", nil, auditOf("source.dead_letter", "acme", "source/src", "io.ankusa.source.dead_lettered", "src", map[string]string{"source": "src"}))
			if err == nil && moved != int64(2*len(hooks)) {
				err = fmt.Errorf("dead-lettered %d rows, want %d", moved, 2*len(hooks))
			}
			return err
		})
	t.Logf("source dead-lettered: %+v", res)
}
