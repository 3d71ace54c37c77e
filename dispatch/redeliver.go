package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/meta"
)

var (
	// ErrPending is a redelivery asked for while a delivery of the hook
	// to that sink is pending (on its way, or waiting for its retry).
	ErrPending = errors.New("dispatch: a delivery of the hook to that sink is pending")
	// ErrNoSink is a redelivery to a sink the hook's source does not
	// have (now).
	ErrNoSink = errors.New("dispatch: the hook's source has no sink of that id")
	// ErrFiltered is a redelivery to a sink whose filter does not take
	// the hook.
	ErrFiltered = errors.New("dispatch: the sink's filter does not take the hook")
	// ErrWasQuarantined is a redelivery of a hook that was held in the
	// quarantine pen: how it was released (verified, or forced and
	// flagged) lived on its delivery rows, which are gone.
	ErrWasQuarantined = errors.New("dispatch: the hook was quarantined; its release is not kept past its deliveries")
)

// Redeliver sends a tenant's hook to one sink of its source again: a new
// pending row, due now, whatever became of the last one (delivered,
// dropped, or never made because the sink came later); a dead letter is
// retried as Retry does. The hook must still be readable (the WAL, a
// local segment or the archive) and the sink's filter must take it. The
// row and audit, the caller's record of the change, are one synced
// batch, written once the checkpoint covers the hook (the rebuild after a
// crash makes only absent rows past the checkpoint, so it cannot make the
// row twice). Errors: ErrNoDelivery (no such hook of the tenant, or it
// cannot be read), ErrPending, ErrNoSink, ErrSourceGone, ErrFiltered,
// ErrWasQuarantined, ErrBusy (committed a moment ago), ErrTenantErasing.
func (d *Dispatcher) Redeliver(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	done, err := d.enterTenant(tenant)
	if err != nil {
		return err
	}
	defer done()
	ord, ok := d.ordinal(tenant)
	if !ok {
		return ErrNoDelivery
	}
	e, err := d.o.Hooks.Fetch(id)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoDelivery, err)
	}
	if e.TenantID != tenant {
		return ErrNoDelivery
	}
	if e.Verification.Quarantined {
		return ErrWasQuarantined
	}
	src := d.o.Sources.Snapshot().Lookup([]byte(e.SourceID))
	if src == nil {
		return ErrSourceGone
	}
	spec := -1
	for i := range src.Spec.Sinks {
		if src.Spec.Sinks[i].ID == sink {
			spec = i
		}
	}
	if spec < 0 {
		return ErrNoSink
	}
	var fh *filter.Hook
	takes := d.filters.takes(src.Name, &src.Spec.Sinks[spec], e, &fh)
	if fh != nil {
		fh.Release()
	}
	if !takes {
		return ErrFiltered
	}
	if err := d.waitCheckpoint(ctx, e.Seq); err != nil {
		return err
	}
	// One redelivery at a time: two that both find no row would both
	// write one, and count it twice.
	d.redeliverMu.Lock()
	defer d.redeliverMu.Unlock()
	rid := meta.RowID{Ord: ord, Seq: e.Seq, Sink: sink}
	row, found, err := d.meta.Row(rid)
	if err != nil {
		return err
	}
	b := d.meta.NewBatch()
	defer b.Close()
	switch {
	case found && row.State == meta.RowDead:
		d.revive(b, rid, &row)
	case found:
		return ErrPending
	default:
		now := d.o.Now().UnixNano()
		row = meta.Delivery{ReceivedAt: e.ReceivedAt, StartedAt: now, Due: now, EventID: id, Source: e.SourceID}
		b.PutPending(rid, &row)
	}
	if err := addAudit(b, audit); err != nil {
		return err
	}
	if err := b.Commit(meta.Sync); err != nil {
		return fmt.Errorf("cannot redeliver a hook: %w", err)
	}
	if found {
		d.revived(ord, 1)
		return nil
	}
	d.pending.Add(1)
	backlogGauges(d)
	d.markActive(ord)
	d.wakeScheduler()
	return nil
}
