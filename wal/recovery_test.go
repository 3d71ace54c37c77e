package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// buildLog commits n hooks, one batch each, over files of at most maxFile
// bytes (0: one file), with a clock that moves step per batch.
func buildLog(t *testing.T, n int, maxFile, maxBatch int64, step time.Duration) (vfs.FS, []ack) {
	t.Helper()
	fs := vfs.NewMem()
	clk := newClock(startMs, step)
	w := openWAL(t, wal.Options{FS: fs, Now: clk.Now, MaxFileBytes: maxFile, MaxBatchBytes: maxBatch})
	var acked []ack
	for i := 0; i < n; i++ {
		acked = append(acked, mustCommit(t, w, hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("h%d", i)}))
	}
	closeWAL(t, w)
	return fs, acked
}

// TestTornTail cuts the last record of the last file at every byte, with
// nothing, zeros or garbage after the cut: Open must keep every whole
// record, cut the tail, and leave a log that reopens clean.
func TestTornTail(t *testing.T) {
	src, acked := buildLog(t, 6, 0, 0, time.Millisecond)
	recs := mustReadLog(t, src, dir)
	last := recs[len(recs)-1]
	path := src.PathJoin(dir, src.PathBase(last.File))
	whole := readFile(t, src, path)
	if int(last.Offset)+last.Size != len(whole) {
		t.Fatalf("last record ends at %d, file has %d bytes", int(last.Offset)+last.Size, len(whole))
	}
	rng := rand.New(rand.NewPCG(11, 12))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	tails := []struct {
		name string
		tail func() []byte
	}{
		{"cut", func() []byte { return nil }},
		{"zeros", func() []byte { return make([]byte, 1+rng.IntN(64)) }},
		{"zero block", func() []byte { return make([]byte, 4096) }},
		{"garbage", func() []byte { return garbage(1 + rng.IntN(100)) }},
	}
	for _, tl := range tails {
		t.Run(tl.name, func(t *testing.T) {
			for cut := int(last.Offset); cut < len(whole); cut++ {
				tail := tl.tail()
				if cut == int(last.Offset) && len(tail) == 0 {
					continue // a clean file, not a torn one
				}
				mem := copyFS(t, src, dir)
				writeFile(t, mem, path, append(bytes.Clone(whole[:cut]), tail...))
				checkTornRecovery(t, mem, path, last.Offset, acked[:len(acked)-1], fmt.Sprintf("cut at %d + %d bytes", cut, len(tail)))
			}
		})
	}
	// A crash may also leave a last file with a short header (it was
	// being created).
	t.Run("short file header", func(t *testing.T) {
		for n := 0; n < 16; n++ {
			mem := copyFS(t, src, dir)
			nums, err := wal.ListFiles(mem, dir)
			if err != nil {
				t.Fatal(err)
			}
			// The file the next run was creating: files have no gaps.
			p3 := mem.PathJoin(dir, wal.FileName(nums[len(nums)-1]+1))
			writeFile(t, mem, p3, []byte("ANKUSAWL\x00\x00\x00\x01\x00\x00\x00\x00")[:n])
			checkTornRecovery(t, mem, p3, 16, acked, fmt.Sprintf("header of %d bytes", n))
		}
	})
}

