package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

const (
	dir     = "data/wal"
	startMs = 1_764_445_200_000
)

func openWAL(t testing.TB, opts wal.Options) *wal.WAL {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = dir
	}
	if opts.Node == 0 {
		opts.Node = testNode
	}
	w, err := wal.Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func closeWAL(t testing.TB, w *wal.WAL) {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestCommitReopen commits hooks, reads them back, reopens and goes on.
func TestCommitReopen(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock(startMs, time.Millisecond)
	w := openWAL(t, wal.Options{FS: fs, Now: clk.Now})
	if w.LastSeq() != 0 || !w.LastID().IsZero() || w.TenantCount() != 0 {
		t.Fatalf("fresh log: last seq %d id %v tenants %d", w.LastSeq(), w.LastID(), w.TenantCount())
	}
	tenants := []string{"acme", "beta", "default"}
	var acked []ack
	for i := 0; i < 60; i++ {
		a := mustCommit(t, w, hook{tenant: tenants[i%len(tenants)], tag: fmt.Sprintf("run1-%d", i)})
		acked = append(acked, a)
		if a.Seq != uint64(i+1) {
			t.Fatalf("commit %d got seq %d", i, a.Seq)
		}
		if a.ID.Seq() != a.Seq || a.ID.Node() != testNode {
			t.Fatalf("commit %d: id %v has seq %d node %d", i, a.ID, a.ID.Seq(), a.ID.Node())
		}
		// One commit, one batch, one clock reading.
		if a.ID.Millis() != uint64(startMs+i) {
			t.Fatalf("commit %d: id time %d, want %d", i, a.ID.Millis(), startMs+i)
		}
		if want := uint32(i%len(tenants) + 1); a.Ordinal != want {
			t.Fatalf("commit %d: ordinal %d, want %d", i, a.Ordinal, want)
		}
		if i > 0 && bytes.Compare(acked[i-1].ID[:], a.ID[:]) >= 0 {
			t.Fatalf("commit %d: id %v not above %v", i, a.ID, acked[i-1].ID)
		}
		if w.LastSeq() != a.Seq || w.LastID() != a.ID {
			t.Fatalf("commit %d: LastSeq %d LastID %v", i, w.LastSeq(), w.LastID())
		}
		if w.QueuedBytes() != 0 {
			t.Fatalf("commit %d: %d bytes still queued", i, w.QueuedBytes())
		}
	}
	closeWAL(t, w)

	hooks := checkLog(t, mustReadLog(t, fs, dir), 1, nil)
	if len(hooks) != 60 {
		t.Fatalf("read back %d hooks, want 60", len(hooks))
	}
	checkAcked(t, hooks, acked)

	w = openWAL(t, wal.Options{FS: fs, Now: clk.Now})
	if w.LastSeq() != 60 || w.LastID() != acked[59].ID || w.TenantCount() != 3 {
		t.Fatalf("reopened: last seq %d id %v tenants %d", w.LastSeq(), w.LastID(), w.TenantCount())
	}
	for i := 0; i < 10; i++ {
		a := mustCommit(t, w, hook{tenant: tenants[i%3], tag: fmt.Sprintf("run2-%d", i)})
		if a.Seq != uint64(61+i) || a.Ordinal != uint32(i%3+1) {
			t.Fatalf("after reopen: seq %d ordinal %d", a.Seq, a.Ordinal)
		}
		acked = append(acked, a)
	}
	closeWAL(t, w)
	hooks = checkLog(t, mustReadLog(t, fs, dir), 1, nil)
	if len(hooks) != 70 {
		t.Fatalf("read back %d hooks, want 70", len(hooks))
	}
	checkAcked(t, hooks, acked)
	if files := walFiles(t, fs, dir); len(files) != 2 || files[0] != wal.FileName(1) || files[1] != wal.FileName(2) {
		t.Fatalf("files %v: each run should have started a file", files)
	}
}

// TestReopenNumbering checks where seqs and ids resume after a reopen:
// above the WAL's tail, above the floors the caller passes, and above the
// last id even if the clock went back.
func TestReopenNumbering(t *testing.T) {
	type run struct {
		floorSeq uint64
		floorID  envelope.ID
		nowMs    int64
		commits  int
		wantSeq  uint64 // first seq of the run
	}
	floorID := func(ms uint64, seq uint64) envelope.ID { return envelope.MakeID(ms, testNode, seq) }
	tests := []struct {
		name string
		runs []run
	}{
		{"tail", []run{{nowMs: startMs, commits: 5, wantSeq: 1}, {nowMs: startMs + 10, commits: 3, wantSeq: 6}, {nowMs: startMs + 20, commits: 1, wantSeq: 9}}},
		{"floor seq below tail", []run{{nowMs: startMs, commits: 5, wantSeq: 1}, {floorSeq: 2, nowMs: startMs + 10, commits: 3, wantSeq: 6}}},
		{"floor seq above tail", []run{
			{nowMs: startMs, commits: 5, wantSeq: 1},
			{floorSeq: 100, nowMs: startMs + 10, commits: 3, wantSeq: 101},
			{nowMs: startMs + 20, commits: 2, wantSeq: 104},
			{floorSeq: 500, nowMs: startMs + 30, commits: 1, wantSeq: 501},
			{nowMs: startMs + 40, commits: 1, wantSeq: 502},
		}},
		{"floor seq on an empty log", []run{{floorSeq: 41, nowMs: startMs, commits: 2, wantSeq: 42}, {nowMs: startMs, commits: 2, wantSeq: 44}}},
		{"floor id above tail", []run{
			{nowMs: startMs, commits: 5, wantSeq: 1},
			{floorSeq: 9, floorID: floorID(startMs+3_600_000, 9), nowMs: startMs + 10, commits: 3, wantSeq: 10},
			{nowMs: startMs + 20, commits: 1, wantSeq: 13},
		}},
		{"floor id with a larger seq part than the floor seq", []run{
			{nowMs: startMs, commits: 5, wantSeq: 1},
			{floorID: floorID(startMs+3_600_000, 1000), nowMs: startMs + 10, commits: 3, wantSeq: 6},
		}},
		{"clock back an hour", []run{{nowMs: startMs, commits: 5, wantSeq: 1}, {nowMs: startMs - 3_600_000, commits: 5, wantSeq: 6}, {nowMs: startMs - 7_200_000, commits: 2, wantSeq: 11}}},
		{"clock back to zero", []run{{nowMs: startMs, commits: 3, wantSeq: 1}, {nowMs: 0, commits: 3, wantSeq: 4}}},
		{"clock back with floors", []run{
			{nowMs: startMs, commits: 3, wantSeq: 1},
			{floorSeq: 50, floorID: floorID(startMs+5, 50), nowMs: startMs - 60_000, commits: 3, wantSeq: 51},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			var acked []ack
			var lastID envelope.ID
			for i, r := range tt.runs {
				clk := newClock(r.nowMs, time.Millisecond)
				w := openWAL(t, wal.Options{FS: fs, Now: clk.Now, Meta: &testMeta{ckptSeq: r.floorSeq, ckptID: r.floorID}})
				floor := lastID
				if bytes.Compare(r.floorID[:], floor[:]) > 0 {
					floor = r.floorID
				}
				prev := floor
				for j := 0; j < r.commits; j++ {
					a := mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("run%d-%d", i, j)})
					if want := r.wantSeq + uint64(j); a.Seq != want {
						t.Fatalf("run %d commit %d: seq %d, want %d", i, j, a.Seq, want)
					}
					if bytes.Compare(prev[:], a.ID[:]) >= 0 {
						t.Fatalf("run %d commit %d: id %v (ms %d seq %d) not above %v (ms %d seq %d)",
							i, j, a.ID, a.ID.Millis(), a.ID.Seq(), prev, prev.Millis(), prev.Seq())
					}
					prev, lastID = a.ID, a.ID
					acked = append(acked, a)
				}
				closeWAL(t, w)
			}
			// Every run's hooks are still there, in order, and a last
			// reopen is clean.
			var logs logLines
			w := openWAL(t, wal.Options{FS: fs, Logf: logs.Logf})
			closeWAL(t, w)
			if logs.Len() != 0 {
				t.Fatalf("reopen logged: %s", logs.String())
			}
			recs := mustReadLog(t, fs, dir)
			hooks := hooksOf(recs)
			if len(hooks) != len(acked) {
				t.Fatalf("log has %d hooks, %d were acknowledged", len(hooks), len(acked))
			}
			checkAcked(t, hooks, acked)
			for i := 1; i < len(hooks); i++ {
				if hooks[i].Seq <= hooks[i-1].Seq || bytes.Compare(hooks[i-1].ID[:], hooks[i].ID[:]) >= 0 {
					t.Fatalf("hook %d: seq %d id %v after seq %d id %v", i, hooks[i].Seq, hooks[i].ID, hooks[i-1].Seq, hooks[i-1].ID)
				}
			}
		})
	}
}

