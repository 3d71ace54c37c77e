package meta

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// slowFullScans makes the scans of a test start at the front only when
// it says so, whatever the machine's pace.
func slowFullScans(t *testing.T) {
	old := dueFullEvery
	dueFullEvery = time.Hour
	t.Cleanup(func() { dueFullEvery = old })
}

// startOf is where ord's next scan starts.
func startOf(s *Store, ord uint32) int64 {
	s.due.mu.Lock()
	defer s.due.mu.Unlock()
	if c := s.due.m[ord]; c != nil {
		return c.start
	}
	return 0
}

// A scan moves the tenant's start to its first entry, past the deleted
// ones before it, and a row put earlier than that start afterwards is
// still read: the put lowers the start.
func TestDueCursorSkipsDeletedFront(t *testing.T) {
	slowFullScans(t)
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(bt *Batch) {
		for seq := uint64(1); seq <= 100; seq++ {
			bt.PutPending(RowID{1, seq, "a"}, &Delivery{Due: int64(seq), Source: "src"})
		}
		bt.PutPending(RowID{2, 1, "a"}, &Delivery{Due: 5, Source: "src"})
	})
	// The first 90 are delivered.
	commit(t, s, func(bt *Batch) {
		for seq := uint64(1); seq <= 90; seq++ {
			bt.DeletePending(RowID{1, seq, "a"}, int64(seq))
		}
	})
	if got := dueOf(t, s, 1); got != "91/a@91 92/a@92 93/a@93 94/a@94 95/a@95 96/a@96 97/a@97 98/a@98 99/a@99 100/a@100 " {
		t.Fatalf("due index: %s", got)
	}
	if got := startOf(s, 1); got != 91 {
		t.Fatalf("start after a scan = %d, want 91 (the first entry left)", got)
	}
	if got := startOf(s, 2); got != 0 {
		t.Fatalf("another tenant's start moved to %d by tenant 1's scan", got)
	}
	// A row due before the start (a redelivery due now, written with an
	// older clock reading) lowers it.
	commit(t, s, func(bt *Batch) {
		bt.PutPending(RowID{1, 200, "a"}, &Delivery{Due: 7, Source: "src"})
	})
	if got := startOf(s, 1); got != 7 {
		t.Fatalf("start after a put at 7 = %d", got)
	}
	if got := dueOf(t, s, 1); got[:8] != "200/a@7 " {
		t.Fatalf("the row put before the start is not read first: %s", got)
	}
	// Everything delivered: the start goes past the end, and a new row
	// at any due is read.
	commit(t, s, func(bt *Batch) {
		bt.DeletePending(RowID{1, 200, "a"}, 7)
		for seq := uint64(91); seq <= 100; seq++ {
			bt.DeletePending(RowID{1, seq, "a"}, int64(seq))
		}
	})
	if got := dueOf(t, s, 1); got != "" {
		t.Fatalf("due index after every delivery: %q", got)
	}
	commit(t, s, func(bt *Batch) {
		bt.PutPending(RowID{1, 300, "a"}, &Delivery{Due: 1, Source: "src"})
	})
	if got := dueOf(t, s, 1); got != "300/a@1 " {
		t.Fatalf("a row put after the index emptied: %q", got)
	}
	// A due time before 1970 is filed at 0, and read.
	commit(t, s, func(bt *Batch) {
		bt.PutPending(RowID{1, 301, "a"}, &Delivery{Due: -5, Source: "src"})
	})
	if got := dueOf(t, s, 1); got != "301/a@0 300/a@1 " {
		t.Fatalf("a row due before 1970: %q", got)
	}
}

