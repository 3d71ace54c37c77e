package segment_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// syncHookFS wraps a file system and calls around before and after every
// Sync, SyncData and SyncTo of a file or directory opened through it: the
// WAL's, the segments', and the meta store's (pebble's) alike.
type syncHookFS struct {
	vfs.FS
	around func(where string)
}

func (fs *syncHookFS) wrap(f vfs.File, err error, path string) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &syncHookFile{File: f, fs: fs, path: path}, nil
}

func (fs *syncHookFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	return fs.wrap(f, err, name)
}

func (fs *syncHookFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, cat, opts...)
	return fs.wrap(f, err, name)
}

func (fs *syncHookFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	return fs.wrap(f, err, newname)
}

func (fs *syncHookFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, err, name)
}

type syncHookFile struct {
	vfs.File
	fs   *syncHookFS
	path string
}

func (f *syncHookFile) Sync() error {
	f.fs.around("before sync " + f.path)
	err := f.File.Sync()
	f.fs.around("after sync " + f.path)
	return err
}

func (f *syncHookFile) SyncData() error {
	f.fs.around("before fdatasync " + f.path)
	err := f.File.SyncData()
	f.fs.around("after fdatasync " + f.path)
	return err
}

func (f *syncHookFile) SyncTo(length int64) (bool, error) {
	f.fs.around("before syncto " + f.path)
	full, err := f.File.SyncTo(length)
	f.fs.around("after syncto " + f.path)
	return full, err
}

// segCrashPoint is a crash clone and the hooks acknowledged before it.
type segCrashPoint struct {
	fs      *vfs.MemFS
	acked   []envelope.Envelope
	where   string
	percent int
}

// segCrasher takes a crash clone of a MemFS at every sync point, with the
// hooks whose Commit had returned before it.
type segCrasher struct {
	mem    *vfs.MemFS
	random bool
	// armed: take clones (with random unsynced data, not before the first
	// boot is done: pebble's creation of the meta store does not survive
	// a clone that keeps some unsynced directory entries and not others).
	armed  atomic.Bool
	mu     sync.Mutex
	rng    *rand.Rand
	acked  []envelope.Envelope
	points []segCrashPoint
}

func (c *segCrasher) ack(e envelope.Envelope) {
	c.mu.Lock()
	c.acked = append(c.acked, e)
	c.mu.Unlock()
}

// crash takes a clone. A hook acknowledged before the lock is taken had
// its fdatasync return before the clone: the clone must hold it.
func (c *segCrasher) crash(where string) {
	if !c.armed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := vfs.CrashCloneCfg{}
	if c.random {
		cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: c.rng.IntN(101), RNG: c.rng}
	}
	c.points = append(c.points, segCrashPoint{
		fs: c.mem.CrashClone(cfg), acked: c.acked[:len(c.acked):len(c.acked)],
		where: where, percent: cfg.UnsyncedDataPercent,
	})
}

// crashOpts are the crash workload's: seal at 3 KiB or 5 ms, 2 KiB WAL
// files, so that seals, WAL rotations and WAL deletions interleave with
// commits. With v2, segments are sealed at 20 KiB instead (and by age
// only after a second): big enough that each leaves the next one a
// dictionary (raw/16 ≥ 1 KiB), so the crash points fall among version 2
// segments too.
func crashOpts(dispatch func() uint64, v2 bool) nodeOptions {
	if v2 {
		return nodeOptions{maxBytes: 20 << 10, maxAge: time.Second, blockSize: 2 << 10, walFile: 2 << 10, dispatch: dispatch}
	}
	return nodeOptions{maxBytes: 3 << 10, maxAge: 5 * time.Millisecond, blockSize: 512, walFile: 2 << 10, dispatch: dispatch}
}

const crashTenants = 4

