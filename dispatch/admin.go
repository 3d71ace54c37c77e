package dispatch

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Errors of the operator's calls.
var (
	// ErrNoDelivery: the tenant has no such hook or no row for that sink.
	ErrNoDelivery = errors.New("dispatch: no such delivery")
	// ErrNotDead: the row is pending or in flight; only dead letters are
	// retried or dropped by hand.
	ErrNotDead = errors.New("dispatch: the delivery is not a dead letter")
	// ErrBadCursor: a listing cursor this dispatcher did not hand out.
	ErrBadCursor = errors.New("dispatch: malformed cursor")
)

// Operator calls resolve tenant names with Options.Ordinal. Those that
// change rows answer ErrTenantErasing for a tenant being erased.

// Dead lists a tenant's dead letters in (seq, sink) order after cursor.
func (d *Dispatcher) Dead(_ context.Context, tenant string, f Filter, cursor string, limit int) ([]Row, string, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return nil, "", nil
	}
	var after *meta.RowID
	if cursor != "" {
		id, ok := parseCursor(ord, cursor)
		if !ok {
			return nil, "", ErrBadCursor
		}
		after = &id
	}
	var rows []Row
	next := ""
	err := d.scanDead(tenant, ord, after, f, func(r Row, _ *meta.Delivery) (bool, error) {
		if len(rows) == limit {
			last := rows[len(rows)-1]
			next = makeCursor(last.Seq, last.Sink)
			return true, nil
		}
		rows = append(rows, r)
		return false, nil
	})
	return rows, next, err
}

// A dead-letter cursor is the hex of the last row's seq (u64, big-endian)
// and sink id.
func makeCursor(seq uint64, sink string) string {
	return hex.EncodeToString(append(binary.BigEndian.AppendUint64(nil, seq), sink...))
}

func parseCursor(ord uint32, cursor string) (meta.RowID, bool) {
	c, err := hex.DecodeString(cursor)
	if err != nil || len(c) < 9 {
		return meta.RowID{}, false
	}
	return meta.RowID{Ord: ord, Seq: binary.BigEndian.Uint64(c), Sink: string(c[8:])}, true
}

// scanDead calls fn with every dead letter of the tenant passing the
// filter, after the row after (nil: from the first), in (seq, sink)
// order, until fn says stop.
func (d *Dispatcher) scanDead(tenant string, ord uint32, after *meta.RowID, f Filter, fn func(Row, *meta.Delivery) (stop bool, err error)) error {
	return d.meta.DeadRows(ord, after, func(id meta.RowID, row *meta.Delivery) (bool, error) {
		r := rowOf(tenant, id, row)
		if !f.Match(&r) {
			return false, nil
		}
		return fn(r, row)
	})
}

// Retry makes one dead letter pending again, due now, with its attempt
// count and max_age clock reset: a synced write, with audit (the caller's
// record of the change) in the same batch.
func (d *Dispatcher) Retry(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	done, err := d.enterTenant(tenant)
	if err != nil {
		return err
	}
	defer done()
	rid, row, err := d.deadRow(tenant, id, sink)
	if err != nil {
		return err
	}
	b := d.meta.NewBatch()
	defer b.Close()
	d.revive(b, rid, &row)
	if err := addAudit(b, audit); err != nil {
		return err
	}
	if err := b.Commit(meta.Sync); err != nil {
		return fmt.Errorf("cannot retry a dead letter: %w", err)
	}
	d.revived(rid.Ord, 1)
	return nil
}

// RetryAll retries every dead letter of the tenant passing the filter, in
// synced batches of at most 1000, each with the audit row audit(n) makes
// for its n rows.
func (d *Dispatcher) RetryAll(ctx context.Context, tenant string, f Filter, audit func(n int) meta.AuditRow) (int, error) {
	return d.eachDead(tenant, f, audit, d.revive, func(ord uint32, n int) { d.revived(ord, n) })
}

