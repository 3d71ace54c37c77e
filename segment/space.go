package segment

import (
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/internal/backoff"
	"github.com/ankusa/ankusa/wal"
)

// A full disk does not stop the sealer (DESIGN.md §6 item 10). When a
// segment's creation, a block, its footer, its rename or its catalogue
// entry meets ENOSPC, the open segment is dropped (its .partial file, or
// its renamed file that no catalogue entry names, is removed), the tail
// goes back to the last sealed seq, and sealing starts again after a
// backoff: 50ms doubling to 2s. Nothing is lost or half applied: a WAL
// file goes only after the segment holding its hooks is synced and
// catalogued (§6 item 3), which a dropped segment never was.

const (
	sealRetryBase = 50 * time.Millisecond
	sealRetryMax  = 2 * time.Second
)

// noSpaceLocked drops what the failed seal wrote and rewinds the tail, so
// that the next catch-up seals the same hooks again. Under s.mu.
func (s *Store) noSpaceLocked(err error) {
	sealRetries.Inc()
	if s.open != nil {
		path := s.open.Path()
		s.open.Abort()
		_ = s.o.FS.Remove(path) // Abort leaves a finished file that its rename did not take
		s.open = nil
	}
	unsealedHooks.Set(0)
	s.tail.Close()
	s.tail = wal.NewTail(s.o.Log.FS(), s.o.Log.Dir(), 0, s.sealedSeq.Load())
	s.tail.OnGap = s.onGap
	s.walDone = s.walDone[:0]
	s.spaceFails++
	s.retryAt = time.Now().Add(backoff.Ceiling(s.spaceFails-1, sealRetryBase, sealRetryMax))
	if ok, n := s.spaceLog.Allow(time.Now()); ok {
		s.o.Logger.Warn("cannot seal: the disk is full; the segment is dropped and sealed again from the wal once space returns",
			zap.Error(err), zap.Int("attempts", s.spaceFails), zap.Int64("suppressed", n))
	}
}

// waitingForSpace reports whether the sealer backs off after a full disk.
// Under s.mu.
func (s *Store) waitingForSpace() bool {
	return s.spaceFails > 0 && time.Now().Before(s.retryAt)
}

// sealedAgain notes a catch-up that went through after a full disk.
// Under s.mu.
func (s *Store) sealedAgain() {
	if s.spaceFails > 0 {
		s.o.Logger.Info("sealing resumed after a full disk", zap.Int("attempts", s.spaceFails))
		s.spaceFails = 0
	}
}

// isNoSpace reports whether err is a full disk.
func isNoSpace(err error) bool { return wal.IsNoSpace(err) }