// checkTornRecovery opens a log whose file path is torn at off and checks
// the repair.
func checkTornRecovery(t *testing.T, mem vfs.FS, path string, off int64, acked []ack, what string) {
	t.Helper()
	var logs logLines
	w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Logf: logs.Logf})
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	if !strings.Contains(logs.String(), "torn tail") || !strings.Contains(logs.String(), path) {
		t.Fatalf("%s: recovery log %q does not report the torn tail of %s", what, logs.String(), path)
	}
	if w.LastSeq() != uint64(len(acked)) {
		t.Fatalf("%s: LastSeq %d, want %d", what, w.LastSeq(), len(acked))
	}
	a, err := commit(w, hook{tenant: "t0", tag: "after"})
	if err != nil || a.Seq != uint64(len(acked)+1) {
		t.Fatalf("%s: commit after recovery: seq %d, %v", what, a.Seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := int64(len(readFile(t, mem, path))); n != off {
		t.Fatalf("%s: torn file has %d bytes after recovery, want %d", what, n, off)
	}
	hooks := checkLog(t, mustReadLog(t, mem, dir), 1, nil)
	checkAcked(t, hooks, acked)
	if len(hooks) != len(acked)+1 {
		t.Fatalf("%s: %d hooks, want %d", what, len(hooks), len(acked)+1)
	}
	names, _ := mem.List(dir)
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			t.Fatalf("%s: %s left behind", what, n)
		}
	}
	// The second recovery finds nothing to repair.
	logs = logLines{}
	w, err = wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Logf: logs.Logf})
	if err != nil {
		t.Fatalf("%s: second Open: %v", what, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Fatalf("%s: second recovery logged %q", what, logs.String())
	}
}

// TestTornTailHole is the crash a random crash clone produces: the last
// batch reached the disk in pieces, so whole records of it follow a hole of
// zeros. Nothing in that batch was acknowledged: this is a torn tail.
func TestTornTailHole(t *testing.T) {
	mem := vfs.NewCrashableMem()
	release := make(chan struct{})
	entered := make(chan struct{})
	var armed atomic.Bool
	var once sync.Once
	fs := &hookFS{FS: mem, beforeSync: func(path string) error {
		if armed.Load() && strings.HasSuffix(path, ".wal") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	}}
	w := openWAL(t, wal.Options{FS: fs, Now: newClock(startMs, time.Millisecond).Now})
	var acked []ack
	for i := 0; i < 4; i++ {
		acked = append(acked, mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("a%d", i)}))
	}
	// b0 goes alone; b1..b4 queue behind its sync and go out together.
	armed.Store(true)
	done := make(chan error, 5)
	go func() { _, err := commit(w, hook{tenant: "acme", tag: "b0"}); done <- err }()
	<-entered
	var queued int64
	for i := 1; i < 5; i++ {
		h := hook{tenant: "acme", tag: fmt.Sprintf("b%d", i)}
		queued += int64(recordSize(h))
		go func() { _, err := commit(w, h); done <- err }()
	}
	waitFor(t, "the last batch to queue", func() bool { return w.QueuedBytes() == queued })
	close(release)
	for range 5 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	closeWAL(t, w)
	recs := mustReadLog(t, mem, dir)
	hooks := checkLog(t, recs, 1, nil)
	b0 := hooks[4]
	acked = append(acked, ack{Seq: b0.Seq, ID: b0.ID, Ordinal: b0.Ordinal, Tag: b0.Env.DedupeKey})
	last := hooks[5:]
	if len(last) != 4 || last[0].ID.Millis() != last[3].ID.Millis() {
		t.Fatalf("the last batch is not b1..b4 under one clock reading: %d hooks", len(last))
	}
	// The crash kept the batch's first record, lost the second one's
	// block, and kept the last two.
	path := mem.PathJoin(dir, mem.PathBase(last[1].File))
	data := readFile(t, mem, path)
	clear(data[last[1].Offset : last[1].Offset+int64(last[1].Size)])
	crashed := copyFS(t, mem, dir)
	writeFile(t, crashed, path, data)
	acked = append(acked, ack{Seq: last[0].Seq, ID: last[0].ID, Ordinal: last[0].Ordinal, Tag: last[0].Env.DedupeKey})
	checkTornRecovery(t, crashed, path, last[1].Offset, acked, "hole in the last batch")
}

// flipCase is a log with one flipped byte.
type flipCase struct {
	name     string
	n        int           // hooks, one batch each
	maxFile  int64         // max file bytes
	maxBatch int64         // max batch bytes
	step     time.Duration // clock step per batch
	victim   int           // index of the damaged record among all records; -1: last of the first file
}

