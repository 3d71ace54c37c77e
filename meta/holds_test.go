package meta

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// HoldsLive: a seq range holds live hooks while any of its hooks, of any
// tenant, has a row that is not dead or a pen row; dead letters alone do
// not hold it.
func TestHoldsLive(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(b *Batch) {
		// Tenant 1: seq 10 pending, 20 dead. Tenant 5: seq 30 pending,
		// and seq 40 dead. The last ordinal: seq 50 pending.
		b.PutPending(RowID{1, 10, "a"}, &Delivery{Due: 1})
		row := Delivery{Due: 1}
		b.PutPending(RowID{1, 20, "a"}, &row)
		b.PutDead(RowID{1, 20, "a"}, 1, &row)
		b.PutPending(RowID{5, 30, "b"}, &Delivery{Due: 1})
		row = Delivery{Due: 1}
		b.PutPending(RowID{5, 40, "a"}, &row)
		b.PutDead(RowID{5, 40, "a"}, 1, &row)
		b.PutPending(RowID{^uint32(0), 50, "a"}, &Delivery{Due: 1})
		// The pen holds seq 60 of tenant 3 and seq 70 of the last ordinal.
		b.PutPen(3, 60, &PenRow{Source: "src"})
		b.PutPen(^uint32(0), 70, &PenRow{Source: "src"})
	})
	for _, c := range []struct {
		first, last uint64
		want        bool
	}{
		{1, 9, false},
		{10, 10, true},
		{11, 29, false}, // tenant 1's 20 is dead
		{20, 20, false},
		{21, 30, true}, // tenant 5's 30
		{31, 49, false},
		{40, 40, false},
		{50, 50, true}, // the last ordinal's row
		{51, 59, false},
		{60, 60, true}, // a pen row
		{61, 69, false},
		{70, 70, true}, // the last ordinal's pen row
		{71, 1<<64 - 1, false},
		{1, 1<<64 - 1, true},
	} {
		if got, err := s.HoldsLive(c.first, c.last); err != nil || got != c.want {
			t.Errorf("HoldsLive(%d, %d) = %v, %v; want %v", c.first, c.last, got, err, c.want)
		}
	}
	// A delivered row holds nothing.
	commit(t, s, func(b *Batch) { b.DeletePending(RowID{1, 10, "a"}, 1) })
	if got, _ := s.HoldsLive(10, 10); got {
		t.Error("HoldsLive over a delivered hook")
	}
}
