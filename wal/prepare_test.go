package wal_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// prepStep is one file-system operation of preparing a file ahead of
// rotation, and the error the log must stop with when it fails.
type prepStep struct {
	name    string
	match   func(errorfs.Op) bool
	wantMsg string
}

// prepSteps are the steps of a preparation. They all act on the
// file's .tmp name: the loop renames it into the log at rotation
// (TestFatalFault fails the rename and the directory sync after it).
var prepSteps = []prepStep{
	{"create", opOn(errorfs.OpCreate, ".wal.tmp"), "cannot create wal file"},
	{"header write", opOn(errorfs.OpFileWrite, ".wal.tmp"), "cannot write wal file"},
	{"header sync", opOn(errorfs.OpFileSync, ".wal.tmp"), "cannot fsync wal file"},
}

// checkFatalOnce checks that OnFatal was called once, with the injected
// error and msg, and that the fatal counter rose by one since fatal0.
func checkFatalOnce(t *testing.T, fatal *fatalCalls, msg string, fatal0 uint64) {
	t.Helper()
	errs := fatal.get()
	if len(errs) != 1 {
		t.Fatalf("OnFatal called %d times: %v", len(errs), errs)
	}
	if !errors.Is(errs[0], errorfs.ErrInjected) || !strings.Contains(errs[0].Error(), msg) || !strings.Contains(errs[0].Error(), dir+"/") {
		t.Fatalf("OnFatal(%v): want an error wrapping the injected one, saying %q and naming the file", errs[0], msg)
	}
	if got := metrics.GetOrCreateCounter("ankusa_wal_fatal_errors_total").Get() - fatal0; got != 1 {
		t.Fatalf("ankusa_wal_fatal_errors_total rose by %d", got)
	}
}

// checkRestart opens the log a failed run left on fs, and a crash clone
// of it: recovery accepts whatever the failed preparation left, every
// acknowledged hook is there, and numbering goes on above them.
func checkRestart(t *testing.T, mem *vfs.MemFS, acked []ack) {
	t.Helper()
	for _, fs := range []*vfs.MemFS{mem.CrashClone(vfs.CrashCloneCfg{}), mem} {
		w := openWAL(t, wal.Options{FS: fs})
		next := mustCommit(t, w, hook{tenant: "acme", tag: "restart"})
		closeWAL(t, w)
		if next.Seq <= uint64(len(acked)) {
			t.Fatalf("seq %d reused after restart", next.Seq)
		}
		checkAcked(t, checkLog(t, mustReadLog(t, fs, dir), 1, nil), append(acked, next))
	}
}

