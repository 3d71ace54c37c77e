package meta

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/ankusa/ankusa/envelope"
)

// SegmentEntry is one sealed segment in the catalogue. Segments hold many
// tenants; the catalogue is keyed by seq range and by event-id range only.
type SegmentEntry struct {
	Name          string // file name in the segment directory
	Size          int64  // file size
	FirstSeq      uint64
	LastSeq       uint64
	FirstID       envelope.ID
	LastID        envelope.ID
	MinReceivedAt int64
	MaxReceivedAt int64
	Count         uint64
	RawBytes      uint64
	SealedAt      int64 // unix ns
	// Removed: the local file was deleted (retention); the entry stays for
	// what later stages (the archive) need.
	Removed bool
	// Archived: the archive confirmed the upload (set by the archive stage).
	Archived bool
}

const (
	entryVersion     = 1
	entryFlagRemoved = 1 << 0
	entryFlagArchive = 1 << 1
	entryFixedSize   = 1 + 1 + 8 + 8 + 8 + 16 + 16 + 8 + 8 + 8 + 8 + 8
)

func (e *SegmentEntry) encode() []byte {
	b := make([]byte, 0, entryFixedSize+len(e.Name))
	b = append(b, entryVersion)
	var flags byte
	if e.Removed {
		flags |= entryFlagRemoved
	}
	if e.Archived {
		flags |= entryFlagArchive
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Size))
	b = binary.BigEndian.AppendUint64(b, e.FirstSeq)
	b = binary.BigEndian.AppendUint64(b, e.LastSeq)
	b = append(b, e.FirstID[:]...)
	b = append(b, e.LastID[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.MinReceivedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(e.MaxReceivedAt))
	b = binary.BigEndian.AppendUint64(b, e.Count)
	b = binary.BigEndian.AppendUint64(b, e.RawBytes)
	b = binary.BigEndian.AppendUint64(b, uint64(e.SealedAt))
	return append(b, e.Name...)
}

func decodeEntry(key, v []byte) (SegmentEntry, error) {
	var e SegmentEntry
	if len(v) < entryFixedSize || v[0] != entryVersion {
		return e, fmt.Errorf("cannot decode catalogue entry %q: %d bytes, version %v", key, len(v), v[:min(1, len(v))])
	}
	e.Removed = v[1]&entryFlagRemoved != 0
	e.Archived = v[1]&entryFlagArchive != 0
	p := v[2:]
	u64 := func() uint64 { x := binary.BigEndian.Uint64(p); p = p[8:]; return x }
	e.Size = int64(u64())
	e.FirstSeq = u64()
	e.LastSeq = u64()
	copy(e.FirstID[:], p[:16])
	copy(e.LastID[:], p[16:32])
	p = p[32:]
	e.MinReceivedAt = int64(u64())
	e.MaxReceivedAt = int64(u64())
	e.Count = u64()
	e.RawBytes = u64()
	e.SealedAt = int64(u64())
	e.Name = string(p)
	if e.LastSeq < e.FirstSeq || e.Name == "" {
		return e, fmt.Errorf("cannot decode catalogue entry %q: seqs %d..%d, name %q", key, e.FirstSeq, e.LastSeq, e.Name)
	}
	return e, nil
}

// PutSegment enters (or updates) a segment in the catalogue, both keys in
// one synced batch. The sync also makes every earlier unsynced write of
// the store durable (the tenant mirror), which is what lets the WAL files
// behind this segment go.
func (s *Store) PutSegment(e SegmentEntry) error {
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(segSeqKey(e.LastSeq), e.encode(), nil)
	_ = b.Set(segIDKey(e.LastID[:]), binary.BigEndian.AppendUint64(nil, e.LastSeq), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot write catalogue entry %s: %w", e.Name, err)
	}
	return nil
}

