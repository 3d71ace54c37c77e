package cli

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// fullFor answers ENOSPC to the next n creates and writes.
type fullFor struct{ n atomic.Int64 }

func (f *fullFor) String() string { return "full for a while" }

func (f *fullFor) MaybeError(op errorfs.Op) error {
	if op.Kind != errorfs.OpCreate && op.Kind != errorfs.OpFileWrite {
		return nil
	}
	if f.n.Add(-1) >= 0 {
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	}
	return nil
}

// TestWaitFS: a meta store write that meets a full disk waits for space
// with backoff and then writes everything, once; a disk that stays full
// past the wait gives the write ENOSPC back (pebble then stops the node).
func TestWaitFS(t *testing.T) {
	mem := vfs.NewMem()
	inj := &fullFor{}
	var slept []time.Duration
	fs := &waitFS{FS: errorfs.Wrap(mem, inj), maxWait: time.Hour, sleep: func(d time.Duration) { slept = append(slept, d) }}
	inj.n.Store(3)
	f, err := fs.Create("log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatalf("Create after a full disk: %v", err)
	}
	inj.n.Store(4)
	if n, err := f.Write([]byte("hello, full disk")); err != nil || n != 16 {
		t.Fatalf("Write after a full disk: %d, %v", n, err)
	}
	f.Close()
	if len(slept) != 7 || slept[0] != 10*time.Millisecond || slept[2] != 40*time.Millisecond {
		t.Fatalf("backoff %v, want 7 waits from 10ms doubling", slept)
	}
	r, _ := mem.Open("log")
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "hello, full disk" {
		t.Fatalf("file holds %q", b)
	}

	fs.maxWait = 0
	inj.n.Store(1)
	if _, err := fs.Create("other", vfs.WriteCategoryUnspecified); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Create on a disk that stays full: %v, want ENOSPC", err)
	}
}
