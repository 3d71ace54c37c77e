package wal_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// TestCommitBatchPastIOVMax commits one batch of more than IOV_MAX (1024)
// records to a log on disk, so the commit loop's single writeAll goes
// through writev in several chunks, and reads every record back intact.
//
// The log is on vfs.Default; the wrapper only holds the first fdatasync
// of a log file until every other commit is queued, so they all land in
// the next batch (the syncs of the file prepared ahead of rotation, a
// .tmp file and the directory, run beside the loop and are not held).
// Writes go to the real descriptor (hookFile promotes Fd).
func TestCommitBatchPastIOVMax(t *testing.T) {
	const n = 1500
	var armed atomic.Bool
	held := make(chan struct{})
	release := make(chan struct{})
	fs := &hookFS{FS: vfs.Default, beforeSync: func(path string) error {
		if strings.HasSuffix(path, ".wal") && armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
		return nil
	}}
	dir := filepath.Join(t.TempDir(), "wal")
	if f, err := fs.Create(filepath.Join(t.TempDir(), "probe"), vfs.WriteCategoryUnspecified); err != nil {
		t.Fatal(err)
	} else if fd := f.Fd(); f.Close() != nil || fd == vfs.InvalidFd {
		t.Fatal("the wrapped vfs.Default hides the descriptor: the WAL would not use writev")
	}
	w := openWAL(t, wal.Options{FS: fs, Dir: dir, MaxBatchBytes: 64 << 20})

	// The first commit's fdatasync is held...
	armed.Store(true)
	acks := make([]ack, n+1)
	errs := make(chan error, n+1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a, err := commit(w, hook{tenant: "first", tag: "first"})
		acks[n] = a
		errs <- err
	}()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the first commit never reached its fdatasync")
	}
	// ...while n more queue up behind it, from n goroutines.
	var queued int64
	for i := 0; i < n; i++ {
		h := hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("h%04d", i)}
		queued += int64(recordSize(h))
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := commit(w, h)
			acks[i] = a
			errs <- err
		}()
	}
	for deadline := time.Now().Add(30 * time.Second); w.QueuedBytes() != queued; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d of %d bytes queued after 30s", w.QueuedBytes(), queued)
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	closeWAL(t, w)

	recs := mustReadLog(t, vfs.Default, dir)
	hooks := checkLog(t, recs, 1, nil)
	if len(hooks) != n+1 {
		t.Fatalf("the log holds %d hooks, want %d", len(hooks), n+1)
	}
	checkAcked(t, hooks, acks)

	// The n hooks and their three tenant records are one batch: one
	// writeAll of n+3 buffers.
	perBatch := map[uint32]int{}
	if err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		perBatch[r.Batch]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, c := range perBatch {
		largest = max(largest, c)
	}
	if len(perBatch) != 2 || largest != n+3 {
		t.Fatalf("records per batch %v, want the first hook's batch and one of %d records (%d hooks, 3 tenant records)", perBatch, n+3, n)
	}
}
