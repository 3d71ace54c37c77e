package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestStorageReserve walks the monitor through a disk that fills and
// empties: the ballast goes below half the reserve (or on a write that
// met ENOSPC), comes back only at twice the reserve, and NoSpace (what
// /readyz says) names the full disk and data_dir while it is gone.
func TestStorageReserve(t *testing.T) {
	dir := t.TempDir()
	const r = 1 << 20
	s := newStorage(dir, r, zap.NewNop())
	ballast := filepath.Join(dir, ballastName)
	held := func() bool {
		_, err := os.Stat(ballast)
		return err == nil && s.NoSpace() == "" && !storageFullFlag.Load()
	}
	if s.NoSpace() == "" {
		t.Fatalf("NoSpace() empty before the reserve was ever made")
	}
	for _, step := range []struct {
		free int64
		want bool
	}{
		{2 * r, true},    // made
		{r, true},        // kept: above half
		{r/2 - 1, false}, // released
		{r, false},       // not yet: below twice the reserve
		{2*r - 1, false}, //
		{2 * r, true},    // made again
		{r / 2, true},    // exactly half keeps it
		{0, false},       // gone
		{10 * r, true},   //
	} {
		s.check(step.free)
		if got := held(); got != step.want {
			t.Fatalf("at %d bytes free: reserve held %v, want %v (NoSpace %q)", step.free, got, step.want, s.NoSpace())
		}
		if !step.want && (!strings.Contains(s.NoSpace(), "disk full") || !strings.Contains(s.NoSpace(), dir)) {
			t.Fatalf("NoSpace() = %q, want it to name the full disk and %s", s.NoSpace(), dir)
		}
	}
	before := reserveReleased.Get()
	s.onDiskFull()
	if held() || reserveReleased.Get() != before+1 {
		t.Fatalf("a write that met ENOSPC did not release the reserve")
	}
	s.onDiskFull() // already released: nothing more
	if reserveReleased.Get() != before+1 {
		t.Fatalf("a second ENOSPC released the reserve again")
	}
	if fi, err := os.Stat(ballast); err == nil {
		t.Fatalf("ballast of %d bytes left after the release", fi.Size())
	}
}

// TestCheckBootSpace: a boot releases the reserve its last run left.
func TestCheckBootSpace(t *testing.T) {
	dir := t.TempDir()
	ballast := filepath.Join(dir, ballastName)
	if err := os.WriteFile(ballast, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkBootSpace(dir, 1<<20); err != nil {
		t.Fatalf("boot on a disk with room: %v", err)
	}
	if _, err := os.Stat(ballast); !os.IsNotExist(err) {
		t.Fatalf("the last run's reserve is still there: %v", err)
	}
	// A reserve no disk has: the boot is refused, naming data_dir.
	err := checkBootSpace(dir, 1<<62)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("boot with less than half the reserve free: %v", err)
	}
	if _, err := freeBytes(filepath.Join(dir, "missing")); err == nil {
		t.Fatalf("statfs of a missing directory: no error")
	}
}