// TestCrashWhileSealing commits hooks from three goroutines while the
// sealer seals, rotates and deletes WAL files, and takes a crash clone at
// every sync point of the WAL, the segments and the catalogue. Each clone
// must boot and keep DESIGN.md §6 items 1, 2 and 3: every acknowledged
// hook is fetchable with its exact bytes; no partial segment is left
// from before the crash; every catalogue entry's file is there and
// verifies, without gap or overlap; no hook is missing between the first
// and the last (a WAL file deleted too early would make a gap); with no
// dispatch checkpoint no WAL file was deleted; numbering goes on above
// every acknowledged hook and tenants keep their ordinals.
func TestCrashWhileSealing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dispatch func() uint64
		random   bool
		hooks    int
		seed     uint64
		v2       bool // segments with dictionaries (crashOpts)
	}{
		{"checkpoint at the top", func() uint64 { return math.MaxUint64 }, false, 150, 1, false},
		{"no checkpoint", nil, false, 90, 1, false},
		{"checkpoint at the top, random unsynced data seed 1", func() uint64 { return math.MaxUint64 }, true, 60, 1, false},
		{"checkpoint at the top, random unsynced data seed 2", func() uint64 { return math.MaxUint64 }, true, 60, 2, false},
		{"no checkpoint, random unsynced data", nil, true, 60, 3, false},
		{"checkpoint at the top, version 2 segments", func() uint64 { return math.MaxUint64 }, false, 180, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if raceEnabled {
				tc.hooks /= 2 // each crash point costs ~10× more
			}
			c := &segCrasher{mem: vfs.NewCrashableMem(), random: tc.random, rng: rand.New(rand.NewPCG(tc.seed, 5))}
			c.armed.Store(!tc.random)
			deleted := runSegCrashWorkload(t, c, tc.dispatch, tc.hooks, tc.v2)
			if tc.dispatch != nil && !deleted {
				t.Fatalf("no wal file was deleted: the workload did not test deletion")
			}
			adopted, discarded := counter("ankusa_segment_adopted_total"), counter("ankusa_segment_partial_discarded_total")
			walGone, withV2 := 0, 0
			for _, p := range c.points {
				if w := walFilesIfAny(t, p.fs); len(w) > 0 && w[0] > 1 {
					walGone++
				}
				if tc.v2 && holdsDictSegment(t, p.fs) {
					withV2++
				}
				verifySegCrash(t, p, tc.dispatch, tc.v2)
			}
			if tc.v2 && withV2 == 0 {
				t.Fatalf("no crash point left a version 2 segment on disk: the case tested none")
			}
			adopted = counter("ankusa_segment_adopted_total") - adopted
			discarded = counter("ankusa_segment_partial_discarded_total") - discarded
			t.Logf("%d crash points verified: %d with wal files deleted, %d with a version 2 segment, %d segments adopted, %d partial ones discarded",
				len(c.points), walGone, withV2, adopted, discarded)
			// Without these the workload did not crash where it matters. A
			// partial segment's directory entry is never synced before its
			// rename: only clones that keep unsynced entries have one.
			if adopted == 0 || (tc.random && discarded == 0) || (tc.dispatch != nil) != (walGone > 0) {
				t.Fatalf("the crash points missed a case: adoption, partial removal or wal deletion")
			}
		})
	}
}

