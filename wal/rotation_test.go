package wal_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// TestRotation commits past MaxFileBytes several times over and checks
// the files, the order of records across them, and a reopen.
func TestRotation(t *testing.T) {
	const maxFile = 8 << 10
	rotations := metrics.GetOrCreateCounter("ankusa_wal_rotations_total")
	before := rotations.Get()
	fs := vfs.NewMem()
	w := openWAL(t, wal.Options{FS: fs, MaxFileBytes: maxFile})
	var acked []ack
	for i := 0; i < 80; i++ {
		acked = append(acked, mustCommit(t, w, hook{tenant: fmt.Sprintf("t%d", i%5), tag: fmt.Sprintf("r%d", i)}))
	}
	closeWAL(t, w)
	files := walFiles(t, fs, dir)
	if len(files) < 5 {
		t.Fatalf("%d files after writing ~%d KiB with max_file_bytes %d", len(files), 80, maxFile)
	}
	if got := rotations.Get() - before; got != uint64(len(files)-1) {
		t.Fatalf("ankusa_wal_rotations_total rose by %d for %d files", got, len(files))
	}
	for i, name := range files {
		if name != wal.FileName(uint64(i+1)) {
			t.Fatalf("file %d is %s: numbers must be consecutive from 1", i, name)
		}
		// One record per batch here, each smaller than the limit: no
		// file passes it.
		if size := int64(len(readFile(t, fs, fs.PathJoin(dir, name)))); size > maxFile {
			t.Fatalf("%s has %d bytes, max_file_bytes is %d", name, size, maxFile)
		}
	}
	recs := mustReadLog(t, fs, dir)
	hooks := checkLog(t, recs, 1, nil)
	if len(hooks) != len(acked) {
		t.Fatalf("%d hooks read back, want %d", len(hooks), len(acked))
	}
	checkAcked(t, hooks, acked)
	// Records run in file order, and within a file in offset order.
	for i := 1; i < len(recs); i++ {
		a, b := recs[i-1], recs[i]
		if a.File > b.File || (a.File == b.File && a.Offset+int64(a.Size) != b.Offset) {
			t.Fatalf("record %d at %s@%d does not follow %s@%d+%d", i, b.File, b.Offset, a.File, a.Offset, a.Size)
		}
	}

	// Reopen: numbering goes on in a new file, and everything reads back.
	w = openWAL(t, wal.Options{FS: fs, MaxFileBytes: maxFile})
	if w.LastSeq() != 80 {
		t.Fatalf("reopened LastSeq = %d", w.LastSeq())
	}
	for i := 0; i < 20; i++ {
		acked = append(acked, mustCommit(t, w, hook{tenant: "t1", tag: fmt.Sprintf("s%d", i)}))
	}
	closeWAL(t, w)
	if files2 := walFiles(t, fs, dir); files2[len(files)] != wal.FileName(uint64(len(files)+1)) {
		t.Fatalf("after reopen: files %v", files2)
	}
	hooks = checkLog(t, mustReadLog(t, fs, dir), 1, nil)
	if len(hooks) != 100 {
		t.Fatalf("%d hooks after reopen, want 100", len(hooks))
	}
	checkAcked(t, hooks, acked)
}

// TestRotationLargeRecord checks that a record larger than MaxFileBytes
// still commits, alone in its file, and that the next one rotates again.
func TestRotationLargeRecord(t *testing.T) {
	fs := vfs.NewMem()
	w := openWAL(t, wal.Options{FS: fs, MaxFileBytes: 64})
	for i := 0; i < 4; i++ {
		mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("big-%d", i)})
	}
	closeWAL(t, w)
	if files := walFiles(t, fs, dir); len(files) != 4 {
		t.Fatalf("files %v, want one per record", files)
	}
	if hooks := checkLog(t, mustReadLog(t, fs, dir), 1, nil); len(hooks) != 4 {
		t.Fatalf("%d hooks", len(hooks))
	}
}
