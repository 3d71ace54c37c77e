package meta

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// dueOf lists tenant ord's due index as "seq/sink@due".
func dueOf(t *testing.T, s *Store, ord uint32) string {
	t.Helper()
	out := ""
	err := s.DueRows(ord, nil, func(id RowID, due int64) (bool, error) {
		out += fmt.Sprintf("%d/%s@%d ", id.Seq, id.Sink, due)
		return false, nil
	}, func(k []byte) { t.Errorf("malformed due key %x", k) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func deadOf(t *testing.T, s *Store, ord uint32, after *RowID) string {
	t.Helper()
	out := ""
	err := s.DeadRows(ord, after, func(id RowID, row *Delivery) (bool, error) {
		out += fmt.Sprintf("%d/%s:%s ", id.Seq, id.Sink, row.LastError)
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The row transitions keep the indexes with the rows: a pending row has
// exactly one due entry at its due time, a dead row one dead entry.
func TestRowTransitions(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	a, b, c := RowID{1, 10, "a"}, RowID{1, 10, "b"}, RowID{1, 11, "a"}
	other := RowID{2, 10, "a"}
	commit(t, s, func(bt *Batch) {
		for i, id := range []RowID{a, b, c, other} {
			bt.PutPending(id, &Delivery{State: RowDead, Due: int64(100 + i), Source: "src"})
		}
	})
	if got := dueOf(t, s, 1); got != "10/a@100 10/b@101 11/a@102 " {
		t.Fatalf("due index after PutPending: %s", got)
	}
	if row, ok, err := s.Row(a); err != nil || !ok || row.State != RowPending || row.Due != 100 {
		t.Fatalf("Row: %+v %v %v (PutPending writes a pending row whatever State said)", row, ok, err)
	}
	// Retry a later; b dies; c is delivered.
	commit(t, s, func(bt *Batch) {
		row, _, _ := s.Row(a)
		row.Due = 200
		bt.MovePending(a, 100, &row)
		row, _, _ = s.Row(b)
		row.LastError = "gone"
		bt.PutDead(b, 101, &row)
		bt.DeletePending(c, 102)
	})
	if got := dueOf(t, s, 1); got != "10/a@200 " {
		t.Fatalf("due index after the attempts: %s", got)
	}
	if got := deadOf(t, s, 1, nil); got != "10/b:gone " {
		t.Fatalf("dead letters: %s", got)
	}
	if _, ok, err := s.Row(c); ok || err != nil {
		t.Fatalf("a delivered row is still there: %v %v", ok, err)
	}
	counts, err := s.CountRows()
	if err != nil || counts.Rows != 3 || counts.Dead != 1 || fmt.Sprint(counts.Tenants) != "[1 2]" {
		t.Fatalf("CountRows: %+v %v", counts, err)
	}
	// Revive b, then kill and drop it.
	commit(t, s, func(bt *Batch) {
		row, _, _ := s.Row(b)
		row.Due = 300
		bt.Revive(b, &row)
	})
	if got, dead := dueOf(t, s, 1), deadOf(t, s, 1, nil); got != "10/a@200 10/b@300 " || dead != "" {
		t.Fatalf("after Revive: due %s, dead %s", got, dead)
	}
	commit(t, s, func(bt *Batch) {
		row, _, _ := s.Row(b)
		bt.PutDead(b, 300, &row)
	})
	commit(t, s, func(bt *Batch) { bt.DeleteDead(b) })
	if ok, _ := s.RowExists(b); ok || deadOf(t, s, 1, nil) != "" || dueOf(t, s, 1) != "10/a@200 " {
		t.Fatal("DeleteDead left the row or an index entry")
	}
	keys, _ := s.Census()
	if keys["rows"] != 2 || keys["due"] != 2 || keys["dead"] != 0 || keys[""] != 0 {
		t.Fatalf("census %v", keys)
	}
}

// DeadRows lists after a cursor row, skips index entries whose row is
// gone or not dead, and stops when told.
func TestDeadRowsCursor(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(bt *Batch) {
		for seq := uint64(1); seq <= 4; seq++ {
			for _, sink := range []string{"a", "b"} {
				id := RowID{1, seq, sink}
				row := Delivery{Due: 1}
				bt.PutPending(id, &row)
				bt.PutDead(id, 1, &row)
			}
		}
		bt.PutDead(RowID{2, 1, "a"}, 1, &Delivery{})
	})
	// An index entry whose row went (no write of the node does that).
	if err := s.db.Delete(RowKey(nil, RowID{1, 3, "a"}), nil); err != nil {
		t.Fatal(err)
	}
	if got := deadOf(t, s, 1, nil); got != "1/a: 1/b: 2/a: 2/b: 3/b: 4/a: 4/b: " {
		t.Fatalf("dead letters: %s", got)
	}
	if got := deadOf(t, s, 1, &RowID{1, 2, "a"}); got != "2/b: 3/b: 4/a: 4/b: " {
		t.Fatalf("after 2/a: %s", got)
	}
	n := 0
	if err := s.DeadRows(1, nil, func(RowID, *Delivery) (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("stop after 3: %d %v", n, err)
	}
	boom := errors.New("boom")
	if err := s.DeadRows(1, nil, func(RowID, *Delivery) (bool, error) { return false, boom }); err != boom {
		t.Fatalf("fn's error: %v", err)
	}
}

// A row that does not decode is ErrBadRecord from Row, skipped by
// TenantRows, and still a row to RowExists.
func TestRowDamaged(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	bad, good := RowID{1, 1, "a"}, RowID{1, 2, "a"}
	if err := s.db.Set(RowKey(nil, bad), []byte("not a row"), nil); err != nil {
		t.Fatal(err)
	}
	commit(t, s, func(bt *Batch) { bt.PutPending(good, &Delivery{Due: 1}) })
	if _, ok, err := s.Row(bad); ok || !errors.Is(err, ErrBadRecord) {
		t.Fatalf("Row of a damaged row: %v %v", ok, err)
	}
	if ok, err := s.RowExists(bad); !ok || err != nil {
		t.Fatalf("RowExists of a damaged row: %v %v", ok, err)
	}
	var seen []uint64
	if err := s.TenantRows(1, func(id RowID, _ *Delivery) bool { seen = append(seen, id.Seq); return false }); err != nil || fmt.Sprint(seen) != "[2]" {
		t.Fatalf("TenantRows: %v %v", seen, err)
	}
	if ok, err := s.DueExists(good, 1); !ok || err != nil {
		t.Fatalf("DueExists: %v %v", ok, err)
	}
	commit(t, s, func(bt *Batch) { bt.DeleteDue(good, 1) })
	if ok, _ := s.DueExists(good, 1); ok {
		t.Fatal("DeleteDue left the entry")
	}
}
