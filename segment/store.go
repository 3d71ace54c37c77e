package segment

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/throttle"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/wal"
)

// Errors of Fetch and Scan.
var (
	// ErrNotFound: no hook has that id on this node.
	ErrNotFound = errors.New("segment: hook not found")
	// ErrRemoved: the hook's segment was removed from local disk by
	// retention (the archive stage reads it from there).
	ErrRemoved = errors.New("segment: the hook's segment is no longer on local disk")
)

// Log is what the store needs of the WAL: its durable end, a signal when
// it moves, and where its files are.
type Log interface {
	Durable() wal.Position
	Committed() <-chan struct{}
	Dir() string
	FS() vfs.FS
}

// Remote reads archived segments.
type Remote interface {
	// Open returns a name for errors and a ranged reader of the archived
	// segment of e (e.Size bytes).
	Open(e *meta.SegmentEntry) (name string, r io.ReaderAt)
}

// Options configure a Store.
type Options struct {
	// FS is the file system segments are written through (the WAL's, so
	// crash tests cover both).
	FS  vfs.FS
	Dir string
	Log Log
	// Meta holds the catalogue.
	Meta *meta.Store
	// MaxBytes and MaxAge seal the open segment (segment.max_bytes,
	// segment.max_age); BlockSize cuts blocks (default 256 KiB).
	MaxBytes  int64
	MaxAge    time.Duration
	BlockSize int
	// NoDict writes every segment without a dictionary, as version 1
	// (segment.dictionary: false). By default a segment is compressed
	// with a dictionary made of the last records of the segment sealed
	// before it, if that one was sealed within MaxAge (dict.go).
	NoDict bool
	// RetainLocal is how long a sealed segment stays on local disk
	// (segment.retain_local; 0 keeps it forever).
	RetainLocal time.Duration
	// Keeper says what dispatch still needs; the store asks it before it
	// deletes a WAL file or removes a local segment (see Keeper). Required:
	// without it the store could apply neither deletion rule, so Open
	// refuses a nil one (the node passes its meta store).
	Keeper Keeper
	// Archiving: sealed segments are uploaded to an archive, and a local
	// one is removed only after its synced archived mark; fetch and
	// retries then read the archive (Remote). Without it, a local segment
	// is removed only once every hook in it is delivered or dead.
	Archiving bool
	// Remote reads the segments retention removed from local disk (the
	// archive): fetch and scan go on working after a segment is gone.
	// nil: a removed segment's hooks are ErrRemoved.
	Remote Remote
	// ScrubRate is how many bytes a second the scrubber reads of the
	// local segments to check every block's checksum (segment.scrub_rate;
	// 0: no passes, only what boot and reads find is reported and
	// restored).
	ScrubRate int64
	// Repair restores a damaged local segment that is archived (the
	// archive); nil: damage is reported, never repaired.
	Repair Repairer
	// CacheBytes bounds the block cache (default 64 MiB).
	CacheBytes int64
	Logger     *zap.Logger
	Now        func() time.Time
	// OnFatal is called once when a storage write or sync fails: the node
	// must stop (DESIGN.md §6 item 8).
	OnFatal func(error)
}

// Keeper is what dispatch still needs of the log and the segments; the
// meta store answers it from dispatch's durable records. The deletion
// rules of DESIGN.md §6 item 3 are the store's own and it applies them:
//
//   - a WAL file goes only when every hook in it is sealed into a segment
//     whose sync returned and whose catalogue entry is synced, and is at
//     or below DurableCheckpoint;
//   - a local segment past segment.retain_local goes only when it holds
//     no hook past DurableCheckpoint, and then, while archiving, after its
//     synced archived mark, otherwise once HoldsLive says every hook in it
//     is delivered or dead.
type Keeper interface {
	// DurableCheckpoint is the seq up to which every hook's delivery rows
	// are durable: nothing at or below it is needed to rebuild them.
	DurableCheckpoint() uint64
	// HoldsLive reports whether a hook with first <= seq <= last still has
	// a delivery row that is not dead, or waits in the quarantine pen.
	HoldsLive(first, last uint64) (bool, error)
}