// DeleteSegment removes the catalogue entry whose last seq is lastSeq,
// both keys, synced; ok is false when there is none. Nothing in the node
// removes entries (a removed or archived segment keeps its entry, for the
// archive and for fetch); tests use it to make an entry vanish.
func (s *Store) DeleteSegment(lastSeq uint64) (ok bool, err error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	e, ok, err := s.SegmentBySeq(lastSeq)
	if err != nil || !ok || e.LastSeq != lastSeq {
		return false, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(segSeqKey(e.LastSeq), nil)
	_ = b.Delete(segIDKey(e.LastID[:]), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return false, fmt.Errorf("cannot remove catalogue entry %s: %w", e.Name, err)
	}
	return true, nil
}

// UpdateSegment changes the catalogue entry whose last seq is lastSeq
// with fn and writes it back synced, serialised with every other update:
// two stages marking one entry (removed, archived) never undo each other.
// ok is false when no such entry exists.
func (s *Store) UpdateSegment(lastSeq uint64, fn func(*SegmentEntry)) (e SegmentEntry, ok bool, err error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	e, ok, err = s.SegmentBySeq(lastSeq)
	if err != nil || !ok || e.LastSeq != lastSeq {
		return SegmentEntry{}, false, err
	}
	fn(&e)
	return e, true, s.PutSegment(e)
}

// SegmentBySeq returns the segment whose seq range holds seq.
func (s *Store) SegmentBySeq(seq uint64) (SegmentEntry, bool, error) {
	e, ok, err := s.SegmentFromSeq(seq)
	if err != nil || !ok || e.FirstSeq > seq {
		return SegmentEntry{}, false, err
	}
	return e, true, nil
}

// SegmentFromSeq returns the first segment whose last seq is at or above
// seq (it may start above seq).
func (s *Store) SegmentFromSeq(seq uint64) (SegmentEntry, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: segSeqKey(seq), UpperBound: prefixEnd([]byte(prefixSegSeq))})
	if err != nil {
		return SegmentEntry{}, false, fmt.Errorf("cannot read the catalogue: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return SegmentEntry{}, false, it.Error()
	}
	e, err := decodeEntry(it.Key(), it.Value())
	return e, err == nil, err
}

// SegmentByID returns the segment whose event-id range holds id: one seek
// in the id index, one get.
func (s *Store) SegmentByID(id envelope.ID) (SegmentEntry, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: segIDKey(id[:]), UpperBound: prefixEnd([]byte(prefixSegID))})
	if err != nil {
		return SegmentEntry{}, false, fmt.Errorf("cannot read the catalogue: %w", err)
	}
	defer it.Close()
	if !it.First() {
		return SegmentEntry{}, false, it.Error()
	}
	v := it.Value()
	if len(v) != 8 {
		return SegmentEntry{}, false, fmt.Errorf("cannot decode catalogue id index %q: %d bytes", it.Key(), len(v))
	}
	key := segSeqKey(binary.BigEndian.Uint64(v))
	ev, closer, found, err := s.get(key)
	if err != nil {
		return SegmentEntry{}, false, fmt.Errorf("cannot read the catalogue: %w", err)
	}
	if !found {
		return SegmentEntry{}, false, fmt.Errorf("catalogue id index %q points at a missing entry", it.Key())
	}
	defer closer.Close()
	e, err := decodeEntry(key, ev)
	if err != nil {
		return e, false, err
	}
	if string(e.FirstID[:]) > string(id[:]) {
		return SegmentEntry{}, false, nil // between segments
	}
	return e, true, nil
}

// LastSegment returns the segment with the highest seqs.
func (s *Store) LastSegment() (SegmentEntry, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixSegSeq), UpperBound: prefixEnd([]byte(prefixSegSeq))})
	if err != nil {
		return SegmentEntry{}, false, fmt.Errorf("cannot read the catalogue: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return SegmentEntry{}, false, it.Error()
	}
	e, err := decodeEntry(it.Key(), it.Value())
	return e, err == nil, err
}

// CatalogueFloor is the highest seq and event id the catalogue holds:
// numbering resumes above it even once the WAL files sealed into it are
// gone (DESIGN.md §6 item 1; wal.Open reads it).
func (s *Store) CatalogueFloor() (uint64, envelope.ID, error) {
	e, ok, err := s.LastSegment()
	if err != nil || !ok {
		return 0, envelope.ID{}, err
	}
	return e.LastSeq, e.LastID, nil
}

// Segments calls fn for every catalogue entry in seq order, from the one
// holding fromSeq on, until fn returns false.
func (s *Store) Segments(fromSeq uint64, fn func(SegmentEntry) bool) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: segSeqKey(fromSeq), UpperBound: prefixEnd([]byte(prefixSegSeq))})
	if err != nil {
		return fmt.Errorf("cannot read the catalogue: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		e, err := decodeEntry(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if !fn(e) {
			break
		}
	}
	return it.Error()
}

// PutGap records, synced, that seqs first..last are not in the log (a
// recovery cut them): they will never be in a segment.
func (s *Store) PutGap(first, last uint64) error {
	if err := s.db.Set(segGapKey(first), binary.BigEndian.AppendUint64(nil, last), pebble.Sync); err != nil {
		return fmt.Errorf("cannot record missing seqs %d..%d: %w", first, last, err)
	}
	return nil
}

// GapAt returns the last seq of the recorded gap holding seq, if any.
func (s *Store) GapAt(seq uint64) (uint64, bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixSegGap), UpperBound: segGapKey(seq + 1)})
	if err != nil {
		return 0, false, fmt.Errorf("cannot read the catalogue: %w", err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, false, it.Error()
	}
	v := it.Value()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("cannot decode catalogue gap %q: %d bytes", it.Key(), len(v))
	}
	last := binary.BigEndian.Uint64(v)
	return last, last >= seq, nil
}
