package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ankusa/ankusa/meta"
)

// A tenant's erase (DESIGN.md §2.11, issue 20), as dispatch takes part in
// it. The erase job closes the tenant's ordinal (CloseTenant): from then
// on nothing of dispatch writes a key under it, the row writer drops its
// committed hooks (no row, due entry, dedupe key, pen row or counter),
// the scheduler claims none of its rows, no attempt of it starts, an
// attempt that was running writes no outcome, and the operator's calls on
// its rows answer ErrTenantErasing. The job then waits until every write
// that began before the close has landed (WaitTenantIdle) and deletes the
// ordinal's keys (EraseTenantRows, EraseTenantPen). An erased ordinal is
// never given again, so a closed one is never opened: there is no
// OpenTenant. At boot, Options.Erased closes the ordinals of tenants
// erased or being erased before anything is rebuilt or claimed.
//
// Every write of a tenant's rows other than the row writer's happens
// inside a section the ordinal's close cannot pass unseen: an attempt
// (counted in InFlight from the moment it is started, under the same lock
// CloseTenant takes) or a busy section (enter/leave: a claim pass, an
// operator's change, a dead-lettering of a held row). Either the section
// began before the close, and WaitTenantIdle waits for it, or it sees the
// ordinal closed and writes nothing. The row writer is waited for through
// Written.

// ErrTenantErasing: the tenant of the row is being erased; its rows are
// going, and no change to them is taken (admin answers 409
// tenant_erasing).
var ErrTenantErasing = errors.New("dispatch: the tenant is being erased")

// idlePoll is how often WaitTenantIdle looks.
const idlePoll = 15 * time.Millisecond

// isClosed reports whether ordinal ord is closed (being erased, or
// erased). It takes no lock.
func (d *Dispatcher) isClosed(ord uint32) bool {
	m := d.closedOrds.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[ord]
	return ok
}

// CloseTenant closes ordinal ord for the tenant's erase: from the call
// on, a committed hook of it is dropped by the row writer (no delivery
// row, due entry, dedupe key, pen row or counter), the scheduler claims
// none of its rows, no attempt of it starts (those queued are let go
// here), an attempt running writes no outcome when it returns, and the
// operator's calls on its rows answer ErrTenantErasing. Its counters stay
// readable (TenantCounts) until EraseTenantRows, and are written with the
// next checkpoint as they stand. A closed ordinal is never opened again.
func (d *Dispatcher) CloseTenant(ord uint32) {
	d.tmu.Lock()
	if !d.isClosed(ord) {
		next := map[uint32]struct{}{ord: {}}
		if old := d.closedOrds.Load(); old != nil {
			maps.Copy(next, *old)
		}
		d.closedOrds.Store(&next)
	}
	delete(d.active, ord)
	d.tmu.Unlock()
	d.dropQueued(ord)
}

// WaitTenantIdle waits, after CloseTenant(ord), until no write of the
// ordinal's keys that began before the close can still land: every hook
// up to seq (the last committed when the tenant was closed; the hooks
// handed to dispatch by the time of the call are waited for too) has
// passed the row writer (Written() >= seq), no attempt of it runs
// (InFlight(ord) == 0) and no claim pass or operator's change of it is
// under way. It polls; ctx bounds it.
func (d *Dispatcher) WaitTenantIdle(ctx context.Context, ord uint32, seq uint64) error {
	if !d.isClosed(ord) {
		return fmt.Errorf("BUG: dispatch: waiting for tenant ordinal %d to be idle without closing it", ord)
	}
	target := max(seq, d.in.handed.Load())
	tick := time.NewTicker(idlePoll)
	defer tick.Stop()
	for {
		written := d.Written()
		busy := d.tenantBusy(ord)
		if written >= target && busy == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("dispatch: tenant ordinal %d is not idle (rows written up to seq %d of %d, %d attempts or changes running): %w",
				ord, written, target, busy, ctx.Err())
		case <-d.stop:
			return fmt.Errorf("dispatch: tenant ordinal %d is not idle (rows written up to seq %d of %d, %d attempts or changes running): %w",
				ord, written, target, busy, errStopping)
		case <-tick.C:
		}
	}
}

