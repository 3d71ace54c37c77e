package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// batchRec is one record of a log with the batch that wrote it.
type batchRec struct {
	off, size int64
	batch     uint32
	hook      bool
	seq       uint64
}

// buildBatchedLog commits rounds of one batch of a single hook followed
// by one batch of the eight hooks commitBehind queues behind it, so the
// log's one file holds batches of several records, and closes it cleanly.
func buildBatchedLog(t *testing.T, rounds int) (*vfs.MemFS, *testMeta) {
	t.Helper()
	mem := vfs.NewMem()
	var gate atomic.Pointer[chan struct{}]
	entered := make(chan struct{}, 1)
	fs := &hookFS{FS: mem, beforeWrite: func(path string) error {
		if g := gate.Load(); g != nil && strings.HasSuffix(path, ".wal") {
			entered <- struct{}{}
			<-*g
		}
		return nil
	}}
	m := &testMeta{}
	w := openWAL(t, wal.Options{FS: fs, Now: newClock(startMs, time.Millisecond).Now, Meta: m})
	for round := 0; round < rounds; round++ {
		g := make(chan struct{})
		gate.Store(&g)
		lead := make(chan commitResult, 1)
		go func() {
			a, err := commit(w, hook{tenant: "lead", tag: fmt.Sprintf("lead-%d", round)})
			lead <- commitResult{a, err}
		}()
		results := make(chan commitResult, 8)
		// The lead hook is in the loop's write, held at the gate; the
		// eight queue behind it and go out in one batch.
		<-entered
		queued := commitBehind(w, results)
		waitFor(t, "commits to queue behind the lead", func() bool { return w.QueuedBytes() == queued })
		gate.Store(nil)
		close(g)
		if r := <-lead; r.err != nil {
			t.Fatal(r.err)
		}
		for i := 0; i < 8; i++ {
			if r := <-results; r.err != nil {
				t.Fatal(r.err)
			}
		}
	}
	closeWAL(t, w)
	return mem, m
}

// readBatches lists the records of the log's only file.
func readBatches(t *testing.T, fs vfs.FS) (string, []batchRec) {
	t.Helper()
	var path string
	var recs []batchRec
	err := wal.ReadDir(fs, dir, func(r *wal.Record) error {
		if path != "" && r.File != path {
			return fmt.Errorf("a second file %s", r.File)
		}
		path = r.File
		recs = append(recs, batchRec{off: r.Offset, size: int64(wal.FrameHeaderSize + len(r.Payload)), batch: r.Batch, hook: r.Kind == envelope.KindEnvelope, seq: r.Seq})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, recs
}

// TestWALDamageTable (DESIGN.md §6 item 10): damage at every record
// boundary and in the middle of every record of the last WAL file, a
// flipped byte or a truncation, after a clean stop and after a kill.
//
// After a kill the final batch was in flight (written, its fdatasync not
// returned): nothing of it was acknowledged, and the dispatch checkpoint
// stands at the batch before it. Damage inside that batch is a crash's
// tear and is cut, losing nothing acknowledged. Every other case is
// damage: Open refuses, naming the file, the offset of the damaged record
// and how many acknowledged hooks cutting there would lose, and changes no
// file; -wal-recovery=truncate then cuts explicitly, numbering resumes
// above everything, and the next Open does not refuse the accepted loss
// again.
func TestWALDamageTable(t *testing.T) {
	src, closedMeta := buildBatchedLog(t, 3)
	path, recs := readBatches(t, src)
	whole := readFile(t, src, path)
	final := recs[len(recs)-1].batch
	if recs[len(recs)-2].batch != final || recs[0].batch == final {
		t.Fatalf("the log's batches are not as built: %+v", recs)
	}
	var beforeFinal uint64 // the last hook of the batch before the final one
	for _, r := range recs {
		if r.hook && r.batch != final {
			beforeFinal = r.seq
		}
	}
	last := recs[len(recs)-1].seq
	states := []struct {
		name string
		meta testMeta
		// acked is the last acknowledged seq; cuttable says whether a
		// tear at record r loses nothing acknowledged.
		acked     uint64
		cuttable  func(r batchRec) bool
		boundName string
	}{
		{"clean stop", testMeta{ckptSeq: closedMeta.ckptSeq, ckptID: closedMeta.ckptID, closed: closedMeta.closed}, last,
			func(batchRec) bool { return false }, "clean-close record"},
		{"kill", testMeta{dispSeq: beforeFinal}, beforeFinal,
			func(r batchRec) bool { return r.batch == final }, "dispatch checkpoint"},
	}
	if closedMeta.closed != last {
		t.Fatalf("the clean close recorded seq %d, want %d", closedMeta.closed, last)
	}
	for _, st := range states {
		for i, r := range recs {
			for _, d := range damages(whole, r) {
				name := fmt.Sprintf("%s/record %d (batch %d)/%s", st.name, i, r.batch, d.name)
				checkDamage(t, name, src, path, d.data, r, recs, st.meta, st.acked, st.cuttable(r), st.boundName)
			}
		}
	}
}

type damage struct {
	name string
	data []byte
}

// damages are the four ways record r is damaged: a byte flipped at its
// first byte (the boundary) and in its middle, the file truncated at its
// start and in its middle.
func damages(whole []byte, r batchRec) []damage {
	flip := func(at int64) []byte {
		b := bytes.Clone(whole)
		b[at] ^= 0x40
		return b
	}
	return []damage{
		{"flip at the boundary", flip(r.off)},
		{"flip mid-record", flip(r.off + r.size/2)},
		{"truncate at the boundary", bytes.Clone(whole[:r.off])},
		{"truncate mid-record", bytes.Clone(whole[:r.off+r.size/2])},
	}
}

// checkDamage opens a copy of src whose file path holds data, damaged at
// record r, and checks the outcome.
func checkDamage(t *testing.T, name string, src *vfs.MemFS, path string, data []byte, r batchRec, recs []batchRec, meta testMeta, acked uint64, cuttable bool, bound string) {
	t.Helper()
	mem := copyFS(t, src, dir)
	writeFile(t, mem, path, data)
	keptHooks, lostHooks := 0, 0
	var keptSeq uint64
	for _, o := range recs {
		switch {
		case !o.hook:
		case o.off < r.off:
			keptHooks, keptSeq = keptHooks+1, o.seq
		case o.seq <= acked:
			lostHooks++
		}
	}
	m := meta
	w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Meta: &m, Logf: func(string, ...any) {}})
	if cuttable {
		if err != nil {
			t.Fatalf("%s: Open: %v; want the torn final batch cut", name, err)
		}
		if got := w.LastSeq(); got < acked || got != max(keptSeq, acked) {
			t.Fatalf("%s: LastSeq %d after the cut, want %d (acknowledged up to %d)", name, got, max(keptSeq, acked), acked)
		}
		closeWAL(t, w)
		checkKept(t, name, mem, keptHooks)
		return
	}
	if err == nil {
		closeWAL(t, w)
		t.Fatalf("%s: Open succeeded; want a refusal", name)
	}
	var ce *wal.CorruptError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != r.off {
		t.Fatalf("%s: Open: %v; want a *CorruptError at %s offset %d", name, err, path, r.off)
	}
	if !refusalCounts(err.Error(), lostHooks, recs, r, bound) {
		t.Fatalf("%s: Open: %v; want it to say how many acknowledged hooks are lost (%d)", name, err, lostHooks)
	}
	if after := readFile(t, mem, path); !bytes.Equal(after, data) {
		t.Fatalf("%s: a refused recovery changed the file", name)
	}
	checkTruncateCuts(t, name, mem, meta, keptHooks, acked)
}