// Store seals the log into segments and reads hooks back.
type Store struct {
	o    Options
	enc  *zstd.Encoder
	denc *DictEncoder // the sealer's, for version 2 segments
	dec  *Decoder

	// mu guards the tail, the open segment and the WAL file list: the
	// sealing goroutine holds it while it seals, readers while they look
	// at the part of the log not sealed yet.
	mu       sync.Mutex
	tail     *wal.Tail
	open     *Writer
	openedAt time.Time
	// nextDict is the dictionary the last sealed segment left for the next
	// one (Writer.NextDict), dropped if that one opens after nextDictBy.
	nextDict   []byte
	nextDictBy time.Time
	walDone    []walFile
	failed     error
	running    bool // Open returned: failures go to OnFatal

	// After a full disk (space.go), under mu.
	spaceFails int
	retryAt    time.Time
	spaceLog   throttle.Throttle

	sealedSeq atomic.Uint64
	sealedID  atomic.Pointer[envelope.ID]
	files     *fileCache
	cache     *blockCache

	// Retired WAL files wait in erase for the eraser (eraseLoop), which
	// eraseKick wakes.
	eraseMu    sync.Mutex
	erase      []uint64
	eraseKick  chan struct{}
	eraserDone chan struct{}

	sealed chan struct{} // signalled (never blocking) after each seal

	// damage lists the damaged local segments; scrubKick wakes the
	// scrubber (scrubLoop) when a read finds one.
	damage    *damageSet
	scrubKick chan struct{}
	scrubDone chan struct{}

	stop chan struct{}
	done chan struct{}
}

// Sealed is signalled after a segment is sealed and catalogued (at most one
// signal waits): the archive uploads it without waiting for its next poll.
func (s *Store) Sealed() <-chan struct{} { return s.sealed }

// walFile is a WAL file read to its end: every hook in it is at or below
// lastSeq.
type walFile struct {
	num     uint64
	lastSeq uint64
}

