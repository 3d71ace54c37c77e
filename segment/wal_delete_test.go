package segment_test

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// walWatch remembers the hooks of every WAL file it has seen, so that
// once a file is deleted the test still knows what it held.
type walWatch struct {
	t     *testing.T
	fs    vfs.FS
	hooks map[uint64][]uint64
}

// look records the files there now (call it while the sealer is idle).
func (w *walWatch) look() {
	w.t.Helper()
	for num, seqs := range walHooks(w.t, w.fs) {
		w.hooks[num] = seqs
	}
}

// lastUpTo is the highest hook seq in files up to num (0 if none).
func (w *walWatch) lastUpTo(num uint64) uint64 {
	var last uint64
	for f, seqs := range w.hooks {
		if f <= num && len(seqs) > 0 {
			last = max(last, seqs[len(seqs)-1])
		}
	}
	return last
}

// fileOf is the WAL file holding seq.
func (w *walWatch) fileOf(seq uint64) uint64 {
	for f, seqs := range w.hooks {
		if slices.Contains(seqs, seq) {
			return f
		}
	}
	w.t.Fatalf("no wal file seen holds seq %d", seq)
	return 0
}

// check compares the WAL files on disk with what the deletion rule
// (DESIGN.md §6 item 3) allows and requires after a seal that ended at
// sealed with the checkpoint at cp: a file is gone if and only if it is
// in the prefix of files the sealer has read past (those before the file
// of the last sealed hook) whose hooks are all at or below min(sealed,
// cp).
func (w *walWatch) check(what string, sealed, cp uint64) {
	w.t.Helper()
	onDisk := walFiles(w.t, w.fs)
	var seen []uint64
	for f := range w.hooks {
		seen = append(seen, f)
	}
	slices.Sort(seen)
	limit := min(sealed, cp)
	passed := w.fileOf(sealed)
	var want []uint64
	deleting := true
	for _, f := range seen {
		if deleting && f < passed && w.lastUpTo(f) <= limit {
			continue // due for deletion
		}
		deleting = false
		want = append(want, f)
	}
	for _, f := range seen {
		if !slices.Contains(onDisk, f) {
			for _, s := range w.hooks[f] {
				if s > sealed || s > cp {
					w.t.Fatalf("%s: wal file %d was deleted holding seq %d (sealed to %d, checkpoint %d)", what, f, s, sealed, cp)
				}
			}
		}
	}
	w.t.Logf("%s: wal files %d..%d of %d..%d left (sealed to %d, checkpoint %d)", what, onDisk[0], onDisk[len(onDisk)-1], seen[0], seen[len(seen)-1], sealed, cp)
	if !slices.Equal(onDisk, want) {
		w.t.Fatalf("%s: wal files %v, want %v (sealed to %d, checkpoint %d, the sealer is in file %d)", what, onDisk, want, sealed, cp, passed)
	}
}

// sealOne commits hooks one at a time until the catalogue grows, and
// returns the last catalogued seq.
func sealOne(t *testing.T, n *node, hooks *[]envelope.Envelope, w *walWatch) uint64 {
	t.Helper()
	before := len(n.catalogue())
	for range 200 {
		*hooks = append(*hooks, n.mustCommit(testHook(len(*hooks), 400)))
		n.sync()
		w.look()
		if entries := n.catalogue(); len(entries) > before {
			return entries[len(entries)-1].LastSeq
		}
	}
	t.Fatalf("200 hooks and no seal")
	return 0
}

