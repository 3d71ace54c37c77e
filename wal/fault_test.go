package wal_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/ankusa/ankusa/wal"
)

// fatalCalls records OnFatal calls.
type fatalCalls struct {
	mu   sync.Mutex
	errs []error
}

func (f *fatalCalls) OnFatal(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

func (f *fatalCalls) get() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// gatedInjector injects errorfs.ErrInjected into the first operation that
// matches once armed. If hold is set, that operation first signals entered
// and waits for release, so a test can queue commits behind it.
type gatedInjector struct {
	match   func(op errorfs.Op) bool
	hold    bool
	armed   atomic.Bool
	fired   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedInjector) String() string { return "gated" }

func (g *gatedInjector) MaybeError(op errorfs.Op) error {
	if !g.armed.Load() || !g.match(op) {
		return nil
	}
	if g.fired.Swap(true) {
		// Later matching operations fail too: a broken disk stays broken.
		return errorfs.ErrInjected
	}
	if g.hold {
		close(g.entered)
		<-g.release
	}
	return errorfs.ErrInjected
}

func opOn(kind errorfs.OpKind, suffix string) func(errorfs.Op) bool {
	return func(op errorfs.Op) bool { return op.Kind == kind && strings.HasSuffix(op.Path, suffix) }
}

func opAt(kind errorfs.OpKind, path string) func(errorfs.Op) bool {
	return func(op errorfs.Op) bool { return op.Kind == kind && op.Path == path }
}

// TestFatalFault injects an I/O error into a commit's write, fdatasync or
// rotation and checks that it is fatal: OnFatal once, the batch and every
// later commit fail with ErrFatal, nothing of them is counted as durable,
// and Close reports the failure. (Rotation renames a file prepared off the
// loop into the log and syncs the directory; TestPrepareFault fails the
// preparation.)
func TestFatalFault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		match   func(errorfs.Op) bool
		rotate  bool   // every batch starts a new file
		wantMsg string // in the error OnFatal gets
	}{
		{"fdatasync", opOn(errorfs.OpFileSyncData, ".wal"), false, "cannot fdatasync wal file"},
		{"write", opOn(errorfs.OpFileWrite, ".wal"), false, "cannot write wal file"},
		{"rotation rename", opOn(errorfs.OpRename, ".wal.tmp"), true, "cannot rename wal file"},
		{"rotation directory open", opAt(errorfs.OpOpenDir, dir), true, "cannot open directory"},
		{"rotation directory sync", opAt(errorfs.OpFileSync, dir), true, "cannot fsync directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fatalCounter := metrics.GetOrCreateCounter("ankusa_wal_fatal_errors_total")
			fatal0 := fatalCounter.Get()
			mem := vfs.NewCrashableMem()
			inj := &gatedInjector{match: tc.match, hold: true, entered: make(chan struct{}), release: make(chan struct{})}
			var fatal fatalCalls
			opts := wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal}
			if tc.rotate {
				opts.MaxFileBytes = 1
			}
			w := openWAL(t, opts)
			var acked []ack
			for i := 0; i < 3; i++ {
				acked = append(acked, mustCommit(t, w, hook{tenant: "acme", tag: fmt.Sprintf("ok-%d", i)}))
			}
			lastID := w.LastID()
			inj.armed.Store(true)

			results := make(chan commitResult, 16)
			go func() {
				a, err := commit(w, hook{tenant: "acme", tag: "failing"})
				results <- commitResult{a, err}
			}()
			<-inj.entered // the failing batch is inside the broken operation
			queued := commitBehind(w, results)
			waitFor(t, "commits to queue behind the fault", func() bool { return w.QueuedBytes() == queued })
			close(inj.release)
			for i := 0; i < 9; i++ {
				r := <-results
				if !errors.Is(r.err, wal.ErrFatal) {
					t.Fatalf("commit %q: %v, want ErrFatal", r.a.Tag, r.err)
				}
			}
			if !w.Failed() {
				t.Fatalf("Failed() = false after a fatal error")
			}
			if _, err := commit(w, hook{tenant: "acme", tag: "later"}); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Commit after the fault: %v", err)
			}
			// Nothing after the fault counts as durable.
			if w.LastSeq() != 3 || w.LastID() != lastID || w.QueuedBytes() != 0 {
				t.Fatalf("after the fault: LastSeq %d LastID %v QueuedBytes %d", w.LastSeq(), w.LastID(), w.QueuedBytes())
			}
			if err := w.Close(); !errors.Is(err, wal.ErrFatal) {
				t.Fatalf("Close after the fault: %v", err)
			}
			errs := fatal.get()
			if len(errs) != 1 {
				t.Fatalf("OnFatal called %d times: %v", len(errs), errs)
			}
			if !errors.Is(errs[0], errorfs.ErrInjected) || !strings.Contains(errs[0].Error(), tc.wantMsg) {
				t.Fatalf("OnFatal(%v): want an error wrapping the injected one, saying %q", errs[0], tc.wantMsg)
			}
			if got := fatalCounter.Get() - fatal0; got != 1 {
				t.Fatalf("ankusa_wal_fatal_errors_total rose by %d", got)
			}

			// The node restarts on a working disk: the acknowledged hooks are
			// there; what failed may or may not be (it was never
			// acknowledged), but the log is sound and goes on.
			crashed := mem.CrashClone(vfs.CrashCloneCfg{})
			w2 := openWAL(t, wal.Options{FS: crashed})
			next := mustCommit(t, w2, hook{tenant: "acme", tag: "restart"})
			closeWAL(t, w2)
			hooks := checkLog(t, mustReadLog(t, crashed, dir), 1, nil)
			checkAcked(t, hooks, append(acked, next))
			if next.Seq < 4 {
				t.Fatalf("seq %d reused after restart", next.Seq)
			}
		})
	}
}