// Open recovers the segment directory (removes partial segments, adopts
// whole ones the catalogue lacks), positions the sealer after the last
// catalogued seq and starts it.
func Open(o Options) (*Store, error) {
	if o.Keeper == nil {
		return nil, errors.New("segment: Options.Keeper is nil: the store deletes no WAL file and removes no segment without it (pass the meta store)")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnFatal == nil {
		o.OnFatal = func(error) {}
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 10 * time.Second
	}
	s := &Store{
		o: o, enc: NewEncoder(), denc: NewDictEncoder(), dec: NewDecoder(),
		files: newFileCache(64), cache: newBlockCache(o.CacheBytes),
		stop: make(chan struct{}), done: make(chan struct{}),
		eraseKick: make(chan struct{}, 1), eraserDone: make(chan struct{}),
		sealed: make(chan struct{}, 1),
		damage: newDamageSet(), scrubKick: make(chan struct{}, 1), scrubDone: make(chan struct{}),
	}
	if err := vfsutil.MkdirAllSynced(o.FS, o.Dir); err != nil {
		return nil, fmt.Errorf("cannot create segment directory %q: %w", o.Dir, err)
	}
	if err := s.recoverDir(); err != nil {
		return nil, err
	}
	if err := s.checkLocal(); err != nil {
		return nil, err
	}
	last, ok, err := o.Meta.LastSegment()
	if err != nil {
		return nil, err
	}
	if ok {
		s.sealedSeq.Store(last.LastSeq)
		s.sealedID.Store(&last.LastID)
	}
	sealedSeqGauge.Set(float64(s.sealedSeq.Load()))
	s.tail = wal.NewTail(o.Log.FS(), o.Log.Dir(), 0, s.sealedSeq.Load())
	s.tail.OnGap = s.onGap
	// Catch up with what the log already holds before serving reads.
	s.mu.Lock()
	err = s.catchUp()
	if isNoSpace(err) {
		err = nil // the sealer tries again once space returns
	}
	s.running = err == nil
	s.mu.Unlock()
	if err != nil {
		s.abandon()
		return nil, err
	}
	go s.loop(o.Now())
	go s.eraseLoop()
	go s.scrubLoop()
	return s, nil
}

// recoverDir applies DESIGN.md §6 item 3 at boot: a partial segment is
// removed (its records are still in the WAL, which is never deleted before
// a segment is catalogued), a whole segment missing from the catalogue is
// verified and adopted, and the file of an entry retention marked removed
// is removed.
func (s *Store) recoverDir() error {
	names, err := s.o.FS.List(s.o.Dir)
	if err != nil {
		return fmt.Errorf("cannot list segment directory %q: %w", s.o.Dir, err)
	}
	changed := false
	for _, name := range names {
		path := s.o.FS.PathJoin(s.o.Dir, name)
		if strings.HasSuffix(name, restoreSuffix) {
			// A restore a crash cut short: the damaged file is still in
			// place, and is found and restored again.
			if err := s.o.FS.Remove(path); err != nil {
				return fmt.Errorf("cannot remove an unfinished restore %q: %w", path, err)
			}
			changed = true
			continue
		}
		if strings.HasSuffix(name, partialSuffix) {
			if err := s.o.FS.Remove(path); err != nil {
				return fmt.Errorf("cannot remove partial segment %q: %w", path, err)
			}
			discardedTotal.Inc()
			s.o.Logger.Info("removed a partial segment; its hooks are sealed again from the wal", zap.String("file", path))
			changed = true
			continue
		}
		first, last, ok := parseFileName(name)
		if !ok {
			continue
		}
		e, found, err := s.o.Meta.SegmentBySeq(last)
		if err != nil {
			return err
		}
		if found && e.Name == name {
			if e.Removed {
				// A crash between the synced "removed" mark and the removal.
				if err := s.o.FS.Remove(path); err != nil {
					return fmt.Errorf("cannot remove segment %q: %w", path, err)
				}
				changed = true
			}
			continue
		}
		if err := s.adopt(path, name, first, last); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			// Damaged after its sync: keep it aside for inspection; its
			// hooks are sealed again from the WAL.
			corruptTotal.Inc()
			s.o.Logger.Error("a segment missing from the catalogue is damaged; set aside, its hooks are sealed again from the wal",
				zap.String("file", path), zap.Error(err))
			if err := s.o.FS.Rename(path, path+corruptSuffix); err != nil {
				return fmt.Errorf("cannot set aside damaged segment %q: %w", path, err)
			}
			changed = true
		}
	}
	if changed {
		return vfsutil.SyncDir(s.o.FS, s.o.Dir)
	}
	return nil
}

// adopt verifies a whole segment the catalogue lacks (a crash came between
// its rename and its catalogue entry) and enters it.
func (s *Store) adopt(path, name string, first, last uint64) error {
	f, err := OpenFile(s.o.FS, path)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Footer.FirstSeq != first || f.Footer.LastSeq != last {
		return &CorruptError{File: path, Offset: f.Size - footerSize, Reason: fmt.Sprintf("footer says seqs %d..%d, the name %d..%d", f.Footer.FirstSeq, f.Footer.LastSeq, first, last)}
	}
	// Only the segment a crash left between its rename and its catalogue
	// write is adopted: it follows the catalogue (or a recorded gap)
	// directly. One that overlaps catalogued seqs or leaves unsealed seqs
	// before it is not this node's next segment.
	if reason, err := s.adoptable(first); err != nil {
		return err
	} else if reason != "" {
		return &CorruptError{File: path, Offset: 0, Reason: reason}
	}
	if err := f.Verify(s.dec); err != nil {
		return err
	}
	if err := s.o.Meta.PutSegment(entryOf(name, f.Size, &f.Footer, s.o.Now())); err != nil {
		return err
	}
	adoptedTotal.Inc()
	s.o.Logger.Info("adopted a whole segment missing from the catalogue", zap.String("file", path))
	return nil
}