// TestPrepareFault fails each step of preparing the next file. The log
// must stop as a failed rotation stopped it when rotation created the
// file itself (DESIGN.md §6 item 8): OnFatal once, naming the file; every
// commit from then on fails with ErrFatal; Close reports it; and what the
// failed preparation left does not stop the next Open.
func TestPrepareFault(t *testing.T) {
	for _, step := range prepSteps {
		// The rotation needs the file while its preparation is failing:
		// the rotating batch and those queued behind it fail, and a commit
		// made while the preparation was held (no rotation) was durable.
		t.Run("at rotation/"+step.name, func(t *testing.T) {
			waits := metrics.GetOrCreateCounter("ankusa_wal_rotation_waits_total")
			fatal0 := metrics.GetOrCreateCounter("ankusa_wal_fatal_errors_total").Get()
			mem := vfs.NewCrashableMem()
			inj := &gatedInjector{match: step.match, hold: true, entered: make(chan struct{}), release: make(chan struct{})}
			inj.armed.Store(true)
			var fatal fatalCalls
			w := openWAL(t, wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal, MaxFileBytes: 1})
			t.Cleanup(func() {
				select {
				case <-inj.release:
				default:
					close(inj.release) // a failed test must not leave Close waiting
				}
			})
			<-inj.entered // preparing file 2, inside the broken operation
			// File 1 holds only its header: this batch does not rotate.
			first := mustCommit(t, w, hook{tenant: "acme", tag: "first"})

			results := make(chan commitResult, 16)
			w0 := waits.Get()
			go func() {
				a, err := commit(w, hook{tenant: "acme", tag: "failing"})
				results <- commitResult{a, err}
			}()
			waitFor(t, "the rotation to wait for the prepared file", func() bool { return waits.Get() > w0 })
			queued := commitBehind(w, results)
			waitFor(t, "commits to queue behind the rotation", func() bool { return w.QueuedBytes() == queued })
			close(inj.release)
			for i := 0; i < 9; i++ {
				if r := <-results; !errors.Is(r.err, wal.ErrFatal) {
					t.Fatalf("commit %q: %v, want ErrFatal", r.a.Tag, r.err)
				}
			}
			if _, err := commit(w, hook{tenant: "acme", tag: "later"}); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Commit after the fault: %v", err)
			}
			if !w.Failed() || w.LastSeq() != 1 || w.LastID() != first.ID || w.QueuedBytes() != 0 {
				t.Fatalf("after the fault: Failed %v LastSeq %d LastID %v QueuedBytes %d", w.Failed(), w.LastSeq(), w.LastID(), w.QueuedBytes())
			}
			if err := w.Close(); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Close after the fault: %v", err)
			}
			checkFatalOnce(t, &fatal, step.wantMsg, fatal0)
			checkRestart(t, mem, []ack{first})
		})
		// Nothing needs the file yet: the log stops all the same, at
		// once, not at a rotation that may be hours away.
		t.Run("idle/"+step.name, func(t *testing.T) {
			fatal0 := metrics.GetOrCreateCounter("ankusa_wal_fatal_errors_total").Get()
			mem := vfs.NewCrashableMem()
			inj := &gatedInjector{match: step.match}
			inj.armed.Store(true)
			var fatal fatalCalls
			w := openWAL(t, wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal})
			waitFor(t, "the failed preparation to stop the log", w.Failed)
			if _, err := commit(w, hook{tenant: "acme", tag: "after"}); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Commit after the fault: %v", err)
			}
			if err := w.Close(); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Close after the fault: %v", err)
			}
			checkFatalOnce(t, &fatal, step.wantMsg, fatal0)
			checkRestart(t, mem, nil)
		})
	}
}

// TestCrashWhilePreparing crashes at every step of preparing files and
// rotating into them: create, header write and sync of the .tmp file
// (beside the loop), its rename into the log, the rotating batch's write
// and fdatasync, the directory sync before it is acknowledged, and Close
// removing the unused file; with writers that commit one at a time and in
// bursts. Every clone must recover every acknowledged hook: a batch
// acknowledged before its new file's name was durable would be lost by a
// clone taken before the directory sync.
func TestCrashWhilePreparing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		random bool
		seed   uint64
	}{
		{"synced data only", false, 4},
		{"random unsynced data seed 4", true, 4},
		{"random unsynced data seed 5", true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &crasher{mem: vfs.NewCrashableMem(), random: tc.random, rng: rand.New(rand.NewPCG(tc.seed, 7))}
			// Three 4 KiB blocks a file (CrashClone keeps or drops unsynced
			// data by block), so batches across the boundaries can tear.
			w, err := wal.Open(wal.Options{FS: c.fs(), Dir: dir, Node: testNode, MaxFileBytes: 12 << 10})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for i := 0; i < 100; i++ {
				a, err := commit(w, hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("p%d-one-%d", tc.seed, i)})
				if err != nil {
					t.Fatalf("Commit: %v", err)
				}
				c.ack(a)
			}
			// Bursts, so rotations meet queued batches and a preparation
			// runs beside them.
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 10; i++ {
						a, err := commit(w, hook{tenant: fmt.Sprintf("t%d", g), tag: fmt.Sprintf("p%d-g%d-%d", tc.seed, g, i)})
						if err != nil {
							t.Errorf("Commit: %v", err)
							return
						}
						c.ack(a)
					}
				}()
			}
			wg.Wait()
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			c.crash("after close")
			if t.Failed() {
				t.FailNow()
			}

			steps := map[string]int{}
			repaired := 0
			for _, p := range c.points {
				steps[crashStep(p.where)]++
				if strings.Contains(verifyCrash(t, p), "torn tail") {
					repaired++
				}
			}
			for _, want := range []string{
				"before create tmp", "after create tmp", "before write tmp", "before sync tmp", "after sync tmp",
				"before rename tmp", "after rename tmp", "before sync dir", "after sync dir",
				"before sync wal", "after sync wal", "before remove tmp", "after remove tmp",
			} {
				if steps[want] == 0 {
					t.Errorf("no crash %s: the test did not crash at every step (%v)", want, steps)
				}
			}
			t.Logf("%d crash points (%v), %d with a torn tail to cut", len(c.points), steps, repaired)
			if tc.random && repaired == 0 {
				t.Fatalf("no crash point left a torn tail")
			}
		})
	}
}

