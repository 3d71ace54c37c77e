//go:build !race

package wal_test

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// TestCommitAllocs: the commit path on disk allocates nothing per hook,
// and neither does a commit refused for a full disk (the router's hot
// path goes through both).
func TestCommitAllocs(t *testing.T) {
	w := openWAL(t, wal.Options{FS: vfs.Default, Dir: t.TempDir()})
	defer closeWAL(t, w)
	req := acquire(hook{tenant: "acme", tag: "alloc"})
	defer wal.ReleaseRequest(req)
	if err := w.Commit(req); err != nil { // the tenant's record
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if err := w.Commit(req); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Commit: %.1f allocations per hook, want 0", n)
	}
	w.SetLowSpace(true)
	if n := testing.AllocsPerRun(200, func() {
		if err := w.Commit(req); !errors.Is(err, wal.ErrNoSpace) {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a refused Commit: %.1f allocations, want 0", n)
	}
	w.SetLowSpace(false)
}
