package segment_test

import (
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

var errInjected = errors.New("injected fsync failure")

// partialSyncFaultFS fails the next Sync of a partial segment file once
// armed (the fsync in Writer.Finish, before the rename).
type partialSyncFaultFS struct {
	vfs.FS
	armed atomic.Bool
	hits  atomic.Int32
}

func (fs *partialSyncFaultFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !strings.HasSuffix(name, ".partial") {
		return f, err
	}
	return &partialSyncFaultFile{File: f, fs: fs}, nil
}

type partialSyncFaultFile struct {
	vfs.File
	fs *partialSyncFaultFS
}

func (f *partialSyncFaultFile) Sync() error {
	if f.fs.armed.CompareAndSwap(true, false) {
		f.fs.hits.Add(1)
		return errInjected
	}
	return f.File.Sync()
}

// SyncData fails too: the writer's syncing file makes its final sync an
// fdatasync.
func (f *partialSyncFaultFile) SyncData() error {
	if f.fs.armed.CompareAndSwap(true, false) {
		f.fs.hits.Add(1)
		return errInjected
	}
	return f.File.SyncData()
}

// quietLog hides the WAL's commit signal from the sealer: it then wakes
// only on its ticker (every second with max_age 1h), so the seals of a
// test come from the catch-up that Fetch and Scan do.
type quietLog struct {
	segment.Log
	never chan struct{}
}

func (q quietLog) Committed() <-chan struct{} { return q.never }

// TestSealFailureOnReadIsFatal fails the fsync of a segment in a seal that
// a Fetch's catch-up runs (not the sealer's loop). DESIGN.md §6 item 8:
// a failed fsync stops the node; the store must report it through
// OnFatal and seal nothing more. What must never happen: the records of
// the failed segment skipped, the next segment sealed after them, and
// the WAL files that held them deleted: acknowledged hooks gone.
func TestSealFailureOnReadIsFatal(t *testing.T) {
	fs := &partialSyncFaultFS{FS: vfs.NewMem()}
	opts := nodeOptions{
		maxBytes: 2 << 10, maxAge: time.Hour, blockSize: 512, walFile: 2 << 10,
		dispatch: func() uint64 { return math.MaxUint64 },
		log:      func(l segment.Log) segment.Log { return quietLog{Log: l, never: make(chan struct{})} },
	}
	n := openNode(t, fs, opts)
	var hooks []envelope.Envelope
	for i := range 20 {
		hooks = append(hooks, n.mustCommit(testHook(i, 400)))
		n.sync()
	}
	fs.armed.Store(true)
	var readErr error
	for i := 20; i < 80; i++ {
		e := n.mustCommit(testHook(i, 400))
		hooks = append(hooks, e)
		if _, err := n.store.Fetch(e.ID); err != nil && readErr == nil {
			readErr = err
		}
	}
	if fs.hits.Load() != 1 {
		t.Fatalf("the fault did not fire")
	}
	t.Logf("first read error: %v", readErr)
	entries := n.catalogue()
	var fatal error
	select {
	case fatal = <-n.fatal:
	case <-time.After(2 * time.Second):
	}
	n.close()

	// What the failed store left must still hold every acknowledged hook.
	n = openNode(t, fs.FS, opts)
	defer n.close()
	for i := range hooks {
		if _, err := n.store.Fetch(hooks[i].ID); err != nil {
			t.Errorf("after the failed fsync and a restart, acknowledged seq %d: %v", hooks[i].Seq, err)
			break
		}
	}
	if len(entries) > 0 {
		last := entries[len(entries)-1].LastSeq
		next := uint64(1)
		for _, e := range entries {
			if e.FirstSeq != next {
				t.Errorf("after the failed fsync the sealer went on: segments skip seqs %d..%d (catalogue ends at %d)", next, e.FirstSeq-1, last)
				break
			}
			next = e.LastSeq + 1
		}
	}
	if fatal == nil {
		t.Errorf("a failed segment fsync in a seal run by Fetch was not reported to OnFatal")
	}
}
