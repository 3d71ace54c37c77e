package dispatch

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/wal"
)

// rowBatchHooks caps the hooks of one row batch.
const rowBatchHooks = 512

// shared is a hook held in memory for its first attempts; the last task
// to finish returns its bytes to the intake bound.
type shared struct {
	env  *envelope.Envelope
	size int64
	refs atomic.Int32
}

// rowWriter collects one batch of rows and the first attempts that follow
// it.
type rowWriter struct {
	d       *Dispatcher
	b       *meta.Batch
	tasks   []*task
	hooks   int
	rebuild bool // only create absent rows
	// ords are the tenants with rows in the batch that no first attempt
	// holds: the scheduler must look at them. A held row is the
	// scheduler's again only if its attempt lets go of it unsettled
	// (finish marks its tenant then) or retries it (record).
	ords    map[uint32]struct{}
	created int
}

func (d *Dispatcher) newRowWriter(rebuild bool) *rowWriter {
	return &rowWriter{d: d, b: d.meta.NewBatch(), rebuild: rebuild, ords: map[uint32]struct{}{}}
}

// close releases the writer's batch (flushed or not).
func (w *rowWriter) close() { w.b.Close() }

// writeLoop is the row writer: it turns the intake into rows, starts first
// attempts and moves the checkpoint.
func (d *Dispatcher) writeLoop() {
	defer d.wg.Done()
	tick := time.NewTicker(d.o.CheckpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			d.checkpoint(true)
			return
		case <-d.in.signal:
			if err := d.writeIntake(); err != nil {
				d.fatal(err)
				return
			}
			d.checkpoint(false)
		case <-tick.C:
			d.checkpoint(false)
		}
	}
}

// writeIntake writes the rows of everything queued.
func (d *Dispatcher) writeIntake() error {
	items := d.in.take()
	defer d.in.giveBack(items)
	w := d.newRowWriter(false)
	defer w.close()
	for i, it := range items {
		if it.skip {
			// Nothing to deliver: the seqs only move the checkpoint (and
			// the counters). The rows of earlier hooks go first, in the
			// same batch order.
			w.d.written = max(w.d.written, it.to)
			for _, t := range it.tally {
				d.count(t.ord, t.hooks, t.bytes)
			}
			continue
		}
		if it.req == nil {
			// Read back (the intake overflowed): a damaged segment's
			// unreadable hooks are skipped, as the rebuild skips them.
			err := d.scanPastDamage(it.from, it.to, func(e *envelope.Envelope) error {
				return w.addHook(e, nil)
			})
			if err != nil {
				d.releaseItems(items[i+1:])
				return fmt.Errorf("cannot read hooks %d..%d back for their delivery rows: %w", it.from, it.to, err)
			}
			continue
		}
		e := new(envelope.Envelope)
		_, err := envelope.Decode(it.req.Buf[wal.FrameHeaderSize:], e)
		size := int64(len(it.req.Buf))
		if err != nil {
			err = fmt.Errorf("BUG: a committed record does not decode: %w (%x)", err, it.req.Buf[:min(len(it.req.Buf), 64)])
		}
		wal.ReleaseRequest(it.req)
		if err != nil {
			d.in.release(size)
			d.releaseItems(items[i+1:])
			return err
		}
		sh := &shared{env: e, size: size}
		if err := w.addHook(e, sh); err != nil {
			d.releaseItems(items[i+1:])
			return err
		}
	}
	return w.flush()
}

func (d *Dispatcher) releaseItems(items []item) {
	for _, it := range items {
		if it.req != nil {
			d.in.release(int64(len(it.req.Buf)))
			wal.ReleaseRequest(it.req)
		}
	}
}

// addHook adds the rows of one hook; sh (nil for hooks read back) is the
// hook in memory for first attempts.
func (w *rowWriter) addHook(e *envelope.Envelope, sh *shared) error {
	d := w.d
	if e.Seq > w.d.written {
		w.d.written = e.Seq
	}
	release := func() {
		if sh != nil {
			d.in.release(sh.size)
		}
	}
	if d.isClosed(e.TenantOrdinal) {
		// Its tenant is being erased (or is, and this is the rebuild):
		// nothing of it is written, not even its counters.
		release()
		if e.Verification.Quarantined && !w.rebuild {
			// The edge reserved its bytes in the pen (the rebuild's rows
			// are counted when the pen is loaded).
			d.UnreservePen(int64(len(e.Body)))
		}
		closedDropped.Inc()
		return nil
	}
	d.count(e.TenantOrdinal, 1, uint64(e.EncodedLen()))
	if e.Verification.Quarantined {
		release() // held in the quarantine pen, not dispatched
		return w.addPenRow(e)
	}
	// A source removed while its hook was being committed still gives it
	// rows, which the scheduler dead-letters (the source is gone).
	src := d.o.Sources.Snapshot().LookupForDelivery([]byte(e.SourceID))
	if src != nil && d.in.o.DedupeNode && src.Dedupe != nil && e.DedupeKey != "" && !e.Verification.Flagged {
		dedupe.AddKey(w.b, e.TenantOrdinal, e.TenantID, e.SourceID, []byte(e.DedupeKey), e.ID, e.Seq, e.ReceivedAt, src.DedupeTTL)
	}
	if src == nil || len(src.Spec.Sinks) == 0 {
		release()
		if src == nil {
			// Committed while its source was being deleted: there is no
			// sink left to give it a row. It stays in the log and the
			// archive; say so rather than drop it unseen.
			unknownSource.Inc()
			d.o.Logger.Warn("a committed hook's source no longer exists: no delivery row is written",
				zap.String("source", e.SourceID), zap.String("tenant", e.TenantID), zap.Stringer("event_id", e.ID), zap.Uint64("seq", e.Seq))
		}
		return nil
	}
	now := d.o.Now().UnixNano()
	if sh != nil {
		sh.refs.Store(1) // the writer's own reference, dropped below
	}
	var fh *filter.Hook // the hook as the sinks' filters see it, made by the first
	for _, spec := range src.Spec.Sinks {
		id := meta.RowID{Ord: e.TenantOrdinal, Seq: e.Seq, Sink: spec.ID}
		if w.rebuild {
			exists, err := d.meta.RowExists(id)
			if err != nil {
				return err
			}
			if exists {
				continue
			}
		}
		if !d.filters.takes(e.SourceID, &spec, e, &fh) {
			continue // no row: the sink's filter does not want it (filter.go)
		}
		row := meta.Delivery{ReceivedAt: e.ReceivedAt, StartedAt: e.ReceivedAt, Due: now, EventID: e.ID, Source: e.SourceID}
		w.b.PutPending(id, &row)
		w.created++
		d.pending.Add(1)
		if sh == nil || !d.hold(id) {
			// No first attempt from memory: the scheduler claims it.
			w.ords[e.TenantOrdinal] = struct{}{}
			continue
		}
		sh.refs.Add(1)
		w.tasks = append(w.tasks, &task{id: id, row: row, env: e, sh: sh, first: true})
	}
	if fh != nil {
		fh.Release()
	}
	if sh != nil {
		d.doneWith(sh)
	}
	w.hooks++
	if w.hooks >= rowBatchHooks {
		return w.flush()
	}
	return nil
}

