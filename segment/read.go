package segment

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
)

// fileCache keeps up to max sealed segments open, least recently used
// closed first. Safe for concurrent use.
type fileCache struct {
	max int
	mu  sync.Mutex
	lru *list.List // of *File, most recent at the front
	m   map[uint64]*list.Element
}

func newFileCache(max int) *fileCache {
	return &fileCache{max: max, lru: list.New(), m: map[uint64]*list.Element{}}
}

// get returns the open segment of a catalogue entry. The returned File
// stays usable if it is evicted meanwhile: eviction closes it only once no
// reader holds it (see release).
func (c *fileCache) get(e *meta.SegmentEntry, open func() (*File, error)) (*File, error) {
	c.mu.Lock()
	if el, ok := c.m[e.LastSeq]; ok {
		c.lru.MoveToFront(el)
		f := el.Value.(*File)
		f.refs++
		c.mu.Unlock()
		return f, nil
	}
	c.mu.Unlock()
	f, err := open()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[e.LastSeq]; ok { // opened meanwhile by another reader
		f.Close()
		f = el.Value.(*File)
		f.refs++
		return f, nil
	}
	f.refs = 1
	c.m[e.LastSeq] = c.lru.PushFront(f)
	for c.lru.Len() > c.max {
		el := c.lru.Back()
		old := el.Value.(*File)
		c.lru.Remove(el)
		delete(c.m, old.Footer.LastSeq)
		old.evicted = true
		if old.refs == 0 {
			old.Close()
		}
	}
	return f, nil
}

// release ends a reader's use of f.
func (c *fileCache) release(f *File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f.refs--
	if f.refs == 0 && f.evicted {
		f.Close()
	}
}

// drop evicts one segment (retention removes it).
func (c *fileCache) drop(lastSeq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[lastSeq]; ok {
		f := el.Value.(*File)
		c.lru.Remove(el)
		delete(c.m, lastSeq)
		f.evicted = true
		if f.refs == 0 {
			f.Close()
		}
	}
}

func (c *fileCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.m {
		f := el.Value.(*File)
		f.evicted = true
		if f.refs == 0 {
			f.Close()
		}
		delete(c.m, k)
	}
	c.lru.Init()
}

// block returns the raw records of block i of a sealed segment, through
// the block cache.
func (s *Store) block(f *File, i int) ([]byte, error) {
	return s.cachedBlock(f.Footer.FirstSeq, i, func() ([]byte, error) { return f.ReadBlock(i, s.dec, nil) })
}

// openBlock returns the raw records of flushed block i of the open
// segment, through the block cache. Under s.mu.
func (s *Store) openBlock(w *Writer, i int) ([]byte, error) {
	return s.cachedBlock(w.foot.FirstSeq, i, func() ([]byte, error) {
		return readBlock(w.Path(), w.File(), &w.index[i], s.dec.forDict(w.dictID, w.dict), nil)
	})
}

func (s *Store) cachedBlock(firstSeq uint64, i int, read func() ([]byte, error)) ([]byte, error) {
	k := blockKey{seg: firstSeq, block: i}
	if raw, ok := s.cache.get(k); ok {
		return raw, nil
	}
	raw, err := read()
	if err != nil {
		return nil, err
	}
	s.cache.put(k, raw)
	return raw, nil
}

// openSealed opens a catalogued segment, or says it was removed by
// retention: marked before, or between the catalogue read and the open.
func (s *Store) openSealed(ent *meta.SegmentEntry) (*File, error) {
	if ent.Removed {
		return s.openRemote(ent)
	}
	f, err := s.files.get(ent, func() (*File, error) { return OpenFile(s.o.FS, s.o.FS.PathJoin(s.o.Dir, ent.Name)) })
	if errors.Is(err, os.ErrNotExist) {
		if now, ok, lerr := s.o.Meta.SegmentBySeq(ent.LastSeq); lerr == nil && ok && now.Removed {
			return s.openRemote(&now)
		}
	}
	if err != nil && s.markDamaged(ent, nil, err) {
		// A damaged footer or index, or a missing file: the archived
		// copy, if there is one, serves until the scrubber restores it.
		if rf, rerr := s.openArchived(ent); rerr == nil {
			return rf, nil
		}
	}
	return f, err
}

