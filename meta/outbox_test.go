package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// change commits one audited change of tenant: a key of its own, the
// audit row and the event.
func change(t testing.TB, s *Store, tenant, subject string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	b.PutSource(tenant, subject, []byte(`{}`))
	row := AuditRow{At: time.Now(), Principal: "ops", Action: "source.create", Tenant: tenant, Entity: "source/" + subject,
		Event: Event{Type: EventType("source", "created"), Subject: subject, Data: json.RawMessage(`{"name":"` + subject + `"}`)}}
	if err := b.AddAudit(row); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(NoSync); err != nil { // an outbox batch commits synced whatever it asks
		t.Fatal(err)
	}
}

func allEvents(t testing.TB, s *Store) []EventRecord {
	t.Helper()
	var out []EventRecord
	if err := s.Events(0, s.EventsDurable(), func(ev *EventRecord) (bool, error) { out = append(out, *ev); return false, nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// Events are numbered 1, 2, 3... in commit order, with ids that increase
// with them, carry the node ordinal and are never a hook's id; each is
// in its tenant's range and in the node's order.
func TestEventNumbering(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	s.SetEventNode(7)
	change(t, s, "acme", "a")
	change(t, s, "globex", "b")
	change(t, s, "acme", "c")
	evs := allEvents(t, s)
	if len(evs) != 3 || s.EventsDurable() != 3 {
		t.Fatalf("events %+v, durable %d", evs, s.EventsDurable())
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) || ev.ID.Node() != 7 {
			t.Fatalf("event %d: seq %d node %d", i, ev.Seq, ev.ID.Node())
		}
		if seq, ok := EventSeqOf(ev.ID); !ok || seq != ev.Seq {
			t.Fatalf("event %d: EventSeqOf(%s) = %d, %t", i, ev.ID, seq, ok)
		}
		if i > 0 && ev.ID.String() <= evs[i-1].ID.String() {
			t.Fatalf("ids do not increase: %s then %s", evs[i-1].ID, ev.ID)
		}
		if i > 0 && ev.Time.Before(evs[i-1].Time) {
			t.Fatalf("times go back: %s then %s", evs[i-1].Time, ev.Time)
		}
	}
	if evs[1].Tenant != "globex" || evs[1].Subject != "b" || evs[1].Type != "io.ankusa.source.created" || string(evs[1].Data) != `{"name":"b"}` {
		t.Fatalf("event 2: %+v", evs[1])
	}
	var acme []string
	if err := s.TenantEvents("acme", 0, func(ev *EventRecord) (bool, error) { acme = append(acme, ev.Subject); return false, nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(acme) != "[a c]" {
		t.Fatalf("acme's events: %v", acme)
	}
	if _, ok := EventSeqOf(EventID(time.Now(), 7, 3)); !ok {
		t.Fatal("EventID's id is not a lifecycle event id")
	}
	if last, err := s.LastTenantEvent("acme"); err != nil || last != 3 {
		t.Fatalf("LastTenantEvent(acme) = %d, %v", last, err)
	}
}

// An audit row without its event, or without a tenant, is a bug of the
// caller: the batch refuses it, and nothing is written.
func TestAuditWithoutEventRefused(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	b := s.NewBatch()
	defer b.Close()
	if err := b.AddAudit(AuditRow{At: time.Now(), Action: "x", Tenant: "acme"}); err == nil {
		t.Fatal("an audit row without an event was taken")
	}
	if err := b.AddAudit(AuditRow{At: time.Now(), Action: "x", Event: Event{Type: "io.ankusa.x.y"}}); err == nil {
		t.Fatal("an event without a tenant was taken")
	}
	if !b.Empty() {
		t.Fatal("a refused row left writes in the batch")
	}
}

// The publisher's trap: a reader following the outbox in seq order while
// many writers commit at once must never see an event appear behind one
// it has passed. Here readers race 8 writers; each reader keeps its own
// cursor, as the publisher does, and must end with every event, each
// once, in order.
func TestOutboxReaderRacesWriters(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers, each = 8, 60
	var wg sync.WaitGroup
	var done atomic.Bool
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				change(t, s, fmt.Sprintf("t%d", w%3), fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	type seen struct {
		seqs []uint64
		err  error
	}
	readers := make([]seen, 3)
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			var cursor uint64
			for {
				finished := done.Load()
				err := s.Events(cursor, s.EventsDurable(), func(ev *EventRecord) (bool, error) {
					if ev.Seq != cursor+1 {
						return true, fmt.Errorf("after %d came %d", cursor, ev.Seq)
					}
					cursor = ev.Seq
					readers[r].seqs = append(readers[r].seqs, ev.Seq)
					return false, nil
				})
				if err != nil {
					readers[r].err = err
					return
				}
				if finished && cursor == s.EventsDurable() {
					return
				}
				select {
				case <-s.EventsWake():
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rg.Wait()
	for r, got := range readers {
		if got.err != nil {
			t.Fatalf("reader %d: %v", r, got.err)
		}
		if len(got.seqs) != writers*each {
			t.Fatalf("reader %d saw %d events, want %d", r, len(got.seqs), writers*each)
		}
	}
	if n := len(allEvents(t, s)); n != writers*each {
		t.Fatalf("the outbox holds %d events, want %d", n, writers*each)
	}
}

// The numbering survives a restart and a sweep of everything: no id is
// used twice, and the clock stepping back does not make times go back.
func TestEventFloorSurvivesSweep(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	for i := range 5 {
		change(t, s, "acme", fmt.Sprint(i))
	}
	last := allEvents(t, s)[4]
	if n, err := s.SweepEvents(time.Now().Add(time.Hour), s.EventsDurable(), 100); err != nil || n != 5 {
		t.Fatalf("SweepEvents = %d, %v; want 5", n, err)
	}
	if evs := allEvents(t, s); len(evs) != 0 {
		t.Fatalf("after the sweep: %+v", evs)
	}
	var acme int
	_ = s.TenantEvents("acme", 0, func(*EventRecord) (bool, error) { acme++; return false, nil })
	if acme != 0 {
		t.Fatalf("the sweep left %d of acme's events", acme)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: "meta", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	change(t, s, "acme", "after")
	evs := allEvents(t, s)
	if len(evs) != 1 || evs[0].Seq != 6 || evs[0].ID.String() <= last.ID.String() || evs[0].Time.Before(last.Time) {
		t.Fatalf("after a restart: %+v (the last before: %+v)", evs, last)
	}
}

// A sweep takes only events older than its time and at most up to its
// seq (the publisher's checkpoint), oldest first.
func TestSweepBounds(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	for i := range 6 {
		change(t, s, fmt.Sprintf("t%d", i%2), fmt.Sprint(i))
	}
	if n, err := s.SweepEvents(time.Now().Add(-time.Hour), 6, 100); err != nil || n != 0 {
		t.Fatalf("a sweep of nothing old: %d, %v", n, err)
	}
	if n, err := s.SweepEvents(time.Now().Add(time.Hour), 2, 100); err != nil || n != 2 {
		t.Fatalf("a sweep up to the checkpoint 2: %d, %v", n, err)
	}
	if n, err := s.SweepEvents(time.Now().Add(time.Hour), 6, 3); err != nil || n != 3 {
		t.Fatalf("a sweep limited to 3: %d, %v", n, err)
	}
	evs := allEvents(t, s)
	if len(evs) != 1 || evs[0].Seq != 6 {
		t.Fatalf("left: %+v", evs)
	}
}

// The erase's final batch keeps the other tenants' events and every
// event after the bound, and leaves the final one: a replay of the
// tenant then yields it alone. It writes the tombstone (merging the
// ordinals of an earlier erase), frees the name, drops the counters and
// the progress row.
func TestFinishErase(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	change(t, s, "acme", "a")
	change(t, s, "globex", "g")
	change(t, s, "acme", "b")
	if err := s.SetTenantSynced("acme", 7); err != nil {
		t.Fatal(err)
	}
	if err := s.SetEraseProgress("acme", []byte(`{"tenant":"acme"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDispatchCheckpointWith(1, map[uint32]TenantCounts{7: {Hooks: 3, Bytes: 300}}); err != nil {
		t.Fatal(err)
	}
	upTo, err := s.LastTenantEvent("acme")
	if err != nil || upTo != 3 {
		t.Fatalf("LastTenantEvent = %d, %v", upTo, err)
	}
	final := AuditRow{At: time.Now(), Principal: "ops", Action: "tenant.delete", Entity: "tenant/acme",
		Event: Event{Type: EventType("tenant", "deleted"), Subject: "acme"}}
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	tomb, rec, err := s.FinishErase(Tombstone{Tenant: "acme", SeqAtClose: 99, ErasedAt: at, Hooks: 3, Bytes: 300}, 7, true, upTo, final)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 4 || rec.Type != "io.ankusa.tenant.deleted" || rec.Tenant != "acme" || string(rec.Data) != "null" {
		t.Fatalf("final event %+v", rec)
	}
	if fmt.Sprint(tomb.Ordinals) != "[7]" {
		t.Fatalf("tombstone %+v", tomb)
	}
	var got []string
	for _, ev := range allEvents(t, s) {
		got = append(got, ev.Tenant+"/"+ev.Subject)
	}
	if fmt.Sprint(got) != "[globex/g acme/acme]" {
		t.Fatalf("outbox after the final batch: %v", got)
	}
	census, err := s.Census()
	if err != nil {
		t.Fatal(err)
	}
	if census["events"] != 2 || census["event-order"] != 2 || census["tenant"] != 0 || census["tenant-counts"] != 0 ||
		census["erase"] != 0 || census["erased"] != 1 {
		t.Fatalf("census %v: the final batch left keys, or wrote no tombstone", census)
	}
	// The name sends again (ordinal 9), and is erased again: the
	// tombstone names both ordinals, the latest close and time.
	if err := s.SetTenantSynced("acme", 9); err != nil {
		t.Fatal(err)
	}
	final.At = time.Now()
	if _, _, err := s.FinishErase(Tombstone{Tenant: "acme", SeqAtClose: 150, ErasedAt: at.Add(time.Hour)}, 9, true, 0, final); err != nil {
		t.Fatal(err)
	}
	got2, found, err := s.TombstoneOf("acme")
	if err != nil || !found || fmt.Sprint(got2.Ordinals) != "[7 9]" || got2.SeqAtClose != 150 || !got2.Gone(7) || !got2.Gone(9) || got2.Gone(8) {
		t.Fatalf("tombstone after the second erase: %+v, %v, %v", got2, found, err)
	}
	ords, err := s.ErasedOrdinals()
	if err != nil || len(ords) != 2 || ords[7] != "acme" || ords[9] != "acme" {
		t.Fatalf("ErasedOrdinals = %v, %v", ords, err)
	}
	if _, ok, _ := s.TenantInfo("acme"); ok {
		t.Fatal("the name still maps to an ordinal after its erase")
	}
}

// A stored event that does not decode stops a reader, naming it.
func TestDamagedEvent(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	change(t, s, "acme", "a")
	if err := s.set(eventKey("acme", 1), []byte(`{"id":`), Sync); err != nil {
		t.Fatal(err)
	}
	err := s.Events(0, 1, func(*EventRecord) (bool, error) { return false, nil })
	if !errors.Is(err, ErrBadRecord) {
		t.Fatalf("Events over a damaged record: %v", err)
	}
	if err := s.set(eventKey("acme", 1), []byte(`{"id":"evt_01KB8J283M003G000000000026","type":"x"}`), Sync); err != nil {
		t.Fatal(err)
	}
	err = s.TenantEvents("acme", 0, func(*EventRecord) (bool, error) { return false, nil })
	if !errors.Is(err, ErrBadRecord) {
		t.Fatalf("TenantEvents over a record whose id is a hook's: %v", err)
	}
}

// The publisher's checkpoint reads back as it was moved.
func TestEventsPublished(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	if cp, err := s.EventsPublished(); err != nil || cp != 0 {
		t.Fatalf("fresh checkpoint %d, %v", cp, err)
	}
	if err := s.SetEventsPublished(42); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.EventsPublished(); err != nil || cp != 42 {
		t.Fatalf("checkpoint %d, %v", cp, err)
	}
	if err := s.set([]byte(keyEventPublished), []byte{1}, Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EventsPublished(); !errors.Is(err, ErrBadRecord) {
		t.Fatalf("a damaged checkpoint: %v", err)
	}
}

// BenchmarkOutboxCommit measures operator changes with their events
// committed from many goroutines at once (the group commit).
func BenchmarkOutboxCommit(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			change(b, s, "acme", fmt.Sprint(n.Add(1)))
		}
	})
}

// BenchmarkPlainSyncedCommit is BenchmarkOutboxCommit's batch without its
// event, committed synced by pebble's own group commit: the baseline the
// outbox's committer is measured against.
func BenchmarkPlainSyncedCommit(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			batch := s.NewBatch()
			name := fmt.Sprint(n.Add(1))
			batch.PutSource("acme", name, []byte(`{}`))
			v, _ := json.Marshal(AuditRow{At: time.Now(), Principal: "ops", Action: "source.create", Tenant: "acme", Entity: "source/" + name})
			batch.set(AuditKey(time.Now().UnixNano(), auditN.Add(1)), v)
			if err := batch.Commit(Sync); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	})
}
