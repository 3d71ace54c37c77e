package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// Scheduler settings: a pass claims at most claimPerTenant due rows of
// each tenant before moving to the next, so a tenant with a large backlog
// takes one turn like any other; passes run at least every maxIdle.
const (
	claimPerTenant = 64
	maxIdle        = time.Second
	minPause       = 5 * time.Millisecond
)

// scheduleLoop claims due rows until Close.
func (d *Dispatcher) scheduleLoop() {
	defer d.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var turn int
	for {
		select {
		case <-d.stop:
			return
		case <-timer.C:
		case <-d.schedWake:
			time.Sleep(minPause) // let wakes gather into one pass
		}
		next, err := d.claimPass(&turn)
		if err != nil {
			d.fatal(err)
			return
		}
		wait := maxIdle
		if !next.IsZero() {
			wait = min(max(time.Until(next), minPause), maxIdle)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// claimPass visits every active tenant once, starting one later than the
// last pass, and returns the earliest future due time it saw.
func (d *Dispatcher) claimPass(turn *int) (time.Time, error) {
	d.tmu.Lock()
	ords := make([]uint32, 0, len(d.active))
	for o := range d.active {
		ords = append(ords, o)
		d.active[o] = false
	}
	d.tmu.Unlock()
	if len(ords) == 0 {
		return time.Time{}, nil
	}
	slices.Sort(ords)
	*turn = (*turn + 1) % len(ords)
	var next int64
	for i := range ords {
		ord := ords[(*turn+i)%len(ords)]
		due, empty, err := d.claimTenant(ord)
		if err != nil {
			return time.Time{}, err
		}
		if empty {
			d.tmu.Lock()
			if !d.active[ord] {
				delete(d.active, ord)
			}
			d.tmu.Unlock()
		}
		if due > 0 && (next == 0 || due < next) {
			next = due
		}
	}
	if next == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, next), nil
}

// claimTenant offers up to claimPerTenant due rows of one tenant to their
// sinks. nextDue is the first due time after now (0: none seen); empty
// means the tenant has no pending row at all.
func (d *Dispatcher) claimTenant(ord uint32) (nextDue int64, empty bool, err error) {
	if !d.enter(ord) {
		return 0, true, nil // being erased: none of its rows is claimed
	}
	defer d.leave(ord)
	now := d.o.Now().UnixNano()
	claimed := 0
	empty = true
	err = d.meta.DueRows(ord, d.isHeld, func(id meta.RowID, due int64) (bool, error) {
		if claimed >= claimPerTenant || d.stopping() || d.isClosed(ord) {
			return true, nil
		}
		empty = false
		if due > now {
			nextDue = due
			return true, nil
		}
		full, err := d.claim(id, due)
		if err != nil || full {
			return true, err
		}
		claimed++
		return false, nil
	}, func(key []byte) {
		empty = false
		d.o.Logger.Error("skipping a malformed due index key", zap.Binary("key", key))
	})
	if err != nil {
		return 0, false, err
	}
	return nextDue, empty, nil
}

// claim offers one due row to its sink; full means the sink takes no more
// of this tenant now. due is the index entry as the pass saw it: the
// pass's view may be older than an attempt that has since finished, so the
// row is held first, then read again, and must agree (read before the
// hold, it could be one an operator changed meanwhile, e.g. dead-lettered,
// which the attempt would then write back as pending).
func (d *Dispatcher) claim(id meta.RowID, due int64) (full bool, err error) {
	if !d.hold(id) {
		return false, nil
	}
	offered := false
	defer func() {
		if !offered {
			d.release(id, due)
		}
	}()
	row, found, err := d.meta.Row(id)
	switch {
	case errors.Is(err, meta.ErrBadRecord):
		// Take it out of the due index (logged once, not every pass); the
		// row stays for an operator, and keeps its segment on disk.
		d.o.Logger.Error("a delivery row does not decode; it is no longer scheduled and is left in the store for an operator",
			zap.Uint32("tenant_ordinal", id.Ord), zap.Uint64("seq", id.Seq), zap.String("sink", id.Sink), zap.Binary("key", meta.RowKey(nil, id)), zap.Error(err))
		damagedRows.Inc()
		return false, d.deleteDue(id, due)
	case err != nil:
		return false, err
	case !found:
		return false, d.dropOrphanDue(id, due)
	}
	if row.State != meta.RowPending || row.Due != due {
		return false, nil // moved or finished since the pass began
	}
	r, err := d.runnerFor(row.Source, id.Sink)
	if errors.Is(err, errStopping) {
		return true, nil
	}
	if err != nil || r == nil {
		reason := d.goneReason(row.Source, id.Sink)
		if err != nil {
			reason = err.Error()
		}
		return false, d.deadLetter(id, row, reason)
	}
	if !r.hasRoom(id.Ord) {
		return true, nil
	}
	if offered = r.offer(&task{id: id, row: row}); !offered {
		return true, nil
	}
	return false, nil
}

// dropOrphanDue removes a due entry whose row is gone. Usually the entry
// went with it (the pass's view is older than the delivery); one that is
// still there is an orphan, which no write of this package leaves.
func (d *Dispatcher) dropOrphanDue(id meta.RowID, due int64) error {
	exists, err := d.meta.DueExists(id, due)
	if err != nil || !exists {
		return err
	}
	d.o.Logger.Error("a due index entry has no delivery row; dropping the entry", zap.Uint32("tenant_ordinal", id.Ord), zap.Uint64("seq", id.Seq), zap.String("sink", id.Sink))
	damagedRows.Inc()
	return d.deleteDue(id, due)
}

// deleteDue deletes one due entry (unsynced: one that comes back after a
// crash is dropped again).
func (d *Dispatcher) deleteDue(id meta.RowID, due int64) error {
	b := d.meta.NewBatch()
	defer b.Close()
	b.DeleteDue(id, due)
	return b.Commit(meta.NoSync)
}

// deadLetter turns a pending row that cannot be attempted (its source or
// sink is gone, or the sink cannot be built) into a dead letter, with an
// attempt log entry saying why: it is never retried by itself nor dropped
// unseen. The caller holds the row.
func (d *Dispatcher) deadLetter(id meta.RowID, row meta.Delivery, reason string) error {
	b := d.meta.NewBatch()
	defer b.Close()
	oldDue := row.Due
	now := d.o.Now().UnixNano()
	row.Attempts++
	row.LastAt, row.LastStatus, row.LastError = now, 0, reason
	b.PutDead(id, oldDue, &row)
	b.PutAttempt(id, row.Attempts, &meta.AttemptRecord{At: now, Outcome: outDead, Error: reason})
	if err := b.Commit(meta.NoSync); err != nil {
		return fmt.Errorf("cannot dead-letter a delivery: %w", err)
	}
	d.pending.Add(-1)
	d.dead.Add(1)
	deadTotal.Inc()
	backlogGauges(d)
	d.o.Logger.Warn("dead letter: the delivery cannot be attempted", zap.String("source", row.Source), zap.String("sink", id.Sink),
		zap.Uint32("tenant_ordinal", id.Ord), zap.Uint64("seq", id.Seq), zap.Stringer("event_id", row.EventID), zap.String("error", reason))
	return nil
}