// A row committed while a scan runs, after the scan's snapshot and before
// its first entry, is read by the next scan: the scan does not move the
// start past what was put meanwhile.
func TestDueCursorWriteDuringScan(t *testing.T) {
	slowFullScans(t)
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(bt *Batch) {
		bt.PutPending(RowID{1, 1, "a"}, &Delivery{Due: 50, Source: "src"})
		bt.PutPending(RowID{1, 2, "a"}, &Delivery{Due: 60, Source: "src"})
	})
	_ = dueOf(t, s, 1) // a first scan sets the start
	var during string
	err := s.DueRows(1, nil, func(id RowID, due int64) (bool, error) {
		if id.Seq == 1 {
			commit(t, s, func(bt *Batch) {
				bt.PutPending(RowID{1, 3, "a"}, &Delivery{Due: 10, Source: "src"})
			})
		}
		during += "x"
		return false, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if during != "xx" {
		t.Fatalf("the scan read %d entries, want the 2 of its snapshot", len(during))
	}
	if got := dueOf(t, s, 1); got != "3/a@10 1/a@50 2/a@60 " {
		t.Fatalf("after a put during a scan: %s", got)
	}
	// Two scans at once: neither moves the start past the other's view.
	commit(t, s, func(bt *Batch) { bt.DeletePending(RowID{1, 3, "a"}, 10) })
	err = s.DueRows(1, nil, func(RowID, int64) (bool, error) {
		if got := dueOf(t, s, 1); got != "1/a@50 2/a@60 " {
			t.Errorf("inner scan: %s", got)
		}
		commit(t, s, func(bt *Batch) {
			bt.PutPending(RowID{1, 4, "a"}, &Delivery{Due: 20, Source: "src"})
		})
		return true, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := dueOf(t, s, 1); got != "4/a@20 1/a@50 2/a@60 " {
		t.Fatalf("after nested scans: %s", got)
	}
}

// A batch that puts rows of many tenants lowers each one's start.
func TestDueCursorBatchOfManyTenants(t *testing.T) {
	slowFullScans(t)
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	for ord := uint32(1); ord <= 3; ord++ {
		commit(t, s, func(bt *Batch) { bt.PutPending(RowID{ord, 1, "a"}, &Delivery{Due: 100, Source: "src"}) })
		_ = dueOf(t, s, ord)
	}
	commit(t, s, func(bt *Batch) {
		for ord := uint32(1); ord <= 3; ord++ {
			bt.PutPending(RowID{ord, 2, "a"}, &Delivery{Due: int64(10 * ord), Source: "src"})
			bt.PutPending(RowID{ord, 3, "a"}, &Delivery{Due: int64(5 * ord), Source: "src"})
		}
	})
	for ord := uint32(1); ord <= 3; ord++ {
		if got, want := startOf(s, ord), int64(5*ord); got != want {
			t.Errorf("tenant %d: start %d, want %d", ord, got, want)
		}
	}
}

// Held entries are skipped and do not hold the start back; a held row let
// go of without its entry moving is read again once NoteDue names it.
func TestDueCursorHeldEntries(t *testing.T) {
	slowFullScans(t)
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(bt *Batch) {
		for seq := uint64(1); seq <= 5; seq++ {
			bt.PutPending(RowID{1, seq, "a"}, &Delivery{Due: int64(10 * seq), Source: "src"})
		}
	})
	held := map[uint64]bool{1: true, 2: true, 3: true}
	isHeld := func(id RowID) bool { return held[id.Seq] }
	list := func() string {
		out := ""
		if err := s.DueRows(1, isHeld, func(id RowID, due int64) (bool, error) {
			out += fmt.Sprintf("%d@%d ", id.Seq, due)
			return false, nil
		}, nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := list(); got != "4@40 5@50 " {
		t.Fatalf("with 1-3 held: %s", got)
	}
	if got := startOf(s, 1); got != 40 {
		t.Fatalf("start %d, want 40 (past the held entries)", got)
	}
	// 2's attempt ends without an outcome: let go of, its entry where it was.
	delete(held, 2)
	if got := list(); got != "4@40 5@50 " {
		t.Fatalf("before the note: %s (the scan starts past 2's entry)", got)
	}
	s.NoteDue(1, 20)
	if got := list(); got != "2@20 4@40 5@50 " {
		t.Fatalf("after NoteDue: %s", got)
	}
	// A missed note delays a row by at most dueFullEvery: the next scan
	// after it starts at the front.
	if got := list(); got != "2@20 4@40 5@50 " {
		t.Fatalf("again: %s", got)
	}
	held[2] = true
	_ = list() // past 2 again
	delete(held, 2)
	if got := list(); got != "4@40 5@50 " {
		t.Fatalf("without a note: %s", got)
	}
	s.due.mu.Lock()
	s.due.m[1].full = s.due.m[1].full.Add(-2 * time.Hour)
	s.due.mu.Unlock()
	if got := list(); got != "2@20 4@40 5@50 " {
		t.Fatalf("a second after the last full scan: %s", got)
	}
}