// EraseTenantRows deletes, after WaitTenantIdle, every delivery row of the
// closed ordinal ord with its due index, dead-letter index and attempt log
// (one synced batch), and every trace dispatch keeps of it in memory: the
// rows queued for attempts, the backlog gauges' share, the scheduler's
// mark, and its counters, so no checkpoint writes them back (read
// TenantCounts before). It returns how many keys it deleted; a second
// call deletes nothing.
func (d *Dispatcher) EraseTenantRows(ord uint32) (int64, error) {
	if !d.isClosed(ord) {
		return 0, fmt.Errorf("BUG: dispatch: erasing the rows of tenant ordinal %d without closing it", ord)
	}
	d.dropQueued(ord)
	n, err := d.meta.DeleteTenantFamilies(ord, "", "rows", "due", "dead", "attempts")
	if err != nil {
		eraseFailures.Inc()
		return 0, err
	}
	// The backlog gauges count rows and dead letters by key, as at boot
	// (meta.CountRows): the deletion's own counts, no second pass.
	d.pending.Add(-(n["rows"] - n["dead"]))
	d.dead.Add(-n["dead"])
	backlogGauges(d)
	d.tmu.Lock()
	delete(d.active, ord)
	d.tmu.Unlock()
	// Under ckptMu: a checkpoint that took the counters before this
	// cannot write them after it.
	d.ckptMu.Lock()
	d.countsMu.Lock()
	delete(d.counts, ord)
	delete(d.dirty, ord)
	d.countsMu.Unlock()
	d.ckptMu.Unlock()
	return n.Total(), nil
}

// EraseTenantPen deletes the closed ordinal ord's quarantine pen rows (one
// synced batch) and takes them off the pen's rows and bytes. It returns
// how many keys it deleted; a second call deletes nothing.
func (d *Dispatcher) EraseTenantPen(ord uint32) (int64, error) {
	if !d.isClosed(ord) {
		return 0, fmt.Errorf("BUG: dispatch: erasing the pen rows of tenant ordinal %d without closing it", ord)
	}
	d.pen.mu.Lock()
	defer d.pen.mu.Unlock()
	var rows, bytes int64
	damaged, err := d.meta.PenRows(ord, 0, func(_ uint64, p *meta.PenRow) bool {
		rows++
		bytes += int64(p.Bytes)
		return false
	})
	damagedRows.Add(damaged)
	if err != nil {
		return 0, fmt.Errorf("cannot count the quarantined hooks of tenant ordinal %d: %w", ord, err)
	}
	n, err := d.meta.DeleteTenantFamilies(ord, "", "pen")
	if err != nil {
		eraseFailures.Inc()
		return 0, err
	}
	d.pen.rows.Add(-rows)
	d.pen.bytes.Add(-bytes)
	d.penGauges()
	return n.Total(), nil
}

// enter begins a busy section of ordinal ord (a write of its rows outside
// an attempt); false when the ordinal is closed, and nothing may be
// written. A true enter is paired with leave.
func (d *Dispatcher) enter(ord uint32) bool {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if d.isClosed(ord) {
		return false
	}
	d.busy[ord]++
	return true
}

func (d *Dispatcher) leave(ord uint32) {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if n := d.busy[ord] - 1; n > 0 {
		d.busy[ord] = n
	} else {
		delete(d.busy, ord)
	}
}

// startAttempt counts an attempt of ordinal ord in flight, unless the
// ordinal is closed (false: the attempt must not start). Under the lock
// CloseTenant takes, so an attempt is either counted before the close or
// not started.
func (d *Dispatcher) startAttempt(ord uint32) bool {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	if d.isClosed(ord) {
		closedSkips.Inc()
		return false
	}
	d.inflight[ord]++
	return true
}

// tenantBusy is the ordinal's attempts in flight and busy sections.
func (d *Dispatcher) tenantBusy(ord uint32) int {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	return d.inflight[ord] + d.busy[ord]
}

// dropQueued lets go of every task of ordinal ord queued in a runner
// (their rows stay as they are, for the erase to delete).
func (d *Dispatcher) dropQueued(ord uint32) {
	runners := d.allRunners()
	var ts []*task
	for _, r := range runners {
		r.mu.Lock()
		if q := r.tenants[ord]; q != nil {
			ts = append(ts, q.tasks...)
			r.queued -= len(q.tasks)
			q.tasks = nil
			if q.inflight == 0 {
				delete(r.tenants, ord) // the ring lets go of q when it meets it empty
			}
		}
		r.mu.Unlock()
	}
	for _, t := range ts {
		d.finish(t)
	}
}

// enterTenant begins a busy section for an operator's change of tenant's
// rows: ErrTenantErasing when its ordinal is closed. done ends it (a
// tenant without an ordinal has no rows to protect; done is a no-op).
func (d *Dispatcher) enterTenant(tenant string) (done func(), err error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return func() {}, nil
	}
	if !d.enter(ord) {
		return nil, ErrTenantErasing
	}
	return func() { d.leave(ord) }, nil
}
