package segment_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// fakeClock is the segment store's clock in retention tests; the sealer's
// ticker stays real.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// askLog records what CanRemoveLocal was asked.
type askLog struct {
	mu     sync.Mutex
	asked  []uint64 // last seqs
	answer func(meta.SegmentEntry) bool
}

func (a *askLog) ask(e meta.SegmentEntry) bool {
	a.mu.Lock()
	a.asked = append(a.asked, e.LastSeq)
	a.mu.Unlock()
	return a.answer(e)
}

func (a *askLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// retentionNode seals 60 hooks into several segments at the fake clock's
// time and returns the node and the hooks. The store's MaxAge (40 ms of
// the fake clock) makes its ticker run every 10 ms of real time, so a
// sweep follows soon after the clock passes a minute.
func retentionNode(t *testing.T, fs vfs.FS, clock *fakeClock, o nodeOptions) (*node, []envelope.Envelope) {
	t.Helper()
	o.maxBytes, o.maxAge, o.blockSize, o.now = 4<<10, 40*time.Millisecond, 1<<10, clock.now
	n := openNode(t, fs, o)
	var hooks []envelope.Envelope
	for i := range 60 {
		hooks = append(hooks, n.mustCommit(testHook(i, 500)))
	}
	n.sync()                   // the open segment is opened at the fake time...
	clock.advance(time.Second) // ...and sealed by age
	n.waitSealed(uint64(len(hooks)))
	if k := len(n.catalogue()); k < 4 {
		t.Fatalf("%d segments, the test needs several", k)
	}
	return n, hooks
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// removed returns the last seqs of the entries marked removed.
func removed(n *node) []uint64 {
	var out []uint64
	for _, e := range n.catalogue() {
		if e.Removed {
			out = append(out, e.LastSeq)
		}
	}
	return out
}

// TestRetentionRemoves: once segment.retain_local has passed (by the
// store's clock), the sweep marks sealed segments removed in the
// catalogue and removes their files; a fetch of their hooks answers
// ErrRemoved and a scan over them fails with it; hooks sealed later are
// kept. A crash between the mark and the removal leaves the file, which
// the next boot removes.
func TestRetentionRemoves(t *testing.T) {
	fs := vfs.NewMem()
	clock := newFakeClock()
	o := nodeOptions{retainLocal: time.Hour, dispatch: checkpointAtTop}
	n, hooks := retentionNode(t, fs, clock, o)
	old := n.catalogue()
	savedName := old[0].Name
	saved := readMemFile(t, fs, fs.PathJoin(segDir, savedName))

	clock.advance(30 * time.Minute)
	var late []envelope.Envelope
	for i := range 10 {
		late = append(late, n.mustCommit(testHook(100+i, 500)))
	}
	n.sync()
	clock.advance(time.Second)
	n.waitSealed(late[len(late)-1].Seq)

	clock.advance(31 * time.Minute) // the first segments are 61 minutes old, the late ones 31
	var want []uint64
	for _, e := range old {
		want = append(want, e.LastSeq)
	}
	// The sweep marks one segment at a time: wait for as many marks as
	// there are old segments, then compare which.
	waitFor(t, "the sweep did not remove every old segment", func() bool { return len(removed(n)) >= len(want) })
	n.sync()
	got := removed(n)
	if !slices.Equal(got, want) {
		t.Fatalf("removed segments ending at %v, want %v", got, want)
	}
	checkCatalogue(t, fs, n.catalogue(), 1)
	for _, e := range old {
		if _, err := fs.Stat(fs.PathJoin(segDir, e.Name)); err == nil {
			t.Fatalf("%s is marked removed but still on disk", e.Name)
		}
	}
	for i := range hooks {
		if _, err := n.store.Fetch(hooks[i].ID); !errors.Is(err, segment.ErrRemoved) {
			t.Fatalf("fetch of seq %d in a removed segment: %v, want ErrRemoved", hooks[i].Seq, err)
		}
	}
	for i := range late {
		checkFetch(t, n.store, &late[i])
	}
	err := n.store.Scan(1, late[len(late)-1].Seq, func(*envelope.Envelope) error { return nil })
	if !errors.Is(err, segment.ErrRemoved) {
		t.Fatalf("scan over removed segments: %v, want ErrRemoved", err)
	}
	checkDense(t, "scan of the kept hooks", scanSeqs(t, n.store, late[0].Seq, late[len(late)-1].Seq), late[0].Seq, late[len(late)-1].Seq)
	n.close()

	// A crash after the synced mark, before the file's removal.
	writeSynced(t, fs, fs.PathJoin(segDir, savedName), saved)
	n = openNode(t, fs, nodeOptions{now: clock.now})
	defer n.close()
	if _, err := fs.Stat(fs.PathJoin(segDir, savedName)); err == nil {
		t.Fatalf("boot left %s, which the catalogue marks removed", savedName)
	}
	if _, err := n.store.Fetch(hooks[0].ID); !errors.Is(err, segment.ErrRemoved) {
		t.Fatalf("fetch after restart: %v, want ErrRemoved", err)
	}
	checkCatalogue(t, fs, n.catalogue(), 1)
}

// TestRetentionAsks: CanRemoveLocal is asked about each segment past
// segment.retain_local, and one it refuses is kept, file and all; the
// dispatch checkpoint keeps every segment holding a hook above it.
func TestRetentionAsks(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		fs := vfs.NewMem()
		clock := newFakeClock()
		a := &askLog{answer: func(meta.SegmentEntry) bool { return false }}
		n, hooks := retentionNode(t, fs, clock, nodeOptions{retainLocal: time.Hour, dispatch: checkpointAtTop, canRemoveLocal: a.ask})
		defer n.close()
		clock.advance(2 * time.Hour)
		k := len(n.catalogue())
		waitFor(t, "CanRemoveLocal was not asked about every segment", func() bool { return a.count() >= k })
		n.sync()
		if r := removed(n); len(r) > 0 {
			t.Fatalf("segments ending at %v removed though CanRemoveLocal refused", r)
		}
		checkCatalogue(t, fs, n.catalogue(), 1)
		for i := range hooks {
			checkFetch(t, n.store, &hooks[i])
		}
	})
	t.Run("some", func(t *testing.T) {
		fs := vfs.NewMem()
		clock := newFakeClock()
		var allowTo atomic.Uint64
		a := &askLog{answer: func(e meta.SegmentEntry) bool { return e.LastSeq <= allowTo.Load() }}
		n, hooks := retentionNode(t, fs, clock, nodeOptions{retainLocal: time.Hour, dispatch: checkpointAtTop, canRemoveLocal: a.ask})
		defer n.close()
		entries := n.catalogue()
		allowTo.Store(entries[1].LastSeq)
		clock.advance(2 * time.Hour)
		// The mark is synced before the file goes: wait for both.
		waitFor(t, "the first two segments were not removed", func() bool {
			_, err0 := fs.Stat(fs.PathJoin(segDir, entries[0].Name))
			_, err1 := fs.Stat(fs.PathJoin(segDir, entries[1].Name))
			return len(removed(n)) >= 2 && err0 != nil && err1 != nil
		})
		n.sync()
		if r := removed(n); !slices.Equal(r, []uint64{entries[0].LastSeq, entries[1].LastSeq}) {
			t.Fatalf("removed %v, want the first two segments", r)
		}
		checkCatalogue(t, fs, n.catalogue(), 1)
		for i := range hooks {
			if hooks[i].Seq <= entries[1].LastSeq {
				if _, err := n.store.Fetch(hooks[i].ID); !errors.Is(err, segment.ErrRemoved) {
					t.Fatalf("fetch of seq %d: %v, want ErrRemoved", hooks[i].Seq, err)
				}
			} else {
				checkFetch(t, n.store, &hooks[i])
			}
		}
	})
	t.Run("dispatch checkpoint", func(t *testing.T) {
		fs := vfs.NewMem()
		clock := newFakeClock()
		var cp atomic.Uint64
		n, hooks := retentionNode(t, fs, clock, nodeOptions{retainLocal: time.Hour, dispatch: cp.Load})
		defer n.close()
		entries := n.catalogue()
		cp.Store(entries[2].LastSeq - 1) // inside the third segment
		clock.advance(2 * time.Hour)
		waitFor(t, "the first two segments were not removed", func() bool { return len(removed(n)) >= 2 })
		// Give the sweep another turn to take more than it may.
		clock.advance(2 * time.Minute)
		time.Sleep(50 * time.Millisecond)
		n.sync()
		if r := removed(n); !slices.Equal(r, []uint64{entries[0].LastSeq, entries[1].LastSeq}) {
			t.Fatalf("removed %v with the checkpoint at %d, want the first two segments", r, cp.Load())
		}
		for i := range hooks {
			if hooks[i].Seq > entries[1].LastSeq {
				checkFetch(t, n.store, &hooks[i])
			}
		}
	})
}

