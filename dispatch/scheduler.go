package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	lo := meta.TenantPrefix(meta.PrefixDue, ord)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: meta.PrefixEnd(lo)})
	if err != nil {
		return 0, false, fmt.Errorf("cannot read the due index: %w", err)
	}
	defer it.Close()
	now := d.o.Now().UnixNano()
	claimed := 0
	var key []byte
	empty = true
	for ok := it.First(); ok && claimed < claimPerTenant && !d.stopping(); ok = it.Next() {
		empty = false
		_, due, seq, sink, ok := meta.ParseDueKey(it.Key())
		if !ok {
			d.o.Logger.Error("skipping a malformed due index key", zap.Binary("key", it.Key()))
			continue
		}
		if due > now {
			return due, false, it.Error()
		}
		key = meta.RowKey(key[:0], ord, seq, sink)
		if d.isHeld(key) {
			continue
		}
		full, err := d.claim(ord, seq, sink, key, due, it.Key())
		if err != nil {
			return 0, false, err
		}
		if full {
			break
		}
		claimed++
	}
	return 0, empty, it.Error()
}

// claim offers one due row to its sink; full means the sink takes no more
// of this tenant now. due and dueKey are the index entry as the pass's
// iterator saw it: its snapshot may be older than an attempt that has
// since finished, so the row is read again and must agree.
func (d *Dispatcher) claim(ord uint32, seq uint64, sink string, key []byte, due int64, dueKey []byte) (full bool, err error) {
	v, closer, err := d.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, d.dropOrphanDue(dueKey, ord, seq, sink)
	}
	if err != nil {
		return false, fmt.Errorf("cannot read a delivery row: %w", err)
	}
	var row meta.Delivery
	derr := meta.DecodeDelivery(v, &row)
	closer.Close()
	if derr != nil {
		// Take it out of the due index (logged once, not every pass); the
		// row stays for an operator, and keeps its segment on disk.
		d.o.Logger.Error("a delivery row does not decode; it is no longer scheduled and is left in the store for an operator",
			zap.Uint32("tenant_ordinal", ord), zap.Uint64("seq", seq), zap.String("sink", sink), zap.Binary("key", key), zap.Error(derr))
		damagedRows.Inc()
		return false, d.db.Delete(dueKey, pebble.NoSync)
	}
	if row.State != meta.RowPending || row.Due != due {
		return false, nil // moved or finished since the pass began
	}
	r, err := d.runnerFor(nil, row.Source, sink)
	if err != nil || r == nil {
		reason := fmt.Sprintf("sink %q is no longer a sink of source %q", sink, row.Source)
		if err != nil {
			reason = err.Error()
		}
		return false, d.deadLetter(ord, seq, sink, key, row, reason)
	}
	if !r.hasRoom(ord) {
		return true, nil
	}
	if !d.hold(key) {
		return false, nil
	}
	t := &task{key: append([]byte(nil), key...), ord: ord, seq: seq, sink: sink, row: row}
	if !r.offer(t) {
		d.unhold(t.key)
		return true, nil
	}
	return false, nil
}

// dropOrphanDue removes a due entry whose row is gone. Usually the entry
// went with it (the pass's snapshot is older than the delivery); one that
// is still there is an orphan, which no write of this package leaves.
func (d *Dispatcher) dropOrphanDue(dueKey []byte, ord uint32, seq uint64, sink string) error {
	_, closer, err := d.db.Get(dueKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the due index: %w", err)
	}
	closer.Close()
	d.o.Logger.Error("a due index entry has no delivery row; dropping the entry", zap.Uint32("tenant_ordinal", ord), zap.Uint64("seq", seq), zap.String("sink", sink))
	damagedRows.Inc()
	return d.db.Delete(dueKey, pebble.NoSync)
}

// deadLetter turns a pending row that cannot be attempted into a dead
// letter.
func (d *Dispatcher) deadLetter(ord uint32, seq uint64, sink string, key []byte, row meta.Delivery, reason string) error {
	b := d.db.NewBatch()
	defer b.Close()
	_ = b.Delete(meta.DueKey(nil, ord, row.Due, seq, sink), nil)
	row.State, row.LastError = meta.RowDead, reason
	_ = b.Set(key, row.AppendTo(nil), nil)
	_ = b.Set(meta.DeadKey(nil, ord, seq, sink), nil, nil)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("cannot dead-letter a delivery: %w", err)
	}
	d.pending.Add(-1)
	d.dead.Add(1)
	deadTotal.Inc()
	backlogGauges(d)
	d.o.Logger.Warn("dead letter", zap.Uint32("tenant_ordinal", ord), zap.Uint64("seq", seq), zap.String("sink", sink), zap.String("error", reason))
	return nil
}