// sealedBlock reads block i of ent's open file f. Damage found in a local
// file is marked, and the block is read from the archived copy when there
// is one; otherwise the *CorruptError is the answer.
func (s *Store) sealedBlock(ent *meta.SegmentEntry, f *File, i int) ([]byte, error) {
	raw, err := s.block(f, i)
	if err == nil || f.f == nil || !s.markDamaged(ent, f, err) {
		return raw, err
	}
	rf, rerr := s.openArchived(ent)
	if rerr != nil {
		return nil, err
	}
	defer s.files.release(rf)
	return s.block(rf, i)
}

// openArchived opens ent's archived copy in place of its damaged local
// file, when there is an archive to read and ent is archived in it. The
// file cache then holds the archived copy until the restore drops it.
func (s *Store) openArchived(ent *meta.SegmentEntry) (*File, error) {
	now, ok, err := s.o.Meta.SegmentBySeq(ent.LastSeq)
	if err != nil || !ok || s.o.Remote == nil || !now.Archived {
		return nil, fmt.Errorf("segment %s has no archived copy", ent.Name)
	}
	s.files.drop(ent.LastSeq)
	return s.openRemote(&now)
}

// openRemote opens a segment that retention removed from local disk in
// the archive, or says it is gone when there is no archive to read.
func (s *Store) openRemote(ent *meta.SegmentEntry) (*File, error) {
	if s.o.Remote == nil || !ent.Archived {
		return nil, fmt.Errorf("%w (segment %s)", ErrRemoved, ent.Name)
	}
	return s.files.get(ent, func() (*File, error) {
		name, r := s.o.Remote.Open(ent)
		return OpenReaderAt(name, r, ent.Size)
	})
}

// Fetch returns the hook with event id id: from the catalogue (one seek)
// and one block of its segment, or from the part of the log not sealed
// yet. Unknown ids are ErrNotFound; damage is a *CorruptError.
func (s *Store) Fetch(id envelope.ID) (*envelope.Envelope, error) {
	fetchTotal.Inc()
	e, err := s.fetch(id)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrRemoved) {
		fetchNotFound.Inc()
	}
	return e, err
}

func (s *Store) fetch(id envelope.ID) (*envelope.Envelope, error) {
	for attempt := 0; attempt < 3; attempt++ {
		// Read the sealer's position before the catalogue: every segment up
		// to it is catalogued (the entry is written before the position
		// moves), so an id at or below it that the catalogue lacks is not
		// on this node, and a seal that finishes after this point is seen
		// by fetchOpen as a move.
		before, last := s.sealedSeq.Load(), s.sealedID.Load()
		ent, ok, err := s.o.Meta.SegmentByID(id)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.fetchSealed(&ent, id)
		}
		if last != nil && bytes.Compare(id[:], last[:]) <= 0 {
			return nil, ErrNotFound // between segments, or below the first
		}
		env, found, sealed, err := s.fetchOpen(id, before)
		if err != nil || found {
			return env, err
		}
		if !sealed {
			return nil, ErrNotFound
		}
		// A segment was sealed meanwhile: the catalogue may have it now.
	}
	return nil, ErrNotFound
}

func (s *Store) fetchSealed(ent *meta.SegmentEntry, id envelope.ID) (*envelope.Envelope, error) {
	f, err := s.openSealed(ent)
	if err != nil {
		return nil, err
	}
	defer s.files.release(f)
	raw, err := s.sealedBlock(ent, f, f.BlockForID(id))
	if err != nil {
		return nil, err
	}
	p, found, err := FindInBlock(raw, id)
	if err != nil {
		return nil, &CorruptError{File: f.Path, Offset: f.Index[f.BlockForID(id)].Offset, Reason: err.Error()}
	}
	if !found {
		return nil, ErrNotFound
	}
	return decodeEnvelope(f.Path, p)
}