// crashStep names the kind of a crash point: when, what, and whether on
// a .tmp file, a .wal file or the directory.
func crashStep(where string) string {
	f := strings.Fields(where)
	if len(f) < 3 {
		return where
	}
	kind := "dir"
	switch {
	case strings.HasSuffix(f[2], ".tmp"):
		kind = "tmp"
	case strings.HasSuffix(f[2], ".wal"):
		kind = "wal"
	}
	return f[0] + " " + f[1] + " " + kind
}

// TestRotationConcurrent commits from many goroutines over files a few
// batches long, with the log's readers running beside them: a Tail that
// follows the durable end and deletes every file it has read to the end
// (the segment store's view and its deletions), and ReadDir over the
// whole directory (an operator's inspect). Seqs stay in commit order
// across rotations, the readers never meet the prepared file (it is out
// of the log until rotation renames it in), and after Close only the
// files the log used are left.
func TestRotationConcurrent(t *testing.T) {
	rotations := metrics.GetOrCreateCounter("ankusa_wal_rotations_total")
	r0 := rotations.Get()
	mem := vfs.NewMem()
	fs := &hookFS{FS: mem, beforeSync: func(path string) error {
		if strings.HasSuffix(path, ".wal") {
			time.Sleep(100 * time.Microsecond) // let commits pile up into batches
		}
		return nil
	}}
	w := openWAL(t, wal.Options{FS: fs, MaxFileBytes: 4 << 10})

	stop := make(chan struct{})
	var readers sync.WaitGroup
	tailSeqs := map[uint64]string{} // seq -> tag, as the tail read them
	var deleted []uint64
	readers.Add(2)
	go func() {
		defer readers.Done()
		tail := wal.NewTail(fs, dir, 0, 0)
		defer tail.Close()
		var env envelope.Envelope
		for {
			stopping := false
			select {
			case <-w.Committed():
			case <-stop:
				stopping = true
			}
			end := w.Durable()
			err := tail.Read(end, func(r *wal.Record) error {
				if r.Kind != envelope.KindEnvelope {
					return nil
				}
				if r.Seq != uint64(len(tailSeqs))+1 {
					return fmt.Errorf("%s@%d: seq %d after %d hooks", r.File, r.Offset, r.Seq, len(tailSeqs))
				}
				if _, err := envelope.Decode(r.Payload, &env); err != nil {
					return err
				}
				tailSeqs[r.Seq] = env.DedupeKey
				return nil
			}, func(file, lastSeq uint64) error {
				if file >= end.File {
					return fmt.Errorf("file %d done; the durable end is in file %d", file, end.File)
				}
				deleted = append(deleted, file)
				return fs.Remove(fs.PathJoin(dir, wal.FileName(file)))
			})
			if err != nil {
				t.Errorf("Tail.Read to %+v: %v", end, err)
				return
			}
			if stopping {
				return
			}
		}
	}()
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			prev := uint64(0)
			err := wal.ReadDir(fs, dir, func(r *wal.Record) error {
				if r.Kind == envelope.KindEnvelope {
					if prev != 0 && r.Seq != prev+1 {
						return fmt.Errorf("%s@%d: seq %d after %d", r.File, r.Offset, r.Seq, prev)
					}
					prev = r.Seq
				}
				return nil
			})
			// The tail deletes files under ReadDir's feet; anything else
			// is a reader meeting what it must not.
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("ReadDir: %v", err)
				return
			}
		}
	}()

	const goroutines, perG = 8, 25
	acks := make([][]ack, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				a, err := commit(w, hook{tenant: fmt.Sprintf("t%d", (g+i)%5), tag: fmt.Sprintf("g%d-%d", g, i)})
				if err != nil {
					t.Errorf("Commit: %v", err)
					return
				}
				if i > 0 && a.Seq <= acks[g][i-1].Seq {
					t.Errorf("goroutine %d: seq %d after %d", g, a.Seq, acks[g][i-1].Seq)
				}
				acks[g] = append(acks[g], a)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		t.FailNow()
	}
	const total = goroutines * perG
	end := w.Durable()
	closeWAL(t, w)

	if len(tailSeqs) != total {
		t.Fatalf("the tail read %d hooks, want %d", len(tailSeqs), total)
	}
	for g := range acks {
		for _, a := range acks[g] {
			if tailSeqs[a.Seq] != a.Tag {
				t.Fatalf("seq %d read back as %q, acknowledged as %q", a.Seq, tailSeqs[a.Seq], a.Tag)
			}
		}
	}
	if end.File < 5 || len(deleted) == 0 {
		t.Fatalf("the durable end is in file %d and %d files were deleted: the test needs more rotations", end.File, len(deleted))
	}
	if got := rotations.Get() - r0; got != end.File-1 {
		t.Fatalf("ankusa_wal_rotations_total rose by %d; the log used files 1..%d", got, end.File)
	}
	// The files the tail has not finished, and no other: not the one
	// prepared after the last, nor a .tmp.
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := walFiles(t, mem, dir)
	want := deleted[len(deleted)-1] + 1
	if len(names) != len(files) || len(files) != int(end.File-want+1) || files[0] != wal.FileName(want) {
		t.Fatalf("after Close the directory holds %v; want %s..%s", names, wal.FileName(want), wal.FileName(end.File))
	}
	w = openWAL(t, wal.Options{FS: mem})
	if w.LastSeq() != total {
		t.Fatalf("reopened LastSeq %d, want %d", w.LastSeq(), total)
	}
	closeWAL(t, w)
}

