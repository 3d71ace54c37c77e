package meta

import (
	"encoding/binary"
	"fmt"
)

// DispatchCheckpoint reads the stored dispatch checkpoint (0 when none).
func (s *Store) DispatchCheckpoint() (uint64, error) {
	v, c, found, err := s.get([]byte(keyDispatchCheckpoint))
	if err != nil {
		return 0, fmt.Errorf("cannot read dispatch checkpoint: %w", err)
	}
	if !found {
		return 0, nil
	}
	defer c.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: dispatch checkpoint of %d bytes, want 8", ErrBadRecord, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// DurableCheckpoint is the dispatch checkpoint as last synced, without
// I/O: the stored one at Open, then each one whose synced write has
// returned (SetDispatchCheckpoint, SetDispatchCheckpointWith). Every hook
// at or below it has its delivery rows durable, so the WAL files and
// local segments behind it may go (DESIGN.md §6 item 3). It is safe to
// call from any goroutine; the checkpoint has one writer (dispatch's row
// writer), so it only moves the way that writer moves it.
func (s *Store) DurableCheckpoint() uint64 { return s.ckpt.Load() }

// SetDispatchCheckpoint stores the checkpoint with a synced write. pebble
// writes its log in commit order, so the sync also makes durable every
// unsynced batch committed before it: the rows the checkpoint covers.
func (s *Store) SetDispatchCheckpoint(seq uint64) error {
	return s.SetDispatchCheckpointWith(seq, nil)
}

// SetDispatchCheckpointWith stores the checkpoint and the counters of the
// tenants that changed since the last one, in one synced batch: the
// counters count exactly the hooks at or below the checkpoint, so the
// rebuild past it adds each hook once.
func (s *Store) SetDispatchCheckpointWith(seq uint64, counts map[uint32]TenantCounts) error {
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set([]byte(keyDispatchCheckpoint), binary.BigEndian.AppendUint64(nil, seq), nil)
	for ord, c := range counts {
		v := binary.BigEndian.AppendUint64(nil, c.Hooks)
		v = binary.BigEndian.AppendUint64(v, c.Bytes)
		_ = b.Set(tenantCountKey(ord), v, nil)
	}
	if err := b.Commit(Sync.opts()); err != nil {
		return fmt.Errorf("cannot write dispatch checkpoint: %w", err)
	}
	s.ckpt.Store(seq)
	return nil
}