// adoptable says why a segment starting at first cannot be the next one
// after the catalogue ("" when it can).
func (s *Store) adoptable(first uint64) (string, error) {
	last, ok, err := s.o.Meta.LastSegment()
	if err != nil {
		return "", err
	}
	next := uint64(1)
	if ok {
		next = last.LastSeq + 1
	}
	if first < next {
		return fmt.Sprintf("seqs from %d are already in catalogued segment(s) up to %d", first, next-1), nil
	}
	for next < first {
		gapEnd, inGap, err := s.o.Meta.GapAt(next)
		if err != nil {
			return "", err
		}
		if !inGap {
			// The WAL's first seqs may precede any segment only on a node
			// whose log starts above 1; then the first segment starts there.
			if !ok {
				return "", nil
			}
			return fmt.Sprintf("seqs %d..%d before it are in no segment", next, first-1), nil
		}
		next = gapEnd + 1
	}
	return "", nil
}

func entryOf(name string, size int64, f *Footer, now time.Time) meta.SegmentEntry {
	return meta.SegmentEntry{
		Name: name, Size: size,
		FirstSeq: f.FirstSeq, LastSeq: f.LastSeq, FirstID: f.FirstID, LastID: f.LastID,
		MinReceivedAt: f.MinReceivedAt, MaxReceivedAt: f.MaxReceivedAt,
		Count: f.Count, RawBytes: f.RawBytes, SealedAt: now.UnixNano(),
	}
}

// minCatchUp is the least time between two catch-ups of the sealer.
const minCatchUp = 5 * time.Millisecond

