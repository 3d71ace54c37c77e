package segment

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// Repairer puts a verified copy of a damaged local segment in place of its
// file: the archive, which keeps every archived segment's SHA-256.
type Repairer interface {
	// Restore replaces the local file of e (Options.Dir/e.Name) by the
	// archived copy, checked against its recorded SHA-256 and written to
	// a temporary file that is synced, renamed over the damaged one, and
	// followed by a sync of the directory (DESIGN.md §6 item 3). On any
	// error the damaged file is left as it was.
	Restore(ctx context.Context, e *meta.SegmentEntry) error
}

// scrubPassMin is the least time a pass takes: a node with few small
// segments reads them once a second, not in a busy loop.
const scrubPassMin = time.Second

// restoreRetryMax bounds the wait between two restores of a segment that
// failed (the archive unreachable, say).
const restoreRetryMax = 5 * time.Minute

// scrubber is the state of the scrub goroutine, which alone touches it.
type scrubber struct {
	s     *Store
	rate  int64
	buf   []byte
	start time.Time // of the pass
	read  int64     // bytes read in the pass
	// retry holds, by last seq, when a failed restore may be tried again
	// and the wait after the next failure.
	retry map[uint64]retryAt
	// failures throttles the log line of a segment that cannot be read.
	failures map[uint64]time.Time
}

type retryAt struct {
	at   time.Time
	wait time.Duration
}

// scrubLoop restores damaged archived segments as soon as they are found,
// and, with a ScrubRate, reads every local segment's blocks, one pass
// after another, checking each block's checksum.
func (s *Store) scrubLoop() {
	defer close(s.scrubDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	sc := &scrubber{s: s, rate: s.o.ScrubRate, retry: map[uint64]retryAt{}, failures: map[uint64]time.Time{}}
	for ctx.Err() == nil {
		sc.repairAll(ctx)
		began := time.Now()
		if sc.rate > 0 {
			sc.pass(ctx)
		}
		wait := scrubPassMin - time.Since(began)
		if sc.rate <= 0 {
			wait = time.Hour
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
			case <-s.scrubKick:
			case <-time.After(wait):
			}
		}
	}
}

// pass reads every local segment once, at the scrub rate.
func (sc *scrubber) pass(ctx context.Context) {
	var ents []meta.SegmentEntry
	err := sc.s.o.Meta.Segments(0, func(e meta.SegmentEntry) bool {
		if !e.Removed {
			ents = append(ents, e)
		}
		return true
	})
	if err != nil {
		sc.s.o.Logger.Error("scrub: cannot read the catalogue; the pass is skipped", zap.Error(err))
		return
	}
	sc.start, sc.read = time.Now(), 0
	for i := range ents {
		if ctx.Err() != nil {
			return
		}
		sc.segment(ctx, &ents[i])
		// Restore what this segment's check found before the next.
		sc.repairAll(ctx)
	}
	if ctx.Err() == nil {
		scrubPasses.Inc()
	}
}

// segment checks one local segment: header, footer and index, its size
// against the catalogue, and every block's checksum. A clean segment that
// was marked damaged (restored meanwhile, or replaced by an operator) is
// taken off the damaged list.
func (sc *scrubber) segment(ctx context.Context, ent *meta.SegmentEntry) {
	s := sc.s
	path := s.o.FS.PathJoin(s.o.Dir, ent.Name)
	f, err := OpenFile(s.o.FS, path)
	if err != nil {
		if !sc.stillLocal(ent) {
			return
		}
		if !s.markDamaged(ent, nil, err) {
			sc.failed(ent, err)
		}
		return
	}
	defer f.Close()
	if f.Size != ent.Size {
		s.markDamaged(ent, nil, &CorruptError{File: path, Offset: f.Size,
			Reason: fmt.Sprintf("the file has %d bytes, the catalogue says %d", f.Size, ent.Size)})
		return
	}
	// OpenFile read and checked the header, the dictionary, the index and
	// the footer.
	sc.count(ctx, f.start+int64(f.Footer.Blocks)*indexEntrySize+footerSize)
	for i := range f.Index {
		b := &f.Index[i]
		if err := sc.block(f, b); err != nil {
			if !s.markDamaged(ent, f, err) {
				sc.failed(ent, err)
			}
			return
		}
		if !sc.count(ctx, int64(b.CompLen)) {
			return
		}
	}
	if _, had := s.damage.get(ent.LastSeq); had {
		s.damage.remove(ent.LastSeq)
		s.o.Logger.Info("scrub: a segment marked damaged reads clean now", zap.String("segment", path))
	}
}

// block reads one block's compressed bytes and checks their CRC.
func (sc *scrubber) block(f *File, b *BlockInfo) (err error) {
	sc.buf, err = f.checkBlock(b, sc.buf)
	return err
}

// checkBlock reads block b's compressed bytes into buf (grown as needed)
// and checks their CRC (the index's CRC was checked when the file was
// opened).
func (s *File) checkBlock(b *BlockInfo, buf []byte) ([]byte, error) {
	if cap(buf) < int(b.CompLen) {
		buf = make([]byte, b.CompLen)
	}
	buf = buf[:b.CompLen]
	if _, err := s.r.ReadAt(buf, b.Offset); err != nil {
		return buf, fmt.Errorf("cannot read segment %q: %w", s.Path, err)
	}
	if checksum(buf) != b.CRC {
		return buf, &CorruptError{File: s.Path, Offset: b.Offset, Reason: "block checksum mismatch"}
	}
	return buf, nil
}

// CheckBlocks checks every block's CRC, without decompressing: what the
// scrubber reads, and what the archive checks before an upload (a copy
// of damaged bytes would be no copy).
func (s *File) CheckBlocks() error {
	var buf []byte
	var err error
	for i := range s.Index {
		if buf, err = s.checkBlock(&s.Index[i], buf); err != nil {
			return err
		}
	}
	return nil
}

// count adds n bytes to the pass and sleeps to keep it at the rate; false
// when the store stops.
func (sc *scrubber) count(ctx context.Context, n int64) bool {
	scrubBytes.Add(int(n))
	sc.read += n
	due := sc.start.Add(time.Duration(float64(sc.read) / float64(sc.rate) * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// stillLocal reports whether ent is still a local segment: retention may
// have removed it since the pass read the catalogue.
func (sc *scrubber) stillLocal(ent *meta.SegmentEntry) bool {
	now, ok, err := sc.s.o.Meta.SegmentBySeq(ent.LastSeq)
	return err != nil || ok && !now.Removed
}

// failed logs a segment the scrubber could not read (not damage: an I/O
// error), at most once a minute per segment.
func (sc *scrubber) failed(ent *meta.SegmentEntry, err error) {
	scrubErrors.Inc()
	if last, ok := sc.failures[ent.LastSeq]; ok && time.Since(last) < time.Minute {
		return
	}
	sc.failures[ent.LastSeq] = time.Now()
	sc.s.o.Logger.Error("scrub: cannot read a segment", zap.String("segment", ent.Name), zap.Error(err))
}
