package wal_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ankusa/ankusa/wal"
)

// diskFull answers ENOSPC to every operation match accepts while full is
// set, as a full file system does, and counts them.
type diskFull struct {
	match func(errorfs.Op) bool
	full  atomic.Bool
	hits  atomic.Int64
}

func (d *diskFull) String() string { return "disk full" }

func (d *diskFull) MaybeError(op errorfs.Op) error {
	if !d.full.Load() || !d.match(op) {
		return nil
	}
	d.hits.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func counter(name string) *metrics.Counter { return metrics.GetOrCreateCounter(name) }

// commitUntil commits h until it succeeds, within 5s; every failure must
// be ErrNoSpace. It returns the ack and how long it took.
func commitUntil(t *testing.T, w *wal.WAL, h hook) (ack, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		a, err := commit(w, h)
		if err == nil {
			return a, time.Since(start)
		}
		if !errors.Is(err, wal.ErrNoSpace) {
			t.Fatalf("Commit(%s) while space returns: %v, want ErrNoSpace or success", h.tag, err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("Commit(%s) still refused 5s after space returned", h.tag)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkNotFatal checks that the log did not fail.
func checkNotFatal(t *testing.T, w *wal.WAL, fatal *fatalCalls) {
	t.Helper()
	if errs := fatal.get(); len(errs) != 0 || w.Failed() {
		t.Fatalf("a full disk was fatal: Failed %v, OnFatal %v", w.Failed(), errs)
	}
}

// reopenAndCheck reopens the log on fs after a crash that drops what was
// not synced, commits one more hook, and checks that the log is dense
// from seq 1, holds every acknowledged hook and none of the refused tags.
func reopenAndCheck(t *testing.T, mem *vfs.MemFS, acked []ack, refused ...string) {
	t.Helper()
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	w := openWAL(t, wal.Options{FS: crashed})
	acked = append(acked, mustCommit(t, w, hook{tenant: "acme", tag: "after-restart"}))
	closeWAL(t, w)
	hooks := checkLog(t, mustReadLog(t, crashed, dir), 1, nil)
	checkAcked(t, hooks, acked)
	for _, h := range hooks {
		for _, tag := range refused {
			if h.Env.DedupeKey == tag {
				t.Fatalf("refused hook %q is in the log at seq %d", tag, h.Seq)
			}
		}
	}
	if len(hooks) != len(acked) {
		t.Fatalf("the log holds %d hooks; %d were acknowledged", len(hooks), len(acked))
	}
}

// TestNoSpaceAtPrepare fills the disk under the preparation of the next
// file: commits are refused with ErrNoSpace (never fatal) until space
// returns, then go on by themselves, and the log stays dense.
func TestNoSpaceAtPrepare(t *testing.T) {
	enospc0, refused0 := counter("ankusa_wal_enospc_total").Get(), counter("ankusa_wal_no_space_refusals_total").Get()
	mem := vfs.NewCrashableMem()
	inj := &diskFull{match: opOn(errorfs.OpFilePreallocate, ".wal.tmp")}
	var fatal fatalCalls
	// Every batch rotates, so every batch needs the prepared file.
	w := openWAL(t, wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal, MaxFileBytes: 1})
	var acked []ack
	for i := range 3 {
		acked = append(acked, mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("before-%d", i)}))
	}
	inj.full.Store(true)
	refusedAt := -1
	for i := range 5 {
		a, err := commit(w, hook{tenant: fmt.Sprintf("new-%d", i), tag: fmt.Sprintf("full-%d", i)})
		if errors.Is(err, wal.ErrNoSpace) {
			refusedAt = i
			break
		}
		if err != nil {
			t.Fatalf("commit on a full disk: %v, want ErrNoSpace", err)
		}
		acked = append(acked, a) // the file prepared before the disk filled
	}
	if refusedAt < 0 {
		t.Fatalf("no commit refused with the next file unallocatable")
	}
	checkNotFatal(t, w, &fatal)
	if !w.NoSpace() {
		t.Fatalf("NoSpace() = false while the next file cannot be allocated")
	}
	time.Sleep(100 * time.Millisecond) // a few retries meet the full disk
	if inj.hits.Load() < 2 {
		t.Fatalf("the preparation was tried %d times on a full disk; want retries", inj.hits.Load())
	}
	inj.full.Store(false)
	a, took := commitUntil(t, w, hook{tenant: "fresh", tag: "after-space"})
	t.Logf("first commit %v after space returned", took)
	acked = append(acked, a)
	for i := range 3 {
		acked = append(acked, mustCommit(t, w, hook{tenant: "fresh", tag: fmt.Sprintf("later-%d", i)}))
	}
	checkNotFatal(t, w, &fatal)
	closeWAL(t, w)
	if counter("ankusa_wal_enospc_total").Get() <= enospc0 || counter("ankusa_wal_no_space_refusals_total").Get() <= refused0 {
		t.Fatalf("ankusa_wal_enospc_total or ankusa_wal_no_space_refusals_total did not rise")
	}
	reopenAndCheck(t, mem, acked, fmt.Sprintf("full-%d", refusedAt))
}

// TestNoSpaceAtWrite fills the disk under a batch's write (a file system
// without fallocate): the batch is refused, the file cut back, and its
// seqs, ordinals and batch number given again, so recovery finds the log
// dense. With rotate, the write fails in a file just renamed into the
// log, whose directory entry the next batch must still sync.
func TestNoSpaceAtWrite(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		t.Run(fmt.Sprintf("rotate=%v", rotate), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			inj := &diskFull{match: func(op errorfs.Op) bool {
				// A rotated file keeps its .wal.tmp path in errorfs; its
				// successor's preparation fails too, and retries.
				return op.Kind == errorfs.OpFileWrite && strings.Contains(op.Path, ".wal")
			}}
			var fatal fatalCalls
			opts := wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal}
			if rotate {
				opts.MaxFileBytes = 1
			}
			w := openWAL(t, opts)
			var acked []ack
			for i := range 3 {
				acked = append(acked, mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("before-%d", i)}))
			}
			inj.full.Store(true)
			var refused []string
			for i := range 3 {
				tag := fmt.Sprintf("refused-%d", i)
				if _, err := commit(w, hook{tenant: fmt.Sprintf("newco-%d", i), tag: tag}); !errors.Is(err, wal.ErrNoSpace) {
					t.Fatalf("commit on a full disk: %v, want ErrNoSpace", err)
				}
				refused = append(refused, tag)
			}
			checkNotFatal(t, w, &fatal)
			inj.full.Store(false)
			a, _ := commitUntil(t, w, hook{tenant: "newco-0", tag: "after-space"})
			if a.Seq != 4 || a.Ordinal != 2 {
				t.Fatalf("after refused batches: seq %d ordinal %d, want 4 and 2 (given again)", a.Seq, a.Ordinal)
			}
			acked = append(acked, a)
			checkNotFatal(t, w, &fatal)
			// No Close: the crash keeps only what was synced, the
			// directory entry of a rotated file included.
			reopenAndCheck(t, mem, acked, refused...)
			closeWAL(t, w)
		})
	}
}

