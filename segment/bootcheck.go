package segment

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// checkLocal opens every local catalogued segment at boot and checks its
// header, footer and block index (cheap: a few reads a segment) and its
// size against the catalogue. A damaged one is reported and marked, not
// fatal: the node serves every other hook, the scrubber restores it from
// the archive when there is a copy, and its hooks' fetches say where the
// damage is. Blocks are left to the scrubber.
func (s *Store) checkLocal() error {
	var ents []meta.SegmentEntry
	err := s.o.Meta.Segments(0, func(e meta.SegmentEntry) bool {
		if !e.Removed {
			ents = append(ents, e)
		}
		return true
	})
	if err != nil {
		return err
	}
	for i := range ents {
		ent := &ents[i]
		path := s.o.FS.PathJoin(s.o.Dir, ent.Name)
		f, err := OpenFile(s.o.FS, path)
		if err == nil {
			if f.Size != ent.Size {
				err = &CorruptError{File: path, Offset: f.Size, Reason: fmt.Sprintf("the file has %d bytes, the catalogue says %d", f.Size, ent.Size)}
			}
			f.Close()
		}
		if err != nil && !s.markDamaged(ent, nil, err) {
			s.o.Logger.Error("boot: cannot read a segment; it is checked again by the scrubber", zap.String("segment", path), zap.Error(err))
		}
	}
	if n := len(s.damage.list()); n > 0 {
		s.o.Logger.Error("boot: local segments are damaged; the node serves every other hook", zap.Int("segments", n))
	}
	return nil
}