// TestFetchWhileRetentionRemoves fetches hooks of old segments from two
// goroutines while the sweep removes those segments: each fetch returns
// the hook or ErrRemoved (what sends a caller to the archive), never
// another error. The race is narrow (a catalogue read before the mark, a
// file opened after the removal), so the test runs eight rounds.
func TestFetchWhileRetentionRemoves(t *testing.T) {
	fs := vfs.NewMem()
	clock := newFakeClock()
	n := openNode(t, fs, nodeOptions{maxBytes: 600, maxAge: 40 * time.Millisecond, blockSize: 256, now: clock.now, retainLocal: time.Hour, dispatch: checkpointAtTop})
	defer n.close()
	for round := range 8 {
		var hooks []envelope.Envelope
		for i := range 1000 {
			hooks = append(hooks, n.mustCommit(testHook(round*1000+i, 300)))
		}
		n.sync()
		clock.advance(time.Second)
		n.waitSealed(hooks[len(hooks)-1].Seq)
		stop := make(chan struct{})
		errs := make(chan error, 2)
		for g := range 2 {
			go func() { errs <- fetchUntil(n, hooks, uint64(g), stop) }()
		}
		clock.advance(2 * time.Hour)
		waitFor(t, "retention removed nothing", func() bool { return len(removed(n)) == len(n.catalogue()) })
		close(stop)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// fetchUntil fetches random hooks until stop and returns the first error
// other than ErrRemoved, or a wrong hook.
func fetchUntil(n *node, hooks []envelope.Envelope, seed uint64, stop chan struct{}) error {
	rng := rand.New(rand.NewPCG(seed, 9))
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		w := &hooks[rng.IntN(len(hooks))]
		got, err := n.store.Fetch(w.ID)
		switch {
		case errors.Is(err, segment.ErrRemoved):
		case err != nil:
			return fmt.Errorf("fetch of seq %d while retention removes its segment: %w", w.Seq, err)
		case !sameEnvelope(got, w):
			return fmt.Errorf("fetch of seq %d returned %s", w.Seq, describe(got))
		}
	}
}

// TestRetentionArchiving: while archiving, a local segment past
// segment.retain_local goes only after its synced archived mark, whatever
// HoldsLive says, and never while it holds a hook past the dispatch
// checkpoint (DESIGN.md §6 item 3, the rule of segment.Keeper).
func TestRetentionArchiving(t *testing.T) {
	fs := vfs.NewMem()
	clock := newFakeClock()
	var cp atomic.Uint64
	cp.Store(math.MaxUint64)
	delivered := func(meta.SegmentEntry) bool { return true }
	n, hooks := retentionNode(t, fs, clock, nodeOptions{retainLocal: time.Hour, archiving: true, dispatch: cp.Load, canRemoveLocal: delivered})
	defer n.close()
	entries := n.catalogue()
	if len(entries) < 4 {
		t.Fatalf("%d segments, want at least 4", len(entries))
	}
	clock.advance(2 * time.Hour)
	clock.advance(2 * time.Minute)
	time.Sleep(50 * time.Millisecond)
	n.sync()
	if r := removed(n); len(r) > 0 {
		t.Fatalf("segments ending at %v removed before any archived mark", r)
	}
	// Archived: the first three; the checkpoint inside the second.
	for _, e := range entries[:3] {
		if _, ok, err := n.meta.UpdateSegment(e.LastSeq, func(e *meta.SegmentEntry) { e.Archived = true }); err != nil || !ok {
			t.Fatalf("mark archived: %v %v", ok, err)
		}
	}
	cp.Store(entries[1].LastSeq - 1)
	clock.advance(2 * time.Minute)
	waitFor(t, "the first archived segment was not removed", func() bool { return len(removed(n)) >= 1 })
	clock.advance(2 * time.Minute)
	time.Sleep(50 * time.Millisecond)
	n.sync()
	if r := removed(n); !slices.Equal(r, []uint64{entries[0].LastSeq}) {
		t.Fatalf("removed %v with the checkpoint at %d, want the first segment only", r, cp.Load())
	}
	cp.Store(math.MaxUint64)
	clock.advance(2 * time.Minute)
	waitFor(t, "the archived segments were not removed", func() bool { return len(removed(n)) >= 3 })
	clock.advance(2 * time.Minute)
	time.Sleep(50 * time.Millisecond)
	n.sync()
	if r := removed(n); !slices.Equal(r, []uint64{entries[0].LastSeq, entries[1].LastSeq, entries[2].LastSeq}) {
		t.Fatalf("removed %v, want the three archived segments", r)
	}
	for i := range hooks {
		if hooks[i].Seq > entries[2].LastSeq {
			checkFetch(t, n.store, &hooks[i])
		}
	}
}