// TestNoSpaceAtSyncIsFatal: an fdatasync that fails is fatal, whatever
// its error says (DESIGN.md §6 item 10).
func TestNoSpaceAtSyncIsFatal(t *testing.T) {
	mem := vfs.NewMem()
	inj := &diskFull{match: opOn(errorfs.OpFileSyncData, ".wal")}
	var fatal fatalCalls
	w := openWAL(t, wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal})
	mustCommit(t, w, hook{tenant: "acme", tag: "a"})
	inj.full.Store(true)
	if _, err := commit(w, hook{tenant: "acme", tag: "b"}); !errors.Is(err, wal.ErrFatal) {
		t.Fatalf("commit with a failing fdatasync: %v, want ErrFatal", err)
	}
	if errs := fatal.get(); len(errs) != 1 || !w.Failed() {
		t.Fatalf("OnFatal %v Failed %v", errs, w.Failed())
	}
	_ = w.Close()
}

// TestSetLowSpace: the node's reserve refuses commits until lifted.
func TestSetLowSpace(t *testing.T) {
	w := openWAL(t, wal.Options{FS: vfs.NewMem()})
	defer closeWAL(t, w)
	mustCommit(t, w, hook{tenant: "acme", tag: "a"})
	w.SetLowSpace(true)
	if !w.NoSpace() {
		t.Fatalf("NoSpace() = false under SetLowSpace(true)")
	}
	if _, err := commit(w, hook{tenant: "acme", tag: "b"}); !errors.Is(err, wal.ErrNoSpace) {
		t.Fatalf("commit below the reserve: %v, want ErrNoSpace", err)
	}
	w.SetLowSpace(false)
	if a := mustCommit(t, w, hook{tenant: "acme", tag: "c"}); a.Seq != 2 {
		t.Fatalf("seq %d after a refused commit, want 2", a.Seq)
	}
}