// runSegCrashWorkload runs the workload on c's file system and reports
// whether the sealer deleted a WAL file.
func runSegCrashWorkload(t *testing.T, c *segCrasher, dispatch func() uint64, hooks int, v2 bool) bool {
	fs := &syncHookFS{FS: c.mem, around: c.crash}
	n := openNode(t, fs, crashOpts(dispatch, v2))
	c.armed.Store(true)
	const workers = 3
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < hooks; i += workers {
				h := testHook(i, 700)
				h.TenantID = fmt.Sprintf("t%d", i%crashTenants)
				e, err := n.commit(h)
				if err != nil {
					t.Errorf("commit: %v", err)
					return
				}
				c.ack(e)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	n.waitSealed(uint64(hooks))
	deleted := walFiles(t, c.mem)[0] > 1
	n.close()
	c.crash("after close")
	return deleted
}

// verifySegCrash boots a node on a crash clone and checks it.
func verifySegCrash(t *testing.T, p segCrashPoint, dispatch func() uint64, v2 bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("crash %s (%d%% of unsynced data kept, %d acknowledged): %s",
			p.where, p.percent, len(p.acked), fmt.Sprintf(format, args...))
	}
	defer func() {
		if t.Failed() { // a helper's Fatal: say where
			t.Logf("at crash %s (%d%% of unsynced data kept, %d acknowledged)", p.where, p.percent, len(p.acked))
		}
	}()
	walBefore := walFilesIfAny(t, p.fs)
	if dispatch == nil && len(walBefore) > 0 && (walBefore[0] != 1 || walBefore[len(walBefore)-1] != uint64(len(walBefore))) {
		fail("wal files %v: one was deleted with no dispatch checkpoint", walBefore)
	}
	o := crashOpts(dispatch, v2)
	o.maxAge = time.Hour // nothing moves while the test looks
	n, err := tryOpenNode(t, p.fs, o)
	if err != nil {
		fail("boot: %v", err)
	}
	defer n.close()

	floor, _, err := n.meta.CatalogueFloor()
	if err != nil {
		fail("%v", err)
	}
	for _, name := range namesWith(t, p.fs, segDir, ".partial") {
		if name != fmt.Sprintf("%020d.partial", floor+1) || floor >= n.wal.LastSeq() {
			fail("partial segment %s after boot (catalogue ends at %d, wal at %d)", name, floor, n.wal.LastSeq())
		}
	}
	if got := checkCatalogue(t, p.fs, n.catalogue(), 1); got != floor {
		fail("catalogue ends at %d, Floor says %d", got, floor)
	}
	for i := range p.acked {
		got, err := n.store.Fetch(p.acked[i].ID)
		if err != nil {
			fail("fetch of acknowledged seq %d: %v", p.acked[i].Seq, err)
		}
		if !sameEnvelope(got, &p.acked[i]) {
			fail("fetch of acknowledged seq %d:\n got %s\nwant %s", p.acked[i].Seq, describe(got), describe(&p.acked[i]))
		}
	}
	last := n.wal.LastSeq()
	var seqs []uint64
	if err := n.store.Scan(1, last, func(e *envelope.Envelope) error { seqs = append(seqs, e.Seq); return nil }); err != nil {
		fail("scan 1..%d: %v", last, err)
	}
	if uint64(len(seqs)) != last {
		fail("scan 1..%d met %d hooks: some are gone", last, len(seqs))
	}
	if dispatch == nil {
		if w := walFiles(t, p.fs); w[0] != 1 {
			fail("wal files %v after boot: one was deleted with no dispatch checkpoint", w)
		}
	}

	// Numbering goes on above everything acknowledged; tenants keep their
	// ordinals.
	var top envelope.ID
	ords := map[string]uint32{}
	for _, a := range p.acked {
		if bytes.Compare(a.ID[:], top[:]) > 0 {
			top = a.ID
		}
		ords[a.TenantID] = a.TenantOrdinal
	}
	for k := range crashTenants {
		h := testHook(10_000+k, 50)
		h.TenantID = fmt.Sprintf("t%d", k)
		e, err := n.commit(h)
		if err != nil {
			fail("commit after boot: %v", err)
		}
		if e.Seq != last+uint64(k)+1 || bytes.Compare(e.ID[:], top[:]) <= 0 {
			fail("commit after boot: seq %d id %s, want seq %d and an id above %s", e.Seq, e.ID, last+uint64(k)+1, top)
		}
		if o, ok := ords[h.TenantID]; ok && o != e.TenantOrdinal {
			fail("tenant %s: ordinal %d after boot, %d before", h.TenantID, e.TenantOrdinal, o)
		}
		top = e.ID
	}
}

// holdsDictSegment reports whether a whole segment file on fs (catalogued
// or not) is a version 2 one.
func holdsDictSegment(t testing.TB, fs vfs.FS) bool {
	t.Helper()
	for _, name := range namesWith(t, fs, segDir, ".seg") {
		f, err := segment.OpenFile(fs, fs.PathJoin(segDir, name))
		if err != nil {
			continue // damage is verifySegCrash's to judge
		}
		v2 := f.DictID != 0
		f.Close()
		if v2 {
			return true
		}
	}
	return false
}

// walFilesIfAny is walFiles for a file system that may not have the WAL
// directory yet (a crash during the first boot).
func walFilesIfAny(t testing.TB, fs vfs.FS) []uint64 {
	t.Helper()
	var nums []uint64
	for _, name := range listDir(t, fs, walDir) {
		if num, ok := wal.ParseFileName(name); ok {
			nums = append(nums, num)
		}
	}
	return nums
}