// TestFatalAtClose fails the final fdatasync of Close.
func TestFatalAtClose(t *testing.T) {
	fatalCounter := metrics.GetOrCreateCounter("ankusa_wal_fatal_errors_total")
	fatal0 := fatalCounter.Get()
	mem := vfs.NewMem()
	inj := &gatedInjector{match: opOn(errorfs.OpFileSyncData, ".wal")}
	var fatal fatalCalls
	w := openWAL(t, wal.Options{FS: errorfs.Wrap(mem, inj), OnFatal: fatal.OnFatal})
	mustCommit(t, w, hook{tenant: "acme", tag: "a"})
	inj.armed.Store(true)
	if err := w.Close(); !errors.Is(err, wal.ErrFatal) {
		t.Fatalf("Close with a failing fdatasync: %v", err)
	}
	if errs := fatal.get(); len(errs) != 1 || !errors.Is(errs[0], errorfs.ErrInjected) {
		t.Fatalf("OnFatal calls: %v", errs)
	}
	if err := w.Close(); !errors.Is(err, wal.ErrFatal) {
		t.Fatalf("second Close: %v", err)
	}
	if errs := fatal.get(); len(errs) != 1 {
		t.Fatalf("OnFatal called again by a second Close: %v", errs)
	}
	if got := fatalCounter.Get() - fatal0; got != 1 {
		t.Fatalf("ankusa_wal_fatal_errors_total rose by %d", got)
	}
}

// TestOpenFaults checks that I/O errors while opening are returned, not
// swallowed, and leave nothing running.
func TestOpenFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(errorfs.Op) bool
	}{
		{"mkdir", func(op errorfs.Op) bool { return op.Kind == errorfs.OpMkdirAll }},
		{"list", func(op errorfs.Op) bool { return op.Kind == errorfs.OpList }},
		{"read", opOn(errorfs.OpFileRead, ".wal")},
		{"create", opOn(errorfs.OpCreate, ".wal")},
		{"header sync", opOn(errorfs.OpFileSync, ".wal")},
		{"directory sync", opAt(errorfs.OpFileSync, dir)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			// A log with one hook, so there is a file to read.
			w := openWAL(t, wal.Options{FS: mem})
			mustCommit(t, w, hook{tenant: "acme", tag: "a"})
			closeWAL(t, w)
			inj := &gatedInjector{match: tc.match}
			inj.armed.Store(true)
			w, err := wal.Open(wal.Options{FS: errorfs.Wrap(mem, inj), Dir: dir, Node: testNode})
			if err == nil {
				w.Close()
				t.Fatalf("Open succeeded with a failing %s", tc.name)
			}
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("Open: %v does not wrap the injected error", err)
			}
			// The log is intact for the next attempt.
			w = openWAL(t, wal.Options{FS: mem})
			if w.LastSeq() != 1 {
				t.Fatalf("LastSeq %d after a failed Open", w.LastSeq())
			}
			closeWAL(t, w)
		})
	}
}