// fetchOpen looks for id in the open segment, after moving everything
// durable into it. sealed reports that the sealer's position moved since
// before (look in the catalogue again).
func (s *Store) fetchOpen(id envelope.ID, before uint64) (env *envelope.Envelope, found, sealed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(); err != nil {
		return nil, false, false, err
	}
	w := s.open
	if w == nil || bytes.Compare(id[:], w.foot.FirstID[:]) < 0 || bytes.Compare(id[:], w.lastID[:]) > 0 {
		return nil, false, s.sealedSeq.Load() != before, nil
	}
	var raw []byte
	if w.cur.Count > 0 && bytes.Compare(id[:], w.cur.FirstID[:]) >= 0 {
		raw = w.Pending()
	} else {
		i := blockForID(w.index, id)
		if raw, err = s.openBlock(w, i); err != nil {
			return nil, false, false, err
		}
	}
	p, ok, err := FindInBlock(raw, id)
	if err != nil || !ok {
		return nil, false, false, err
	}
	env, err = decodeEnvelope(w.Path(), p)
	return env, err == nil, false, err
}

func decodeEnvelope(path string, p []byte) (*envelope.Envelope, error) {
	var e envelope.Envelope
	if _, err := envelope.Decode(p, &e); err != nil {
		return nil, &CorruptError{File: path, Reason: fmt.Sprintf("record does not decode: %v", err)}
	}
	return &e, nil
}

// Scan calls fn for every hook with from <= seq <= to, in seq order, from
// sealed segments and then from the part of the log not sealed yet; it
// stops at the durable end of the log, at to, or at fn's first error. A
// gap is an error: seqs are dense.
func (s *Store) Scan(from, to uint64, fn func(*envelope.Envelope) error) error {
	seq := max(from, 1)
	for seq <= to {
		// The sealer's position first (see fetch): what the catalogue
		// lacks at or below it is a recorded gap or a fault.
		sealed := s.sealedSeq.Load()
		ent, ok, err := s.o.Meta.SegmentFromSeq(seq)
		if err != nil {
			return err
		}
		if ok && ent.FirstSeq <= seq {
			if err := s.scanSealed(&ent, seq, to, fn); err != nil {
				return err
			}
			seq = ent.LastSeq + 1
			continue
		}
		gapEnd, inGap, err := s.o.Meta.GapAt(seq)
		if err != nil {
			return err
		}
		if inGap {
			seq = gapEnd + 1
			continue
		}
		if sealed >= seq {
			return fmt.Errorf("scan: seq %d is sealed but in no catalogued segment", seq)
		}
		next, more, err := s.scanOpen(seq, to, fn)
		if err != nil || !more {
			return err
		}
		seq = next
	}
	return nil
}

func (s *Store) scanSealed(ent *meta.SegmentEntry, from, to uint64, fn func(*envelope.Envelope) error) error {
	f, err := s.openSealed(ent)
	if err != nil {
		return fmt.Errorf("scan seqs %d..%d: %w", from, ent.LastSeq, err)
	}
	defer s.files.release(f)
	for i := f.BlockForSeq(from); i < len(f.Index) && f.Index[i].FirstSeq <= to; i++ {
		raw, err := s.sealedBlock(ent, f, i)
		if err != nil {
			return err
		}
		if err := eachInRange(f.Path, raw, from, to, fn); err != nil {
			return err
		}
	}
	return nil
}