// loop is the sealer: it follows the log as batches become durable and
// seals on size and on age, and runs retention now and then, the first
// time a sweep interval after opened (read by Open, not by the goroutine,
// whose start the clock must not depend on).
func (s *Store) loop(opened time.Time) {
	defer close(s.done)
	tick := time.NewTicker(min(max(s.o.MaxAge/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	lastSweep := opened
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-s.o.Log.Committed():
		case <-tick.C:
		}
		// Under load the log signals every batch (thousands a second);
		// following it that often would spend the cores the edge needs on
		// wake-ups. Reading a few milliseconds' worth at a time costs the
		// same bytes and far fewer system calls; fetches catch up themselves.
		if wait := minCatchUp - time.Since(last); wait > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		s.mu.Lock()
		err := s.sealStep()
		s.mu.Unlock()
		if err != nil {
			s.fatal(err)
			return
		}
		if now := s.o.Now(); now.Sub(lastSweep) >= s.sweepEvery() {
			lastSweep = now
			if err := s.sweep(); err != nil {
				s.fatal(err)
				return
			}
		}
	}
}

// sealStep catches up with the log and seals an open segment that is old
// enough, unless the sealer backs off after a full disk. A full disk is
// not an error: it is retried (space.go). Under s.mu.
func (s *Store) sealStep() error {
	if s.waitingForSpace() {
		return nil
	}
	err := s.catchUp()
	if err == nil && s.open != nil && s.o.Now().Sub(s.openedAt) >= s.o.MaxAge {
		err = s.seal()
		if isNoSpace(err) {
			s.noSpaceLocked(err)
		}
	}
	if isNoSpace(err) {
		return nil
	}
	if err == nil {
		s.sealedAgain()
	}
	return err
}

// sweepEvery is how often retention runs: a tenth of RetainLocal, at
// least a second apart and at most a minute.
func (s *Store) sweepEvery() time.Duration {
	return min(max(s.o.RetainLocal/10, time.Second), time.Minute)
}

// fatal stops the sealer for good and tells the node.
func (s *Store) fatal(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

// catchUp moves everything durable in the log into the open segment,
// sealing whenever it reaches MaxBytes. Under s.mu.
func (s *Store) catchUp() error {
	if s.failed != nil {
		return s.failed
	}
	end := s.o.Log.Durable()
	err := s.tail.Read(end, s.appendRecord, func(file, lastSeq uint64) error {
		s.walDone = append(s.walDone, walFile{num: file, lastSeq: lastSeq})
		return nil
	})
	if isNoSpace(err) {
		// A full disk drops the open segment and rewinds the tail: the
		// sealer seals the same hooks again once space returns.
		s.noSpaceLocked(err)
		return err
	}
	if err != nil {
		// Whoever caught up (the sealer, or a reader), a failed read, write
		// or sync leaves the tail past records no segment holds: the store
		// must not go on (DESIGN.md §6 item 8).
		s.failLocked(err)
	}
	return err
}

// failLocked records the store's first failure and, once Open has
// returned, tells the node. Under s.mu.
func (s *Store) failLocked(err error) {
	if s.failed != nil {
		return
	}
	s.failed = err
	if s.running {
		s.o.Logger.Error("segment store failed; the node must stop", zap.Error(err))
		s.o.OnFatal(err)
	}
}

// appendRecord adds one log record to the open segment. Under s.mu.
func (s *Store) appendRecord(r *wal.Record) error {
	if r.Kind != envelope.KindEnvelope {
		return nil // tenant records: the meta store mirrors them
	}
	if s.open == nil {
		now := s.o.Now()
		dict := s.nextDict
		if s.o.NoDict || now.After(s.nextDictBy) {
			dict = nil
		}
		w, err := CreateDict(s.o.FS, s.o.FS.PathJoin(s.o.Dir, partialName(r.Seq)), s.enc, s.denc, s.o.BlockSize, dict)
		if err != nil {
			return err
		}
		s.open, s.openedAt = w, now
		s.nextDict = nil
		if dict != nil {
			dictSegments.Inc()
			dictBytes.Add(len(dict))
		}
	}
	if err := s.open.Append(r.Payload); err != nil {
		return err
	}
	unsealedHooks.Set(float64(s.open.Count()))
	if int64(s.open.RawBytes()) >= s.o.MaxBytes {
		return s.seal()
	}
	return nil
}

// onGap records seqs the log does not hold (cut by -wal-recovery=truncate,
// numbering resumed above them): the open segment is sealed (seqs are
// dense within a segment), the gap is written to the catalogue so Scan
// steps over it, and the operator is told. Under s.mu.
func (s *Store) onGap(first, last uint64) error {
	if s.open != nil {
		if err := s.seal(); err != nil {
			return err
		}
	}
	if err := s.o.Meta.PutGap(first, last); err != nil {
		return err
	}
	gapsTotal.Inc()
	s.o.Logger.Error("seqs are missing from the wal (cut by a recovery with -wal-recovery=truncate); they are recorded as a gap and sealing goes on after them",
		zap.Uint64("first_seq", first), zap.Uint64("last_seq", last))
	return nil
}

// seal finishes the open segment: index, footer, fsync, rename, directory
// fsync, then the synced catalogue entry; then the WAL files it made
// deletable go. Under s.mu.
func (s *Store) seal() error {
	w := s.open
	start := time.Now()
	foot, err := w.Finish()
	if err != nil {
		w.Abort()
		s.open = nil
		return err
	}
	name := FileName(foot.FirstSeq, foot.LastSeq)
	final := s.o.FS.PathJoin(s.o.Dir, name)
	if err := s.o.FS.Rename(w.Path(), final); err != nil {
		return fmt.Errorf("cannot rename segment %q: %w", w.Path(), err)
	}
	size := foot.FileSize()
	if err := s.catalogue(final, entryOf(name, size, &foot, s.o.Now())); err != nil {
		return err
	}
	s.open = nil
	// The next segment's dictionary holds this one's last records: a
	// hook's bytes outlive its segment by at most the next one, and only
	// if that one opens soon (within segment.max_age).
	if !s.o.NoDict {
		s.nextDict, s.nextDictBy = w.NextDict(), s.o.Now().Add(s.o.MaxAge)
	}
	s.sealedSeq.Store(foot.LastSeq)
	sealedSeqGauge.Set(float64(foot.LastSeq))
	id := foot.LastID
	s.sealedID.Store(&id)
	sealedTotal.Inc()
	sealedRawBytes.Add(int(foot.RawBytes))
	sealedFileBytes.Add(int(size))
	sealSeconds.UpdateDuration(start)
	unsealedHooks.Set(0)
	select {
	case s.sealed <- struct{}{}:
	default:
	}
	return s.deleteWALFiles()
}

// catalogue makes the renamed segment at path durable and enters it in
// the catalogue. When the disk is full, the file is removed again: no
// entry names it, the WAL still holds its hooks, and the sealer seals
// them again (a whole segment left behind would be adopted at boot and
// clash with the one sealed again). Under s.mu.
func (s *Store) catalogue(path string, e meta.SegmentEntry) error {
	err := vfsutil.SyncDir(s.o.FS, s.o.Dir)
	if err == nil {
		err = s.o.Meta.PutSegment(e)
	}
	if isNoSpace(err) {
		_ = s.o.FS.Remove(path)
	}
	return err
}

// deleteWALFiles takes out of the log the WAL files whose hooks are all
// sealed (and catalogued: seal's catalogue write was synced, and with it
// the tenant mirror) and at or below the dispatch checkpoint, and hands
// them to the eraser, which frees their space without stalling commits
// (wal.Retire, wal.Erase). Under s.mu.
func (s *Store) deleteWALFiles() error {
	if len(s.walDone) == 0 {
		return nil
	}
	limit := min(s.sealedSeq.Load(), s.o.Keeper.DurableCheckpoint())
	var nums []uint64
	for _, f := range s.walDone {
		if f.lastSeq > limit {
			break
		}
		nums = append(nums, f.num)
	}
	if len(nums) == 0 {
		return nil
	}
	if err := wal.Retire(s.o.Log.FS(), s.o.Log.Dir(), nums); err != nil {
		return err
	}
	s.walDone = append(s.walDone[:0], s.walDone[len(nums):]...)
	walFilesDeleted.Add(len(nums))
	s.eraseMu.Lock()
	s.erase = append(s.erase, nums...)
	s.eraseMu.Unlock()
	select {
	case s.eraseKick <- struct{}{}:
	default:
	}
	return nil
}

// eraseLoop frees retired WAL files one at a time, off the sealer and its
// lock. Stopping leaves what is not erased to the WAL's recovery.
func (s *Store) eraseLoop() {
	defer close(s.eraserDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.eraseKick:
		}
		for {
			s.eraseMu.Lock()
			if len(s.erase) == 0 {
				s.eraseMu.Unlock()
				break
			}
			num := s.erase[0]
			s.erase = s.erase[1:]
			s.eraseMu.Unlock()
			if err := wal.Erase(s.o.Log.FS(), s.o.Log.Dir(), num, s.stop); err != nil {
				s.fatal(err)
				return
			}
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}
}

// Close stops the sealer. What is not sealed stays in the WAL and is
// sealed after the next start.
func (s *Store) Close() error {
	close(s.stop)
	<-s.done
	<-s.eraserDone
	<-s.scrubDone
	s.abandon()
	return nil
}

// abandon drops the open segment file and closes files.
func (s *Store) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open != nil {
		s.open.Abort()
		s.open = nil
	}
	s.tail.Close()
	s.files.closeAll()
}