// TestClosePrepared checks that Close removes the file prepared ahead of
// rotation, durably, also while its preparation is still running: a clean
// Close leaves the files the log used, and no goroutine (TestMain).
func TestClosePrepared(t *testing.T) {
	t.Run("prepared", func(t *testing.T) {
		mem := vfs.NewCrashableMem()
		w := openWAL(t, wal.Options{FS: mem})
		a := mustCommit(t, w, hook{tenant: "acme", tag: "a"})
		waitFor(t, "file 2 to be prepared", func() bool {
			_, err := mem.Stat(mem.PathJoin(dir, wal.FileName(2)+".tmp"))
			return err == nil
		})
		closeWAL(t, w)
		checkOnlyFirstFile(t, mem)
		crashed := mem.CrashClone(vfs.CrashCloneCfg{})
		checkOnlyFirstFile(t, crashed)
		checkAcked(t, checkLog(t, mustReadLog(t, crashed, dir), 1, nil), []ack{a})
	})
	t.Run("preparation running", func(t *testing.T) {
		mem := vfs.NewCrashableMem()
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		fs := &hookFS{FS: mem, beforeSync: func(path string) error {
			if strings.HasSuffix(path, ".wal.tmp") {
				once.Do(func() { close(entered); <-release })
			}
			return nil
		}}
		w := openWAL(t, wal.Options{FS: fs})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		a := mustCommit(t, w, hook{tenant: "acme", tag: "a"})
		<-entered
		closed := make(chan error, 1)
		go func() { closed <- w.Close() }()
		time.Sleep(10 * time.Millisecond)
		select {
		case err := <-closed:
			t.Fatalf("Close returned %v while the preparation was running", err)
		default:
		}
		close(release)
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		checkOnlyFirstFile(t, mem)
		checkAcked(t, checkLog(t, mustReadLog(t, mem, dir), 1, nil), []ack{a})
	})
}

// checkOnlyFirstFile checks that dir holds file 1 and nothing else.
func checkOnlyFirstFile(t *testing.T, fs vfs.FS) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != wal.FileName(1) {
		t.Fatalf("after Close the directory holds %v, want only %s", names, wal.FileName(1))
	}
}