// Drop deletes one dead letter (a synced write, with audit in its batch);
// its attempt log stays until it ages out.
func (d *Dispatcher) Drop(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error {
	done, err := d.enterTenant(tenant)
	if err != nil {
		return err
	}
	defer done()
	rid, _, err := d.deadRow(tenant, id, sink)
	if err != nil {
		return err
	}
	b := d.meta.NewBatch()
	defer b.Close()
	b.DeleteDead(rid)
	if err := addAudit(b, audit); err != nil {
		return err
	}
	if err := b.Commit(meta.Sync); err != nil {
		return fmt.Errorf("cannot drop a dead letter: %w", err)
	}
	d.dead.Add(-1)
	backlogGauges(d)
	return nil
}

// DropAll drops every dead letter of the tenant passing the filter, in
// batches as RetryAll's, each with its audit row.
func (d *Dispatcher) DropAll(ctx context.Context, tenant string, f Filter, audit func(n int) meta.AuditRow) (int, error) {
	return d.eachDead(tenant, f, audit, func(b *meta.Batch, id meta.RowID, _ *meta.Delivery) {
		b.DeleteDead(id)
	}, func(_ uint32, n int) { d.dead.Add(-int64(n)); backlogGauges(d) })
}

// Attempts is a hook's attempt log, every sink, in (sink, attempt) order.
func (d *Dispatcher) Attempts(ctx context.Context, tenant string, id envelope.ID) ([]Attempt, error) {
	ord, seq, err := d.locate(tenant, id)
	if err != nil {
		return nil, err
	}
	out := []Attempt{}
	err = d.meta.HookAttempts(ord, seq, func(sink string, n uint16, a *meta.AttemptRecord) {
		out = append(out, Attempt{Sink: sink, N: int(n), At: time.Unix(0, a.At).UTC(), Status: int(a.Status),
			Latency: time.Duration(a.Latency), Outcome: a.Outcome, Error: a.Error})
	})
	return out, err
}

// deadRow finds a tenant's dead letter by event id and sink.
func (d *Dispatcher) deadRow(tenant string, id envelope.ID, sink string) (meta.RowID, meta.Delivery, error) {
	ord, seq, err := d.locate(tenant, id)
	if err != nil {
		return meta.RowID{}, meta.Delivery{}, err
	}
	rid := meta.RowID{Ord: ord, Seq: seq, Sink: sink}
	row, found, err := d.meta.Row(rid)
	switch {
	case err != nil:
		return rid, row, err
	case !found:
		return rid, row, ErrNoDelivery
	case row.State != meta.RowDead:
		return rid, row, ErrNotDead
	}
	return rid, row, nil
}

// eachDead applies fn to every dead letter of the tenant passing the
// filter, in synced batches, each with the audit row audit makes for it;
// done is told how many each batch held.
func (d *Dispatcher) eachDead(tenant string, f Filter, audit func(n int) meta.AuditRow,
	fn func(*meta.Batch, meta.RowID, *meta.Delivery), done func(uint32, int)) (int, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return 0, nil
	}
	if !d.enter(ord) {
		return 0, ErrTenantErasing
	}
	defer d.leave(ord)
	b := d.meta.NewBatch()
	defer b.Close()
	total, inBatch := 0, 0
	commit := func() error {
		if inBatch == 0 {
			return nil
		}
		if err := addAudit(b, audit(inBatch)); err != nil {
			return err
		}
		if err := b.Commit(meta.Sync); err != nil {
			return fmt.Errorf("cannot change dead letters: %w", err)
		}
		done(ord, inBatch)
		total += inBatch
		inBatch = 0
		b.Reset()
		return nil
	}
	err := d.scanDead(tenant, ord, nil, f, func(r Row, row *meta.Delivery) (bool, error) {
		fn(b, meta.RowID{Ord: ord, Seq: r.Seq, Sink: r.Sink}, row)
		if inBatch++; inBatch >= 1000 {
			return false, commit()
		}
		return false, nil
	})
	if err != nil {
		return total, err
	}
	return total, commit()
}

// addAudit adds an operator change's audit row to its batch; a change
// without one is a bug of the caller.
func addAudit(b *meta.Batch, audit meta.AuditRow) error {
	if audit.Action == "" || audit.At.IsZero() {
		return fmt.Errorf("BUG: dispatch: a dead-letter change without its audit row (%+v)", audit)
	}
	return b.AddAudit(audit)
}

// revive adds to b what makes a dead row pending and due now.
func (d *Dispatcher) revive(b *meta.Batch, id meta.RowID, row *meta.Delivery) {
	now := d.o.Now().UnixNano()
	row.Attempts, row.StartedAt, row.Due = 0, now, now
	b.Revive(id, row)
}

func (d *Dispatcher) revived(ord uint32, n int) {
	d.dead.Add(-int64(n))
	d.pending.Add(int64(n))
	backlogGauges(d)
	d.markActive(ord)
	d.wakeScheduler()
}

func (d *Dispatcher) ordinal(tenant string) (uint32, bool) {
	if d.o.Ordinal == nil {
		return 0, false
	}
	return d.o.Ordinal(tenant)
}

// locate finds a tenant's hook by event id: its ordinal and seq.
func (d *Dispatcher) locate(tenant string, id envelope.ID) (uint32, uint64, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return 0, 0, ErrNoDelivery
	}
	e, err := d.o.Hooks.Fetch(id)
	if err == nil {
		if e.TenantID != tenant {
			return 0, 0, ErrNoDelivery
		}
		return ord, e.Seq, nil
	}
	// The hook's segment may be gone from local disk: its rows still name
	// it.
	var seq uint64
	found := false
	serr := d.meta.TenantRows(ord, func(rid meta.RowID, row *meta.Delivery) bool {
		if row.EventID == id {
			seq, found = rid.Seq, true
		}
		return found
	})
	if serr != nil {
		return 0, 0, serr
	}
	if found {
		return ord, seq, nil
	}
	return 0, 0, fmt.Errorf("%w: %w", ErrNoDelivery, err)
}

func rowOf(tenant string, id meta.RowID, r *meta.Delivery) Row {
	st := State(r.State)
	out := Row{Tenant: tenant, Ordinal: id.Ord, Seq: id.Seq, EventID: r.EventID, Source: r.Source, Sink: id.Sink, State: st,
		Attempts: int(r.Attempts), ReceivedAt: time.Unix(0, r.ReceivedAt).UTC(), LastStatus: int(r.LastStatus), LastError: r.LastError}
	if st == Pending {
		out.Due = time.Unix(0, r.Due).UTC()
	}
	if r.LastAt != 0 {
		out.LastAttemptAt = time.Unix(0, r.LastAt).UTC()
	}
	return out
}
