package meta

import (
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// HookAttempts lists one hook's entries, every sink; SweepAttempts takes
// each tenant's entries up to its first young one.
func TestAttemptLog(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	commit(t, s, func(b *Batch) {
		b.PutAttempt(RowID{1, 5, "b"}, 1, &AttemptRecord{At: 10, Outcome: "retry"})
		b.PutAttempt(RowID{1, 5, "a"}, 2, &AttemptRecord{At: 30, Outcome: "delivered"})
		b.PutAttempt(RowID{1, 5, "a"}, 1, &AttemptRecord{At: 20, Outcome: "retry"})
		b.PutAttempt(RowID{1, 6, "a"}, 1, &AttemptRecord{At: 100, Outcome: "delivered"})
		b.PutAttempt(RowID{2, 1, "a"}, 1, &AttemptRecord{At: 5, Outcome: "dead"})
	})
	got := ""
	if err := s.HookAttempts(1, 5, func(sink string, n uint16, a *AttemptRecord) { got += fmt.Sprintf("%s%d:%s ", sink, n, a.Outcome) }); err != nil {
		t.Fatal(err)
	}
	if got != "a1:retry a2:delivered b1:retry " {
		t.Fatalf("HookAttempts: %s", got)
	}
	if n, err := s.SweepAttempts(50); err != nil || n != 4 {
		t.Fatalf("SweepAttempts(50): %d %v, want 4", n, err)
	}
	if keys, _ := s.Census(); keys["attempts"] != 1 {
		t.Fatalf("%d entries left, want 1", keys["attempts"])
	}
}
