package meta

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DurableCheckpoint is the stored checkpoint at Open, then each one
// written; counters are written with it.
func TestDurableCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	if got := s.DurableCheckpoint(); got != 0 {
		t.Fatalf("a fresh store: %d", got)
	}
	if err := s.SetDispatchCheckpoint(7); err != nil {
		t.Fatal(err)
	}
	if got := s.DurableCheckpoint(); got != 7 {
		t.Fatalf("after SetDispatchCheckpoint(7): %d", got)
	}
	if err := s.SetDispatchCheckpointWith(9, map[uint32]TenantCounts{3: {Hooks: 2, Bytes: 20}}); err != nil {
		t.Fatal(err)
	}
	if got := s.DurableCheckpoint(); got != 9 {
		t.Fatalf("after SetDispatchCheckpointWith(9): %d", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	if got, err := s.DispatchCheckpoint(); got != 9 || err != nil || s.DurableCheckpoint() != 9 {
		t.Fatalf("after a reopen: stored %d %v, durable %d", got, err, s.DurableCheckpoint())
	}
	if c, err := s.AllTenantCounts(); err != nil || len(c) != 1 || c[3] != (TenantCounts{2, 20}) {
		t.Fatalf("counters %v %v", c, err)
	}
	// A checkpoint that does not decode: nothing is durable as far as
	// deletion goes, and dispatch is told.
	if err := s.db.Set([]byte(keyDispatchCheckpoint), []byte("short"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMem(t, fs)
	defer s.Close()
	if _, err := s.DispatchCheckpoint(); !errors.Is(err, ErrBadRecord) || s.DurableCheckpoint() != 0 {
		t.Fatalf("a damaged checkpoint: %v, durable %d", err, s.DurableCheckpoint())
	}
}