// TestWALDeletion drives the dispatch checkpoint and checks which WAL
// files the sealer deletes: none while the checkpoint is 0; then only
// files whose hooks are all sealed and at or below it; never one holding
// a hook of the open segment. After a restart numbering goes on above the
// highest seq and id, and the sealed hooks are still there; and with
// every WAL file gone, it goes on above the catalogue (meta.Store.CatalogueFloor).
func TestWALDeletion(t *testing.T) {
	fs := vfs.NewMem()
	var cp atomic.Uint64
	opts := nodeOptions{maxBytes: 6 << 10, maxAge: time.Hour, blockSize: 1 << 10, walFile: 4 << 10,
		dispatch: func() uint64 { return cp.Load() }}
	n := openNode(t, fs, opts)
	w := &walWatch{t: t, fs: fs, hooks: map[uint64][]uint64{}}
	var hooks []envelope.Envelope
	for range 200 {
		hooks = append(hooks, n.mustCommit(testHook(len(hooks), 400)))
		n.sync()
		w.look()
	}
	entries := n.catalogue()
	if len(entries) < 5 || len(w.hooks) < 10 {
		t.Fatalf("%d segments, %d wal files: the test needs more", len(entries), len(w.hooks))
	}
	sealed := entries[len(entries)-1].LastSeq
	if got := walFiles(t, fs); len(got) != len(w.hooks) || got[0] != 1 {
		t.Fatalf("checkpoint 0: wal files %v were deleted", got)
	}

	// A checkpoint inside the sealed part: files up to it go.
	cp.Store(sealed / 2)
	sealed = sealOne(t, n, &hooks, w)
	w.check("checkpoint in the middle", sealed, cp.Load())
	if got := walFiles(t, fs); got[0] == 1 {
		t.Fatalf("checkpoint %d: no wal file deleted", cp.Load())
	}

	// A checkpoint above everything: sealed alone decides; the files of
	// the open segment stay.
	cp.Store(math.MaxUint64)
	sealed = sealOne(t, n, &hooks, w)
	w.check("checkpoint at the top", sealed, cp.Load())
	for range 30 {
		hooks = append(hooks, n.mustCommit(testHook(len(hooks), 400)))
		n.sync()
		w.look()
	}
	sealed = sealOne(t, n, &hooks, w)
	w.check("more seals", sealed, cp.Load())
	for range 3 {
		hooks = append(hooks, n.mustCommit(testHook(len(hooks), 0)))
		n.sync()
		w.look()
	}
	entries = n.catalogue()
	sealed = entries[len(entries)-1].LastSeq
	w.check("hooks after the last seal", sealed, cp.Load())
	// A deleted file leaves the log at once (renamed, wal.Retire); the
	// eraser then frees and removes it (wal.Erase). The one .tmp file that
	// stays is the next file, prepared ahead of rotation.
	active := walFiles(t, fs)
	next := wal.FileName(active[len(active)-1]+1) + ".tmp"
	waitFor(t, "the eraser left retired wal files", func() bool {
		names, err := fs.List(walDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, ".tmp") && name != next {
				return false
			}
		}
		return true
	})
	n.close()
	if uint64(len(hooks)) <= sealed {
		t.Fatalf("everything is sealed: the test needs an open segment")
	}
	checkRestart(t, fs, opts, hooks)
}

// checkRestart restarts the node and checks every hook and the numbering
// of new ones; then seals everything, removes every WAL file, and checks
// that numbering goes on above the catalogue.
func checkRestart(t *testing.T, fs vfs.FS, opts nodeOptions, hooks []envelope.Envelope) {
	t.Helper()
	n := openNode(t, fs, opts)
	// Hooks of deleted WAL files come from segments, the rest from the WAL.
	for i := range hooks {
		checkFetch(t, n.store, &hooks[i])
	}
	checkDense(t, "scan after restart", scanSeqs(t, n.store, 1, math.MaxUint64), 1, uint64(len(hooks)))
	hooks = append(hooks, checkNext(t, n, hooks[len(hooks)-1]))
	n.close()

	opts.maxAge = 20 * time.Millisecond
	n = openNode(t, fs, opts)
	n.waitSealed(uint64(len(hooks)))
	n.close()
	for _, f := range walFiles(t, fs) {
		if err := fs.Remove(fs.PathJoin(walDir, wal.FileName(f))); err != nil {
			t.Fatal(err)
		}
	}
	n = openNode(t, fs, opts)
	defer n.close()
	floor, floorID, err := n.meta.CatalogueFloor()
	if err != nil || floor != uint64(len(hooks)) || floorID != hooks[len(hooks)-1].ID {
		t.Fatalf("Floor: %d %s %v, want %d %s", floor, floorID, err, len(hooks), hooks[len(hooks)-1].ID)
	}
	hooks = append(hooks, checkNext(t, n, hooks[len(hooks)-1]))
	n.waitSealed(uint64(len(hooks)))
	for i := range hooks {
		checkFetch(t, n.store, &hooks[i])
	}
	checkDense(t, "scan with no wal left", scanSeqs(t, n.store, 1, math.MaxUint64), 1, uint64(len(hooks)))
}

// checkNext commits a hook and checks it follows last: seq last+1, a
// greater id, fetchable.
func checkNext(t *testing.T, n *node, last envelope.Envelope) envelope.Envelope {
	t.Helper()
	e := n.mustCommit(testHook(int(last.Seq)+1, 400))
	if e.Seq != last.Seq+1 || bytes.Compare(e.ID[:], last.ID[:]) <= 0 {
		t.Fatalf("after restart: seq %d id %s, want seq %d and an id above %s", e.Seq, e.ID, last.Seq+1, last.ID)
	}
	checkFetch(t, n.store, &e)
	return e
}