// TestCorruptRecord flips bytes of a record that valid records of later
// batches follow: strict recovery refuses, naming file and offset, and
// changes nothing; truncate recovery keeps the records before it.
func TestCorruptRecord(t *testing.T) {
	for _, tc := range []flipCase{
		// Later batches took later clock readings.
		{"middle of the last file", 10, 0, 0, time.Millisecond, 9},
		{"first record of the last file", 10, 0, 0, time.Millisecond, 0},
		// One clock reading for all, but later records lie further than
		// any one batch could reach.
		{"last file, frozen clock", 40, 0, 4 << 10, 0, 2},
		{"end of an earlier file", 30, 2 << 10, 0, time.Millisecond, -1},
		{"middle of an earlier file", 30, 2 << 10, 0, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, acked := buildLog(t, tc.n, tc.maxFile, tc.maxBatch, tc.step)
			recs := mustReadLog(t, src, dir)
			victim := tc.victim
			if victim < 0 {
				for victim = 0; recs[victim+1].File == recs[0].File; victim++ {
				}
			}
			v := recs[victim]
			path := src.PathJoin(dir, src.PathBase(v.File))
			whole := readFile(t, src, path)
			// Every hook before the victim survives a truncating recovery.
			keep := len(hooksOf(recs[:victim]))
			for i := 0; i < v.Size; i++ {
				if i >= 64 && i%97 != 0 {
					continue // every byte of the frame header and identity, a sample of the rest
				}
				for _, mask := range []byte{0x01, 0x80} {
					what := fmt.Sprintf("byte %d of the record at %s@%d ^ %#x", i, v.File, v.Offset, mask)
					mem := copyFS(t, src, dir)
					damaged := bytes.Clone(whole)
					damaged[int(v.Offset)+i] ^= mask
					writeFile(t, mem, path, damaged)
					checkStrictRefuses(t, mem, path, v.Offset, tc.maxBatch, what)
					checkTruncate(t, mem, path, v.Offset, acked[:keep], tc.maxBatch, what)
				}
			}
		})
	}
}

func checkStrictRefuses(t *testing.T, mem vfs.FS, path string, off, maxBatch int64, what string) {
	t.Helper()
	before := map[string][]byte{}
	names, _ := mem.List(dir)
	for _, n := range names {
		before[n] = readFile(t, mem, mem.PathJoin(dir, n))
	}
	w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, MaxBatchBytes: maxBatch})
	if err == nil {
		w.Close()
		t.Fatalf("%s: Open succeeded on a corrupt log", what)
	}
	if !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("%s: Open: %v does not wrap ErrCorrupt", what, err)
	}
	var ce *wal.CorruptError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != off {
		t.Fatalf("%s: Open: %v; want a *CorruptError at %s@%d", what, err, path, off)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", off)) || !strings.Contains(msg, "truncate") {
		t.Fatalf("%s: message %q must name the file, the offset and the way out", what, msg)
	}
	// A refused recovery touches nothing.
	after, _ := mem.List(dir)
	if len(after) != len(before) {
		t.Fatalf("%s: a refused Open changed the files: %v -> %v", what, names, after)
	}
	for n, b := range before {
		if !bytes.Equal(readFile(t, mem, mem.PathJoin(dir, n)), b) {
			t.Fatalf("%s: a refused Open changed %s", what, n)
		}
	}
}

