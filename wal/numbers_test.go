package wal_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// TestNumberingFloor: Open resumes numbering above every floor the meta
// store records, each on its own (DESIGN.md §6 item 1): the clean-close
// checkpoint, the segment catalogue (it outlives the WAL files sealed into
// it) and the dispatch checkpoint (rows are keyed by seq: a seq at or
// below it is never given again, even after the log was cut). Drop any one
// from wal.ReadFloor and its row fails.
func TestNumberingFloor(t *testing.T) {
	id := func(ms, seq uint64) envelope.ID { return envelope.MakeID(ms, testNode, seq) }
	for _, tc := range []struct {
		name    string
		meta    testMeta
		wantSeq uint64
		idAbove envelope.ID
	}{
		{"checkpoint", testMeta{ckptSeq: 40, ckptID: id(startMs+3_600_000, 40)}, 41, id(startMs+3_600_000, 40)},
		{"catalogue", testMeta{ckptSeq: 3, catSeq: 70, catID: id(startMs+7_200_000, 70)}, 71, id(startMs+7_200_000, 70)},
		{"dispatch checkpoint", testMeta{ckptSeq: 3, catSeq: 9, dispSeq: 90}, 91, envelope.ID{}},
		{"highest of the three", testMeta{ckptSeq: 12, catSeq: 13, dispSeq: 11, catID: id(startMs+60_000, 13)}, 14, id(startMs+60_000, 13)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			m := tc.meta
			w := openWAL(t, wal.Options{FS: fs, Now: newClock(startMs, time.Millisecond).Now, Meta: &m})
			if got := w.LastSeq(); got != tc.wantSeq-1 {
				t.Fatalf("LastSeq after Open = %d, want the floor %d", got, tc.wantSeq-1)
			}
			a := mustCommit(t, w, hook{tenant: "acme", tag: "first"})
			if a.Seq != tc.wantSeq {
				t.Fatalf("first seq %d, want %d", a.Seq, tc.wantSeq)
			}
			if bytes.Compare(a.ID[:], tc.idAbove[:]) <= 0 {
				t.Fatalf("first id %v is not above the floor %v", a.ID, tc.idAbove)
			}
			closeWAL(t, w)
		})
	}
}

// TestNumbersTenants: ordinals start at 1, are offered before they are
// taken, are never given twice, and stop at the cap.
func TestNumbersTenants(t *testing.T) {
	n := wal.NewNumbers(testNode, wal.Floor{Tenants: map[string]uint32{"old": 4}}, 6)
	if o, isNew, err := n.Tenant([]byte("old")); o != 4 || isNew || err != nil {
		t.Fatalf("known tenant: %d %v %v", o, isNew, err)
	}
	o, isNew, err := n.Tenant([]byte("a"))
	if o != 5 || !isNew || err != nil {
		t.Fatalf("new tenant: %d %v %v, want 5 (above the floor's 4)", o, isNew, err)
	}
	if again, _, _ := n.Tenant([]byte("a")); again != o {
		t.Fatalf("offered twice: %d then %d", o, again)
	}
	n.AddTenant("a", o)
	if got, ok := n.Ordinal("a"); !ok || got != 5 {
		t.Fatalf("Ordinal(a) = %d, %v", got, ok)
	}
	o, _, _ = n.Tenant([]byte("b"))
	n.AddTenant("b", o)
	if _, _, err := n.Tenant([]byte("c")); !errors.Is(err, wal.ErrTenantLimit) {
		t.Fatalf("a tenant past the cap: %v, want ErrTenantLimit", err)
	}
	// Ordinals 1..6 were given (the floor's 4 says 1..3 went before it,
	// to tenants renamed or erased since): the cap counts every one.
	if n.TenantCount() != 6 || !n.Full() {
		t.Fatalf("TenantCount = %d, Full = %v; want 6 ordinals given, full", n.TenantCount(), n.Full())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("AddTenant with an ordinal Tenant did not offer: no panic")
		}
	}()
	n.AddTenant("d", 42)
}

// TestCloseRecordsFloor: a clean Close records the last seq and id in the
// meta store (the clean-close checkpoint), so numbering resumes above them
// even once every file of the log is gone; a second Close writes nothing.
func TestCloseRecordsFloor(t *testing.T) {
	fs := vfs.NewMem()
	m := &testMeta{}
	w := openWAL(t, wal.Options{FS: fs, Now: newClock(startMs, time.Millisecond).Now, Meta: m})
	var last ack
	for i := range 3 {
		last = mustCommit(t, w, hook{tenant: "acme", tag: string(rune('a' + i))})
	}
	closeWAL(t, w)
	if m.ckptSeq != last.Seq || m.ckptID != last.ID {
		t.Fatalf("checkpoint after Close: seq %d id %v, want %d %v", m.ckptSeq, m.ckptID, last.Seq, last.ID)
	}
	m.ckptSeq = 0
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if m.ckptSeq != 0 {
		t.Fatal("a second Close wrote the checkpoint again")
	}
	// A fresh log directory: only the checkpoint tells where to resume.
	// (With the clean-close record this would be a log that lost its
	// acknowledged hooks, which Open refuses: recovery_acked_test.go.)
	m.ckptSeq, m.closed = last.Seq, 0
	w = openWAL(t, wal.Options{FS: vfs.NewMem(), Now: newClock(startMs, time.Millisecond).Now, Meta: m})
	if a := mustCommit(t, w, hook{tenant: "acme", tag: "after"}); a.Seq != last.Seq+1 || bytes.Compare(a.ID[:], last.ID[:]) <= 0 {
		t.Fatalf("after the files are gone: seq %d id %v, want seq %d and an id above %v", a.Seq, a.ID, last.Seq+1, last.ID)
	}
}

// TestOrdinalNeverReused: when the mirror and the log disagree on a
// tenant's ordinal, the log's wins, and the mirror's is not given to
// another tenant (DESIGN.md §6 item 2: ordinals are never reused).
func TestOrdinalNeverReused(t *testing.T) {
	fs := vfs.NewMem()
	w := openWAL(t, wal.Options{FS: fs, Meta: &testMeta{}})
	if a := mustCommit(t, w, hook{tenant: "acme", tag: "a"}); a.Ordinal != 1 {
		t.Fatalf("first tenant's ordinal %d, want 1", a.Ordinal)
	}
	closeWAL(t, w)
	var mirrored []uint32
	m := &testMeta{tenants: map[string]uint32{"acme": 9}, onTenant: func(_ string, o uint32) { mirrored = append(mirrored, o) }}
	w = openWAL(t, wal.Options{FS: fs, Meta: m})
	if o, _ := w.Ordinal("acme"); o != 1 {
		t.Fatalf("acme's ordinal after the reopen: %d, want the log's 1", o)
	}
	if b := mustCommit(t, w, hook{tenant: "beta", tag: "b"}); b.Ordinal != 10 {
		t.Fatalf("a new tenant got ordinal %d, want 10: 9 was given once", b.Ordinal)
	}
	closeWAL(t, w)
	if len(mirrored) != 2 || mirrored[0] != 1 || mirrored[1] != 10 {
		t.Fatalf("mirrored %v, want acme's 1 again, then beta's 10", mirrored)
	}
}
