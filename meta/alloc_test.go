//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts mean nothing under it: this file is left out of race builds.

package meta

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The row writer's and the scheduler's per-row work does not allocate: a
// reused batch spells its keys into its own buffers, and reads use pooled
// key buffers.
func TestRowPathAllocations(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	b := s.NewBatch()
	defer b.Close()
	id := RowID{1, 1, "sink-1"}
	row := Delivery{Due: 5, Source: "src", LastError: "status 503"}
	att := AttemptRecord{At: 1, Outcome: "retry", Error: "status 503"}
	hash := make([]byte, 16)
	for range 100 { // grow the batch's buffers first
		b.PutPending(id, &row)
	}
	b.Reset()
	if n := testing.AllocsPerRun(1000, func() {
		id.Seq++
		b.PutPending(id, &row)
		b.MovePending(id, 5, &row)
		b.PutAttempt(id, 1, &att)
		b.PutPen(1, id.Seq, &PenRow{Source: "src"})
		b.AddDedupe(1, "src", hash, &DedupeValue{Expiry: 1, Seq: id.Seq})
		if b.Len() > 4096 {
			b.Reset()
		}
	}); n != 0 {
		t.Errorf("batch writes: %v allocations per row, want 0", n)
	}
	if err := b.Commit(NoSync); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := s.RowExists(id); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("RowExists: %v allocations, want 0", n)
	}
}
