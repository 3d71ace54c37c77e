package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/meta"
)

// A source's rows, for the operator's source writes (issue 15): deleting
// a source that still has undelivered hooks on this node is refused with
// their count (SourceBacklog) unless they are dead-lettered first
// (DeadLetterSource), so a source re-created under the same name starts
// with an empty queue; a PUT that removes a sink does the same for that
// sink's rows. A row's key does not name its source, so both are one pass
// over the node's rows (meta.SourceRows): an admin write, not a hot path,
// in constant memory. Dispatch keeps no per-source counters that could
// answer instead: they would cost every row write and delivery a map
// update for a question asked at a source's deletion.

// ErrInFlight: rows of the source were being attempted and their attempts
// did not end in time; they will be dead-lettered when they do (or were
// delivered). Asking again answers the rest.
var ErrInFlight = errors.New("dispatch: deliveries of the source are still in flight; retry")

// ErrRowsBehind: hooks committed before the call have not all got their
// delivery rows yet (the row writer is behind), so a count now could miss
// some; retry in a moment.
var ErrRowsBehind = errors.New("dispatch: delivery rows of hooks committed a moment ago are still being written; retry")

// rowsWait bounds how long the source calls wait for the row writer.
const rowsWait = 5 * time.Second

// waitRows waits until every hook committed before the call has its rows
// in the store, so a scan that follows sees them.
func (d *Dispatcher) waitRows() error {
	target := d.in.handed.Load()
	deadline := time.Now().Add(rowsWait)
	for d.flushed.Load() < target {
		if time.Now().After(deadline) {
			return ErrRowsBehind
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

// deadLetterChunk bounds the rows of one synced batch (and the memory of
// a source with millions of rows).
const deadLetterChunk = 1000

// doomWait bounds how long DeadLetterSource waits for the attempts in
// flight on the source's rows; each is bounded by its sink's timeout.
var doomWait = 30 * time.Second

// doom marks a held row that an operator dead-lettered: its holder
// dead-letters it as it lets go (unhold), unless the attempt delivered it.
type doom struct {
	reason string
	done   chan struct{} // closed once the holder let go
	dead   bool          // the row was pending then, and is now dead
}

// wantSink reports whether sinks (nil: all) names sink.
func wantSink(sinks []string, sink string) bool { return sinks == nil || slices.Contains(sinks, sink) }

// SourceBacklog is how many undelivered rows (pending or in flight, not
// dead) this node holds for the source, across every tenant (a shared
// source's rows are under each hook's tenant); sinks selects sink ids
// (nil: every sink). One pass over the node's rows, once the rows of every
// hook committed before the call are written (ErrRowsBehind if that takes
// past rowsWait).
func (d *Dispatcher) SourceBacklog(source string, sinks []string) (int64, error) {
	if err := d.waitRows(); err != nil {
		return 0, err
	}
	var n int64
	err := d.meta.SourceRows(source, func(id meta.RowID, row *meta.Delivery) (bool, error) {
		// A tenant being erased: its rows go with it, they hold nothing up.
		if row.State == meta.RowPending && wantSink(sinks, id.Sink) && !d.isClosed(id.Ord) {
			n++
		}
		return false, nil
	})
	return n, err
}

// DeadLetterSource makes every undelivered row of the source (those
// sinks; nil: every sink) a dead letter, in synced batches of at most
// deadLetterChunk rows, and returns how many it moved. audit, the
// caller's record of the change, is written in the first batch: it is
// durable before or with the first row it covers, so a crash part way
// leaves no change without its record (the rows left are still pending,
// and asking again moves them under a new row). Nothing is written, audit
// included, when the source has no undelivered row.
//
// Like SourceBacklog, it first waits for the rows of every hook committed
// before the call. A row an attempt holds is not written under it: it is marked, and its
// holder dead-letters it as it lets go (an attempt that fails cannot
// reschedule it; one that succeeds deletes it, as it was delivered, and
// it is not counted). A queued row's attempt does not start. The call
// waits for those attempts to end; if some do not within doomWait it
// returns what it moved with ErrInFlight.
func (d *Dispatcher) DeadLetterSource(source string, sinks []string, audit meta.AuditRow) (int64, error) {
	if audit.Action == "" || audit.At.IsZero() {
		return 0, fmt.Errorf("BUG: dispatch: dead-lettering source %q without its audit row (%+v)", source, audit)
	}
	if err := d.waitRows(); err != nil {
		return 0, err
	}
	d.dlmu.Lock()
	defer d.dlmu.Unlock()
	j := &deadLetterJob{d: d, audit: audit, b: d.meta.NewBatch(),
		reason: fmt.Sprintf("dead-lettered by %s (%s): an operator removed its source %q or the sink", audit.Principal, audit.Action, source)}
	defer j.b.Close()
	defer j.leave()
	err := d.meta.SourceRows(source, func(id meta.RowID, row *meta.Delivery) (bool, error) {
		if row.State != meta.RowPending || !wantSink(sinks, id.Sink) {
			return false, nil
		}
		return false, j.add(id)
	})
	if err == nil {
		err = j.flush()
	}
	if err == nil {
		err = j.doomBusy()
	}
	if err != nil {
		j.letGo()
		return j.moved, err
	}
	return j.wait()
}

// deadLetterJob is one DeadLetterSource call.
type deadLetterJob struct {
	d       *Dispatcher
	audit   meta.AuditRow
	reason  string
	b       *meta.Batch
	mine    []meta.RowID // held by the job, in b
	busy    []meta.RowID // held by an attempt when seen
	dooms   []*doom
	audited bool
	moved   int64
	// entered are the tenants whose rows the job writes: busy for the
	// job's length, so a tenant's erase waits for it (erase.go).
	entered map[uint32]bool
}

// enter reports whether the job may write rows of ordinal ord: not when
// the tenant is being erased (its rows go with it).
func (j *deadLetterJob) enter(ord uint32) bool {
	if j.entered[ord] {
		return true
	}
	if !j.d.enter(ord) {
		return false
	}
	if j.entered == nil {
		j.entered = map[uint32]bool{}
	}
	j.entered[ord] = true
	return true
}

func (j *deadLetterJob) leave() {
	for ord := range j.entered {
		j.d.leave(ord)
	}
}

// add dead-letters row id into the batch if no attempt holds it; a held
// one is kept for doomBusy. The row is read again under the hold: the
// scan's view may be older than an attempt that has since ended.
func (j *deadLetterJob) add(id meta.RowID) error {
	if !j.enter(id.Ord) {
		return nil
	}
	if !j.d.hold(id) {
		j.busy = append(j.busy, id)
		return nil
	}
	row, found, err := j.d.meta.Row(id)
	if err != nil {
		j.d.release(id, 0) // its due entry is where it was, wherever that is
		j.d.markActive(id.Ord)
		return err
	}
	if !found || row.State != meta.RowPending {
		j.d.unhold(id) // no due entry
		return nil
	}
	row.LastError = j.reason
	j.b.PutDead(id, row.Due, &row)
	j.mine = append(j.mine, id)
	if len(j.mine) >= deadLetterChunk {
		return j.flush()
	}
	return nil
}

// flush commits the batch, synced, with the audit row if none went
// before, and lets go of its rows.
func (j *deadLetterJob) flush() error {
	if len(j.mine) == 0 {
		return nil
	}
	if err := j.commit(); err != nil {
		return err
	}
	n := int64(len(j.mine))
	j.moved += n
	j.d.pending.Add(-n)
	j.d.dead.Add(n)
	deadTotal.Add(int(n))
	operatorDead.Add(int(n))
	backlogGauges(j.d)
	for _, id := range j.mine {
		j.d.unhold(id)
	}
	j.mine = j.mine[:0]
	return nil
}

// letGo lets go of the rows held for a batch that did not commit (its
// audit row refused, or the commit failed): they stay pending, for
// dispatch and for the next call, instead of held by no one for good.
func (j *deadLetterJob) letGo() {
	for _, id := range j.mine {
		j.d.release(id, 0) // the batch did not commit: its due entry is where it was
		// A pass that met it held may have found its tenant empty.
		j.d.markActive(id.Ord)
	}
	j.mine = j.mine[:0]
}

func (j *deadLetterJob) commit() error {
	if !j.audited {
		if err := j.b.AddAudit(j.audit); err != nil {
			return err
		}
	}
	if err := j.b.Commit(meta.Sync); err != nil {
		return fmt.Errorf("cannot dead-letter the rows of a source: %w", err)
	}
	j.audited = true
	j.b.Reset()
	return nil
}

// doomBusy handles the rows attempts held during the scan: the audit row
// goes first (alone, if no row was written yet), then each is
// dead-lettered here if its attempt has ended, or marked for its holder.
// A row claimed again between the two looks comes round once more (rare).
func (j *deadLetterJob) doomBusy() error {
	if len(j.busy) > 0 && !j.audited {
		if err := j.commit(); err != nil {
			return err
		}
	}
	for len(j.busy) > 0 {
		busy := j.busy
		j.busy = nil
		for _, id := range busy {
			if dm := j.d.doomHeld(id, j.reason); dm != nil {
				j.dooms = append(j.dooms, dm)
			} else if err := j.add(id); err != nil {
				return err
			}
		}
		if err := j.flush(); err != nil {
			return err
		}
	}
	return nil
}

// wait waits for the marked rows' holders to let go, counting those that
// ended dead.
func (j *deadLetterJob) wait() (int64, error) {
	deadline := time.NewTimer(doomWait)
	defer deadline.Stop()
	for _, dm := range j.dooms {
		select {
		case <-dm.done:
			if dm.dead {
				j.moved++
			}
		case <-deadline.C:
			return j.moved, ErrInFlight
		}
	}
	return j.moved, nil
}

// doomHeld marks the row id, if something holds it, to be dead-lettered
// as its holder lets go, and returns the mark (an existing one if it was
// marked already); nil when nothing holds it.
func (d *Dispatcher) doomHeld(id meta.RowID, reason string) *doom {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	if _, held := d.held[id]; !held {
		return nil
	}
	if dm := d.doomed[id]; dm != nil {
		return dm
	}
	dm := &doom{reason: reason, done: make(chan struct{})}
	d.doomed[id] = dm
	return dm
}

func (d *Dispatcher) isDoomed(id meta.RowID) bool {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	return d.doomed[id] != nil
}

// buryHeld dead-letters the held row id if it is still pending (a synced
// write: the operator's change), and reports whether it did.
func (d *Dispatcher) buryHeld(id meta.RowID, reason string) bool {
	if !d.enter(id.Ord) {
		return false // its tenant is being erased: the row goes with it
	}
	defer d.leave(id.Ord)
	row, found, err := d.meta.Row(id)
	if err != nil && !errors.Is(err, meta.ErrBadRecord) {
		d.fatal(fmt.Errorf("cannot read a row to dead-letter: %w", err))
		return false
	}
	if !found || err != nil || row.State != meta.RowPending {
		return false
	}
	b := d.meta.NewBatch()
	defer b.Close()
	row.LastError = reason
	b.PutDead(id, row.Due, &row)
	if err := b.Commit(meta.Sync); err != nil {
		d.fatal(fmt.Errorf("cannot dead-letter a row: %w", err))
		return false
	}
	d.pending.Add(-1)
	d.dead.Add(1)
	deadTotal.Inc()
	operatorDead.Inc()
	backlogGauges(d)
	d.o.Logger.Info("dead letter: an operator dead-lettered a row in flight", zap.String("source", row.Source), zap.String("sink", id.Sink),
		zap.Uint32("tenant_ordinal", id.Ord), zap.Uint64("seq", id.Seq), zap.String("reason", reason))
	return true
}