// eachInRange decodes and passes on the records of a raw block with seqs
// in [from, to].
func eachInRange(path string, raw []byte, from, to uint64, fn func(*envelope.Envelope) error) error {
	var fnErr error
	err := Records(raw, func(p []byte) error {
		_, seq, _, _ := envelope.Identity(p)
		if seq < from || seq > to {
			return nil
		}
		e, err := decodeEnvelope(path, p)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return &CorruptError{File: path, Reason: err.Error()}
	}
	return nil
}

// scanOpen passes on the hooks from seq on that are in the open segment,
// decoded under the lock and handed to fn after it. next is the seq after
// them; more says whether the sealer moved on meanwhile (look in the
// catalogue again).
func (s *Store) scanOpen(seq, to uint64, fn func(*envelope.Envelope) error) (next uint64, more bool, err error) {
	var batch []*envelope.Envelope
	s.mu.Lock()
	err = s.catchUp()
	w := s.open
	switch {
	case err != nil:
	case s.sealedSeq.Load() >= seq:
		s.mu.Unlock()
		return seq, true, nil // sealed while catching up
	case w == nil || w.lastSeq < seq:
	default:
		collect := func(e *envelope.Envelope) error { batch = append(batch, e); return nil }
		for i := blockForSeq(w.index, seq); i < len(w.index) && err == nil; i++ {
			var raw []byte
			if raw, err = s.openBlock(w, i); err == nil {
				err = eachInRange(w.Path(), raw, seq, to, collect)
			}
		}
		if err == nil {
			err = eachInRange(w.Path(), w.Pending(), seq, to, collect)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return 0, false, err
	}
	for _, e := range batch {
		if err := fn(e); err != nil {
			return 0, false, err
		}
	}
	return seq + uint64(len(batch)), false, nil
}

// sweep removes the sealed segments past RetainLocal that the rules of
// Keeper allow: a synced "removed" mark first, then the file, then the
// directory sync (DESIGN.md §6 item 3).
func (s *Store) sweep() error {
	if s.o.RetainLocal <= 0 {
		return nil
	}
	cutoff := s.o.Now().Add(-s.o.RetainLocal).UnixNano()
	var due []meta.SegmentEntry
	err := s.o.Meta.Segments(0, func(e meta.SegmentEntry) bool {
		if e.Removed || e.SealedAt > cutoff {
			return true
		}
		ok, later := s.removable(e)
		if ok {
			due = append(due, e)
		}
		return !later
	})
	if err != nil {
		return err
	}
	return s.remove(due)
}

// removable applies the removal rule of Keeper to a segment past
// RetainLocal; later is true when no later segment can be removed either
// (it holds seqs past the dispatch checkpoint, and later segments hold
// later seqs).
func (s *Store) removable(e meta.SegmentEntry) (ok, later bool) {
	k := s.o.Keeper
	if e.LastSeq > k.DurableCheckpoint() {
		return false, true
	}
	if s.o.Archiving {
		return e.Archived, false
	}
	live, err := k.HoldsLive(e.FirstSeq, e.LastSeq)
	if err != nil {
		s.o.Logger.Error("cannot tell whether a segment still holds undelivered hooks; keeping it", zap.String("segment", e.Name), zap.Error(err))
	}
	return err == nil && !live, false
}

// remove marks each segment removed, then removes its file.
func (s *Store) remove(due []meta.SegmentEntry) error {
	for _, e := range due {
		// The mark goes through UpdateSegment, serialised with the
		// archive's own mark, so neither undoes the other.
		e, ok, err := s.o.Meta.UpdateSegment(e.LastSeq, func(e *meta.SegmentEntry) { e.Removed = true })
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("retention: catalogue entry of segment %s vanished", e.Name)
		}
		s.files.drop(e.LastSeq)
		s.cache.dropSegment(e.FirstSeq)
		s.damage.remove(e.LastSeq)
		path := s.o.FS.PathJoin(s.o.Dir, e.Name)
		if err := s.o.FS.Remove(path); err != nil {
			return fmt.Errorf("cannot remove segment %q: %w", path, err)
		}
		removedTotal.Inc()
		s.o.Logger.Info("removed a local segment past segment.retain_local", zap.String("file", path))
	}
	if len(due) > 0 {
		return vfsutil.SyncDir(s.o.FS, s.o.Dir)
	}
	return nil
}