// addPenRow holds a quarantined hook in the pen. Its bytes were reserved
// by the edge; a row the rebuild adds is counted when the pen is loaded.
func (w *rowWriter) addPenRow(e *envelope.Envelope) error {
	if w.rebuild {
		// Only absent rows: one an operator released or dropped after
		// the checkpoint moved past it stays gone (see waitCheckpoint).
		exists, err := w.d.meta.PenExists(e.TenantOrdinal, e.Seq)
		if err != nil || exists {
			return err
		}
	}
	row := meta.PenRow{ReceivedAt: e.ReceivedAt, EventID: e.ID, Bytes: uint32(len(e.Body)), Failure: e.Verification.Failure, Source: e.SourceID}
	w.b.PutPen(e.TenantOrdinal, e.Seq, &row)
	w.d.pen.rows.Add(1)
	w.d.penGauges()
	w.hooks++
	if w.hooks >= rowBatchHooks {
		return w.flush()
	}
	return nil
}

// flush commits the batch (unsynced: the checkpoint's sync covers it),
// then offers the first attempts to their sinks.
func (w *rowWriter) flush() error {
	if !w.b.Empty() {
		if err := w.b.Commit(meta.NoSync); err != nil {
			return fmt.Errorf("cannot write delivery rows: %w", err)
		}
		w.b.Reset()
	}
	w.d.flushed.Store(w.d.written)
	for o := range w.ords {
		w.d.markActive(o)
	}
	clear(w.ords)
	for _, t := range w.tasks {
		w.d.offerFirst(t)
	}
	clear(w.tasks)
	w.tasks = w.tasks[:0]
	w.hooks = 0
	return nil
}

// offerFirst hands a first attempt to its sink's runner for the current
// spec (once more if that runner was retired by an edit meanwhile); when
// the sink's queue is full, or the source or sink is gone, the row stays
// pending and the scheduler claims it later (and dead-letters it when
// the sink is gone).
func (d *Dispatcher) offerFirst(t *task) {
	if d.isClosed(t.id.Ord) {
		d.finish(t) // closed since its row was written: no attempt starts
		return
	}
	for range 2 {
		r, err := d.runnerFor(t.row.Source, t.id.Sink)
		if err != nil && !errors.Is(err, errStopping) {
			d.o.Logger.Error("cannot start deliveries to a sink", zap.Error(err))
		}
		if r == nil {
			break
		}
		if r.offer(t) {
			return
		}
		if !r.retired.Load() {
			break
		}
	}
	d.finish(t) // marks the tenant active: the scheduler claims the row
	d.wakeScheduler()
}

// doneWith drops one reference to a hook in memory.
func (d *Dispatcher) doneWith(sh *shared) {
	if sh.refs.Add(-1) == 0 {
		d.in.release(sh.size)
	}
}

// checkpoint moves the checkpoint to the last seq with rows written, with
// a synced write, at most every CheckpointEvery unless now.
func (d *Dispatcher) checkpoint(now bool) {
	if d.written <= d.meta.DurableCheckpoint() {
		return
	}
	if !now && d.o.Now().Sub(d.lastCkpt) < d.o.CheckpointEvery {
		return
	}
	d.ckptMu.Lock()
	err := d.o.Meta.SetDispatchCheckpointWith(d.written, d.takeDirty())
	d.ckptMu.Unlock()
	if err != nil {
		d.fatal(err)
		return
	}
	d.lastCkpt = d.o.Now()
	checkpointSeq.Set(float64(d.written))
}

// rebuild creates the absent rows of hooks from+1..to, read back from the
// store (boot, after a crash).
func (d *Dispatcher) rebuild(from, to uint64) (int, error) {
	if to <= from {
		return 0, nil
	}
	w := d.newRowWriter(true)
	defer w.close()
	err := d.scanPastDamage(from+1, to, func(e *envelope.Envelope) error { return w.addHook(e, nil) })
	if err != nil {
		return 0, fmt.Errorf("cannot rebuild delivery rows of seqs %d..%d: %w", from+1, to, err)
	}
	if err := w.flush(); err != nil {
		return 0, err
	}
	rebuiltRows.Add(w.created)
	return w.created, nil
}
