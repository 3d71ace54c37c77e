package segment

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// repairAll restores every damaged segment the archive holds a copy of,
// except those whose last failed restore asks to wait.
func (sc *scrubber) repairAll(ctx context.Context) {
	s := sc.s
	if s.o.Repair == nil {
		return
	}
	for _, d := range s.damage.list() {
		if ctx.Err() != nil {
			return
		}
		if r, ok := sc.retry[d.SegLast]; ok && time.Now().Before(r.at) {
			continue
		}
		ent, ok, err := s.o.Meta.SegmentBySeq(d.SegLast)
		switch {
		case err != nil:
			s.o.Logger.Error("scrub: cannot read the catalogue entry of a damaged segment", zap.String("segment", d.Name), zap.Error(err))
			continue
		case !ok || ent.Removed:
			// Retention removed it: nothing local is damaged any more.
			s.damage.remove(d.SegLast)
			continue
		case !ent.Archived:
			continue // reported; nothing to restore from (yet)
		}
		sc.restore(ctx, &ent)
	}
}

// restore puts the archived copy of ent in place of its damaged file,
// checks the result block by block, and takes it off the damaged list.
func (sc *scrubber) restore(ctx context.Context, ent *meta.SegmentEntry) {
	s := sc.s
	path := s.o.FS.PathJoin(s.o.Dir, ent.Name)
	began := time.Now()
	err := s.o.Repair.Restore(ctx, ent)
	if err == nil {
		// Readers holding the damaged file keep it until they let go;
		// new ones open the restored one. Cached blocks passed their
		// checksum: they are the same bytes.
		s.files.drop(ent.LastSeq)
		err = sc.check(path)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		restoreFailures.Inc()
		r := sc.retry[ent.LastSeq]
		r.wait = min(max(2*r.wait, time.Second), restoreRetryMax)
		r.at = time.Now().Add(r.wait)
		sc.retry[ent.LastSeq] = r
		s.o.Logger.Error("scrub: cannot restore a damaged segment from the archive; trying again later",
			zap.String("segment", path), zap.Duration("retry_in", r.wait), zap.Error(err))
		return
	}
	delete(sc.retry, ent.LastSeq)
	s.damage.remove(ent.LastSeq)
	restoredTotal.Inc()
	restoreSeconds.UpdateDuration(began)
	s.o.Logger.Warn("scrub: restored a damaged segment from the archive; the disk under it may be failing", zap.String("segment", path),
		zap.Uint64("first_seq", ent.FirstSeq), zap.Uint64("last_seq", ent.LastSeq), zap.Duration("took", time.Since(began)))
}

// check verifies a restored file whole: every block decompressed, every
// record's seq and id against the index and footer.
func (sc *scrubber) check(path string) error {
	f, err := OpenFile(sc.s.o.FS, path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Verify(sc.s.dec)
}