func TestCommitTooLarge(t *testing.T) {
	fs := vfs.NewMem()
	h := hook{tenant: "acme", tag: "big"}
	size := recordSize(h)
	w := openWAL(t, wal.Options{FS: fs, MaxBatchBytes: int64(size - 1)})
	if _, err := commit(w, h); !errors.Is(err, wal.ErrTooLarge) {
		t.Fatalf("Commit of %d bytes with max_batch_bytes %d: %v", size, size-1, err)
	}
	if w.QueuedBytes() != 0 || w.LastSeq() != 0 || w.TenantCount() != 0 {
		t.Fatalf("a refused record left traces: queued %d seq %d tenants %d", w.QueuedBytes(), w.LastSeq(), w.TenantCount())
	}
	// A record that fits still commits, as seq 1.
	small := hook{tenant: "acme", tag: "small"}
	for recordSize(small) > size-1 {
		small.tag += "x"
	}
	if a := mustCommit(t, w, small); a.Seq != 1 {
		t.Fatalf("seq %d after a refused record", a.Seq)
	}
	closeWAL(t, w)
	if hooks := checkLog(t, mustReadLog(t, fs, dir), 1, nil); len(hooks) != 1 {
		t.Fatalf("%d hooks in the log", len(hooks))
	}
}

// TestCloseDrains queues commits behind a batch whose sync is held, closes,
// and checks that every queued commit is acknowledged and durable.
func TestCloseDrains(t *testing.T) {
	mem := vfs.NewCrashableMem()
	release := make(chan struct{})
	entered := make(chan struct{})
	var armed atomic.Bool
	var gateOnce sync.Once
	fs := &hookFS{FS: mem, beforeSync: func(path string) error {
		if armed.Load() && strings.HasSuffix(path, ".wal") {
			gateOnce.Do(func() { close(entered); <-release })
		}
		return nil
	}}
	w := openWAL(t, wal.Options{FS: fs})
	armed.Store(true)
	const n = 20
	type result struct {
		a   ack
		err error
	}
	results := make(chan result, n+1)
	first := hook{tenant: "acme", tag: "first"}
	go func() {
		a, err := commit(w, first)
		results <- result{a, err}
	}()
	<-entered // the first batch is written and waits in its sync
	if q := w.QueuedBytes(); q != 0 {
		t.Fatalf("QueuedBytes = %d once the loop took the only commit", q)
	}
	var want int64
	for i := 1; i < n; i++ {
		h := hook{tenant: fmt.Sprintf("t%d", i%4), tag: fmt.Sprintf("queued-%d", i)}
		want += int64(recordSize(h))
		go func() {
			a, err := commit(w, h)
			results <- result{a, err}
		}()
	}
	waitFor(t, "commits to queue", func() bool { return w.QueuedBytes() == want })
	closed := make(chan error, 1)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release) // a failed test must not leave Close waiting
		}
	})
	go func() { closed <- w.Close() }()
	time.Sleep(10 * time.Millisecond) // let Close mark the log closed
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a sync was still held", err)
	default:
	}
	late := make(chan result, 1)
	go func() {
		a, err := commit(w, hook{tenant: "acme", tag: "late"})
		late <- result{a, err}
	}()
	close(release)
	var acked []ack
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("queued commit failed: %v", r.err)
		}
		acked = append(acked, r.a)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	switch r := <-late; {
	case errors.Is(r.err, wal.ErrClosed):
	case r.err == nil:
		// Close was slower than 10ms to take effect: the late commit was
		// queued before it, and must be durable like the others.
		t.Logf("the late commit was queued before Close took effect")
		acked = append(acked, r.a)
	default:
		t.Fatalf("Commit during Close: %v", r.err)
	}
	if _, err := commit(w, hook{tenant: "acme", tag: "after"}); !errors.Is(err, wal.ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if w.QueuedBytes() != 0 || w.LastSeq() != uint64(len(acked)) {
		t.Fatalf("after Close: queued %d, last seq %d", w.QueuedBytes(), w.LastSeq())
	}
	// Durable: a crash right after Close keeps everything.
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	hooks := checkLog(t, mustReadLog(t, crashed, dir), 1, nil)
	if len(hooks) != len(acked) {
		t.Fatalf("%d hooks survive, want %d", len(hooks), len(acked))
	}
	checkAcked(t, hooks, acked)
}

// TestOptionalCallbacks opens a log with no callbacks at all.
func TestOptionalCallbacks(t *testing.T) {
	fs := vfs.NewMem()
	w, err := wal.Open(wal.Options{FS: fs, Dir: dir, Node: testNode})
	if err != nil {
		t.Fatal(err)
	}
	if a := mustCommit(t, w, hook{tenant: "new-tenant", tag: "x"}); a.Seq != 1 || a.Ordinal != 1 {
		t.Fatalf("seq %d ordinal %d", a.Seq, a.Ordinal)
	}
	closeWAL(t, w)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
