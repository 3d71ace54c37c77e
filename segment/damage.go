package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// Damage is a local segment found damaged (at boot, by the scrubber or by
// a read) and not restored yet. Its hooks in FirstSeq..LastSeq may not be
// readable from local disk: a fetch of one answers the *CorruptError of
// the damaged bytes, or, when the segment is archived and the store has a
// Remote, reads the archived copy.
type Damage struct {
	// Name is the segment's file name; Path its path.
	Name, Path string
	// FirstSeq..LastSeq is the damaged range: the damaged block's seqs
	// when one block is damaged, the whole segment's when its footer,
	// index or size is.
	FirstSeq, LastSeq uint64
	// Segment is the segment's whole range.
	SegFirst, SegLast uint64
	// Reason says what is wrong, with the offset.
	Reason string
	// Archived: the archive holds a copy (the scrubber restores from it).
	Archived bool
	// Found is when the damage was found.
	Found time.Time
}

// String is the damage as one line for logs, /readyz and the inspector.
func (d Damage) String() string {
	copyOf := "no archived copy: these hooks cannot be read"
	if d.Archived {
		copyOf = "archived copy: being restored"
	}
	return fmt.Sprintf("segment %s seqs %d..%d damaged (%s); %s", d.Name, d.FirstSeq, d.LastSeq, d.Reason, copyOf)
}

// damageSet is the store's record of damaged segments, by last seq. It is
// in memory only: boot finds footer and index damage again, and the
// scrubber's next pass block damage. Safe for concurrent use.
type damageSet struct {
	mu sync.Mutex
	m  map[uint64]Damage
}

func newDamageSet() *damageSet { return &damageSet{m: map[uint64]Damage{}} }

// add records d and reports whether it is new (to log it once).
func (s *damageSet) add(d Damage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.m[d.SegLast]
	if had {
		d.Found = old.Found
	}
	s.m[d.SegLast] = d
	damagedGauge.Set(float64(len(s.m)))
	return !had || old.Reason != d.Reason
}

func (s *damageSet) remove(lastSeq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, lastSeq)
	damagedGauge.Set(float64(len(s.m)))
}

func (s *damageSet) get(lastSeq uint64) (Damage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[lastSeq]
	return d, ok
}

func (s *damageSet) list() []Damage {
	s.mu.Lock()
	out := make([]Damage, 0, len(s.m))
	for _, d := range s.m {
		out = append(out, d)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].SegFirst < out[j].SegFirst })
	return out
}

// Damaged lists the local segments found damaged and not restored, in
// seq order (for /readyz and logs).
func (s *Store) Damaged() []Damage { return s.damage.list() }

// damageOf describes err, found reading ent's local file, as a Damage;
// ok is false when err is not damage (an I/O error, say).
func (s *Store) damageOf(ent *meta.SegmentEntry, f *File, err error) (Damage, bool) {
	d, ok := describeDamage(ent.Name, s.o.FS.PathJoin(s.o.Dir, ent.Name), ent.FirstSeq, ent.LastSeq, f, err)
	d.Archived, d.Found = ent.Archived, s.o.Now()
	return d, ok
}

// describeDamage describes err, found reading the segment file at path
// (seqs first..last; f its open file when its index could be read), as a
// Damage: the block's seqs when err is at a block, else the segment's.
func describeDamage(name, path string, first, last uint64, f *File, err error) (Damage, bool) {
	d := Damage{Name: name, Path: path, FirstSeq: first, LastSeq: last, SegFirst: first, SegLast: last}
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		d.Reason = fmt.Sprintf("%s at offset %d", ce.Reason, ce.Offset)
		if f != nil {
			// A block: only its hooks are lost.
			if i, ok := blockAt(f.Index, ce.Offset); ok {
				b := &f.Index[i]
				d.FirstSeq, d.LastSeq = b.FirstSeq, b.FirstSeq+uint64(b.Count)-1
				if !strings.HasPrefix(ce.Reason, fmt.Sprintf("block %d:", i)) {
					d.Reason = fmt.Sprintf("block %d: %s", i, d.Reason)
				}
			}
		}
	case errors.Is(err, os.ErrNotExist):
		d.Reason = "the file is missing"
	default:
		return d, false
	}
	return d, true
}

// CheckFile opens the sealed segment at path and verifies it whole
// (footer, index, every block and record), as `ankusa inspect segments`
// does. damaged says whether it is damaged, and d how; err is a failure
// to read it that is not damage.
func CheckFile(fs vfs.FS, path string, dec *Decoder) (d Damage, damaged bool, err error) {
	name := filepath.Base(path)
	first, last, _ := parseFileName(name)
	f, err := OpenFile(fs, path)
	if err == nil {
		defer f.Close()
		if err = f.Verify(dec); err == nil {
			return Damage{Name: name, Path: path, FirstSeq: first, LastSeq: last, SegFirst: first, SegLast: last}, false, nil
		}
	}
	d, damaged = describeDamage(name, path, first, last, f, err)
	if !damaged {
		return d, false, err
	}
	return d, true, nil
}

// blockAt finds the block that starts at off.
func blockAt(idx []BlockInfo, off int64) (int, bool) {
	i := sort.Search(len(idx), func(i int) bool { return idx[i].Offset >= off })
	return i, i < len(idx) && idx[i].Offset == off
}

// markDamaged records damage found in ent's local file and tells the
// operator (once per segment and reason) and the scrubber, which restores
// an archived segment at once. It reports whether err was damage.
func (s *Store) markDamaged(ent *meta.SegmentEntry, f *File, err error) bool {
	d, ok := s.damageOf(ent, f, err)
	if !ok {
		return false
	}
	if cur, had := s.damage.get(ent.LastSeq); had && cur.LastSeq-cur.FirstSeq > d.LastSeq-d.FirstSeq {
		// Keep the wider range: the footer's damage covers every block's.
		d.FirstSeq, d.LastSeq, d.Reason = cur.FirstSeq, cur.LastSeq, cur.Reason
	}
	if s.damage.add(d) {
		damageFoundTotal.Inc()
		s.o.Logger.Error("a local segment is damaged", zap.String("segment", d.Path),
			zap.Uint64("first_seq", d.FirstSeq), zap.Uint64("last_seq", d.LastSeq),
			zap.String("reason", d.Reason), zap.Bool("archived", d.Archived))
	}
	select {
	case s.scrubKick <- struct{}{}:
	default:
	}
	return true
}