// refusalCounts says whether msg counts the lost hooks: a tear the bounds
// refuse says how many acknowledged hooks cutting would lose; damage with
// later batches after it says how many whole hooks follow it.
func refusalCounts(msg string, lost int, recs []batchRec, r batchRec, bound string) bool {
	if strings.Contains(msg, fmt.Sprintf("would lose %d acknowledged hooks", lost)) && strings.Contains(msg, bound) {
		return true
	}
	after := 0
	for _, o := range recs {
		if o.hook && o.off > r.off {
			after++
		}
	}
	return strings.Contains(msg, fmt.Sprintf("%d whole hooks written after it", after))
}

// checkTruncateCuts opens mem again with -wal-recovery=truncate: the log
// is cut before the damaged record, numbering resumes above what was
// acknowledged, and a strict Open after it does not refuse again.
func checkTruncateCuts(t *testing.T, name string, mem *vfs.MemFS, meta testMeta, keptHooks int, acked uint64) {
	t.Helper()
	m := meta
	w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Meta: &m, Recovery: wal.RecoverTruncate, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatalf("%s: Open with truncate: %v", name, err)
	}
	if w.LastSeq() < acked {
		t.Fatalf("%s: after the truncate numbering resumes at %d, below the acknowledged %d", name, w.LastSeq()+1, acked)
	}
	// A kill now, before any hook: the next strict boot must not refuse
	// the loss the operator accepted.
	killed, killedMeta := mem.CrashClone(vfs.CrashCloneCfg{}), m
	closeWAL(t, w)
	w, err = wal.Open(wal.Options{FS: killed, Dir: dir, Node: testNode, Meta: &killedMeta, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatalf("%s: strict Open after the truncate and a kill: %v", name, err)
	}
	a, err := commit(w, hook{tenant: "t0", tag: "after"})
	if err != nil || a.Seq <= acked {
		t.Fatalf("%s: commit after the truncate: seq %d, %v; want above %d", name, a.Seq, err, acked)
	}
	closeWAL(t, w)
	checkKept(t, name, killed, keptHooks+1)
}

// checkKept checks the log holds n whole hooks.
func checkKept(t *testing.T, name string, mem vfs.FS, n int) {
	t.Helper()
	if got := len(hooksOf(mustReadLog(t, mem, dir))); got != n {
		t.Fatalf("%s: the log holds %d hooks, want %d", name, got, n)
	}
}