func checkTruncate(t *testing.T, mem vfs.FS, path string, off int64, keep []ack, maxBatch int64, what string) {
	t.Helper()
	var logs logLines
	opts := wal.Options{FS: mem, Dir: dir, Node: testNode, MaxBatchBytes: maxBatch, Recovery: wal.RecoverTruncate, Logf: logs.Logf}
	w, err := wal.Open(opts)
	if err != nil {
		t.Fatalf("%s: truncate Open: %v", what, err)
	}
	if !strings.Contains(logs.String(), "truncate") || !strings.Contains(logs.String(), path) {
		t.Fatalf("%s: truncate recovery logged %q", what, logs.String())
	}
	if w.LastSeq() != uint64(len(keep)) {
		t.Fatalf("%s: LastSeq %d after truncating, want %d", what, w.LastSeq(), len(keep))
	}
	a, err := commit(w, hook{tenant: "t1", tag: "after"})
	if err != nil || a.Seq != uint64(len(keep)+1) {
		t.Fatalf("%s: commit after truncating: seq %d, %v", what, a.Seq, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := int64(len(readFile(t, mem, path))); n != off {
		t.Fatalf("%s: damaged file cut to %d bytes, want %d", what, n, off)
	}
	// Files after the damaged one are gone; the new file follows the
	// damaged one, so numbering stays without gaps.
	files := walFiles(t, mem, dir)
	damaged := mem.PathBase(path)
	for _, f := range files[:len(files)-1] {
		if f > damaged {
			t.Fatalf("%s: %s kept after truncating %s", what, f, damaged)
		}
	}
	if num, _ := wal.ParseFileName(damaged); files[len(files)-1] != wal.FileName(num+1) {
		t.Fatalf("%s: new file %s does not follow %s", what, files[len(files)-1], damaged)
	}
	hooks := checkLog(t, mustReadLog(t, mem, dir), 1, nil)
	checkAcked(t, hooks, keep)
	if len(hooks) != len(keep)+1 {
		t.Fatalf("%s: %d hooks after truncating, want %d", what, len(hooks), len(keep)+1)
	}
	// Strict recovery is happy with the result.
	opts.Recovery, opts.Logf = wal.RecoverStrict, nil
	w, err = wal.Open(opts)
	if err != nil {
		t.Fatalf("%s: strict Open after truncating: %v", what, err)
	}
	w.Close()
}

// TestCorruptFileHeader damages the header of a file that is not the last.
func TestCorruptFileHeader(t *testing.T) {
	src, _ := buildLog(t, 30, 2<<10, 0, time.Millisecond)
	files := walFiles(t, src, dir)
	path := src.PathJoin(dir, files[1])
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"version", func(b []byte) []byte { b[11] = 2; return b }},
		{"short", func(b []byte) []byte { return b[:10] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := copyFS(t, src, dir)
			writeFile(t, mem, path, tc.damage(readFile(t, mem, path)))
			checkStrictRefuses(t, mem, path, 0, 0, tc.name)
		})
	}
}

// TestTmpLeftover checks that a temporary file left by an interrupted tail
// cut is removed and never read as the log.
func TestTmpLeftover(t *testing.T) {
	src, acked := buildLog(t, 3, 0, 0, time.Millisecond)
	mem := copyFS(t, src, dir)
	writeFile(t, mem, mem.PathJoin(dir, wal.FileName(1)+".tmp"), []byte("ANKUSAWL half written"))
	writeFile(t, mem, mem.PathJoin(dir, wal.FileName(9)+".tmp"), nil)
	w := openWAL(t, wal.Options{FS: mem})
	if w.LastSeq() != 3 {
		t.Fatalf("LastSeq %d", w.LastSeq())
	}
	closeWAL(t, w)
	names, _ := mem.List(dir)
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			t.Fatalf("%s left behind", n)
		}
	}
	checkAcked(t, checkLog(t, mustReadLog(t, mem, dir), 1, nil), acked)
}

func TestFileNames(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		name string
	}{{1, "000000000001.wal"}, {42, "000000000042.wal"}, {999999999999, "999999999999.wal"}, {1000000000000, "1000000000000.wal"}} {
		if got := wal.FileName(tc.n); got != tc.name {
			t.Errorf("FileName(%d) = %q, want %q", tc.n, got, tc.name)
		}
		if n, ok := wal.ParseFileName(tc.name); !ok || n != tc.n {
			t.Errorf("ParseFileName(%q) = %d, %v", tc.name, n, ok)
		}
	}
	for _, name := range []string{"", ".wal", "000000000000.wal", "x.wal", "000000000001.wal.tmp", "000000000001.WAL", "-1.wal", "000000000001"} {
		if n, ok := wal.ParseFileName(name); ok {
			t.Errorf("ParseFileName(%q) = %d, true", name, n)
		}
	}
	// Names sort as numbers do, so a directory listing is in log order.
	if !(wal.FileName(9) < wal.FileName(10) && wal.FileName(99) < wal.FileName(100)) {
		t.Errorf("file names do not sort numerically")
	}
}
