package wal_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// diskLog writes n hooks to a log on disk in files of at most maxFile
// bytes and closes it.
func diskLog(t *testing.T, n int, maxFile int64) (string, []ack) {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, "wal")
	w := openWAL(t, wal.Options{FS: vfs.Default, Dir: d, MaxFileBytes: maxFile})
	var acked []ack
	for i := range n {
		acked = append(acked, mustCommit(t, w, hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("h%d", i)}))
	}
	closeWAL(t, w)
	return d, acked
}

// TestRetireAndErase: Retire takes files out of the log at once (the log
// no longer lists them, the rest still opens and reads whole); Erase then
// frees a retired file a chunk at a time and removes it. Both on disk,
// where Erase cuts the file down through its descriptor.
func TestRetireAndErase(t *testing.T) {
	d, _ := diskLog(t, 3000, 1<<20)
	nums, err := wal.ListFiles(vfs.Default, d)
	if err != nil || len(nums) < 3 {
		t.Fatalf("files %v, %v: the test needs three", nums, err)
	}
	before := mustReadLog(t, vfs.Default, d)
	if err := wal.Retire(vfs.Default, d, nums[:2]); err != nil {
		t.Fatal(err)
	}
	left, err := wal.ListFiles(vfs.Default, d)
	if err != nil || len(left) != len(nums)-2 || left[0] != nums[2] {
		t.Fatalf("after retiring %v the log lists %v (%v)", nums[:2], left, err)
	}
	for _, n := range nums[:2] {
		if _, err := os.Stat(filepath.Join(d, wal.FileName(n))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still in the log: %v", wal.FileName(n), err)
		}
	}
	// What is left reads as the log minus the retired files' records.
	after := mustReadLog(t, vfs.Default, d)
	var want int
	for _, r := range before {
		if !strings.HasSuffix(r.File, wal.FileName(nums[0])) && !strings.HasSuffix(r.File, wal.FileName(nums[1])) {
			want++
		}
	}
	if len(after) != want {
		t.Fatalf("the log reads %d records after retiring two files, want %d", len(after), want)
	}
	// Erase takes several cuts for a file larger than a chunk: time it
	// against the pauses it must take.
	big := filepath.Join(d, wal.FileName(nums[0])+".tmp")
	if err := os.Truncate(big, 3*wal.EraseChunk+1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := wal.Erase(vfs.Default, d, nums[0], nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 4*wal.ErasePause {
		t.Fatalf("Erase of a file of 3 chunks and a byte took %v: it did not cut it in 4 steps with a pause after each", took)
	}
	if err := wal.Erase(vfs.Default, d, nums[1], nil); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("Erase left %s", e.Name())
		}
	}
	// Erasing what is already gone is not an error (a retry after a crash).
	if err := wal.Erase(vfs.Default, d, nums[0], nil); err != nil {
		t.Fatalf("Erase of a file already gone: %v", err)
	}
	if err := wal.Retire(vfs.Default, d, nums[:1]); err != nil {
		t.Fatalf("Retire of a file already gone: %v", err)
	}
}

// TestEraseInterrupted: a stop (or a crash) in the middle of Erase leaves
// a retired file partly cut under its temporary name; it is not part of
// the log, so the next Open succeeds, removes it, and every acknowledged
// hook of the files still in the log is there.
func TestEraseInterrupted(t *testing.T) {
	d, acked := diskLog(t, 3000, 1<<20)
	nums, err := wal.ListFiles(vfs.Default, d)
	if err != nil || len(nums) < 2 {
		t.Fatalf("files %v, %v: the test needs two", nums, err)
	}
	if err := wal.Retire(vfs.Default, d, nums[:1]); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(d, wal.FileName(nums[0])+".tmp")
	if err := os.Truncate(tmp, 2*wal.EraseChunk); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if err := wal.Erase(vfs.Default, d, nums[0], stop); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		t.Fatalf("a stopped Erase removed the file: %v", err)
	}
	if st.Size() != wal.EraseChunk {
		t.Fatalf("a stopped Erase left %d bytes, want one cut (%d)", st.Size(), wal.EraseChunk)
	}
	w := openWAL(t, wal.Options{FS: vfs.Default, Dir: d})
	closeWAL(t, w)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open left the partly erased file: %v", err)
	}
	var kept []ack
	gone := lastSeqIn(t, d, nums[0])
	for _, a := range acked {
		if a.Seq > gone {
			kept = append(kept, a)
		}
	}
	checkAcked(t, hooksOf(mustReadLog(t, vfs.Default, d)), kept)
}

// lastSeqIn is the highest seq acknowledged before file num+1 began: the
// files after the retired one start above it.
func lastSeqIn(t *testing.T, d string, num uint64) uint64 {
	t.Helper()
	recs := hooksOf(mustReadLog(t, vfs.Default, d))
	for _, r := range recs {
		if strings.HasSuffix(r.File, wal.FileName(num+1)) {
			return r.Seq - 1
		}
	}
	t.Fatalf("no hook in %s", wal.FileName(num+1))
	return 0
}

// TestEraseWithoutDescriptor: on a file system whose files have no
// descriptor (the in-memory one of the crash tests) Erase removes the
// retired file at once.
func TestEraseWithoutDescriptor(t *testing.T) {
	src, _ := buildLog(t, 200, 2<<10, 0, time.Millisecond)
	nums, err := wal.ListFiles(src, dir)
	if err != nil || len(nums) < 2 {
		t.Fatalf("files %v, %v", nums, err)
	}
	if err := wal.Retire(src, dir, nums[:1]); err != nil {
		t.Fatal(err)
	}
	if err := wal.Erase(src, dir, nums[0], nil); err != nil {
		t.Fatal(err)
	}
	names, err := src.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, wal.FileName(nums[0])) {
			t.Fatalf("%s is still there", n)
		}
	}
}
