package dispatch

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

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

// Operator calls resolve tenant names with Options.Ordinal.

// Dead lists a tenant's dead letters in (seq, sink) order after cursor.
func (d *Dispatcher) Dead(_ context.Context, tenant string, f Filter, cursor string, limit int) ([]Row, string, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return nil, "", nil
	}
	prefix := meta.TenantPrefix(meta.PrefixDead, ord)
	lo := prefix
	if cursor != "" {
		c, err := hex.DecodeString(cursor)
		if err != nil || len(c) < 9 {
			return nil, "", ErrBadCursor
		}
		lo = append(append([]byte(nil), prefix...), c...)
		lo = append(lo, 0) // just after the cursor's key
	}
	var rows []Row
	next := ""
	err := d.scanDead(tenant, ord, lo, f, func(r Row, _ meta.Delivery) (bool, error) {
		if len(rows) == limit {
			last := rows[len(rows)-1]
			next = hex.EncodeToString(meta.DeadKey(nil, ord, last.Seq, last.Sink)[len(prefix):])
			return true, nil
		}
		rows = append(rows, r)
		return false, nil
	})
	return rows, next, err
}

// scanDead calls fn with every dead letter of the tenant passing the
// filter, from key lo of the dead-letter index on, in (seq, sink) order,
// until fn says stop.
func (d *Dispatcher) scanDead(tenant string, ord uint32, lo []byte, f Filter, fn func(Row, meta.Delivery) (stop bool, err error)) error {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: meta.PrefixEnd(meta.TenantPrefix(meta.PrefixDead, ord))})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		_, seq, sink, kok := meta.ParseRowKey(it.Key())
		if !kok {
			continue
		}
		row, found, err := d.readRow(ord, seq, sink)
		if err != nil {
			return err
		}
		if !found || row.State != meta.RowDead {
			continue
		}
		r := rowOf(tenant, ord, seq, sink, &row)
		if !f.Match(&r) {
			continue
		}
		if stop, err := fn(r, row); stop || err != nil {
			return err
		}
	}
	return it.Error()
}

// Retry makes one dead letter pending again, due now, with its attempt
// count and max_age clock reset (a synced write).
func (d *Dispatcher) Retry(ctx context.Context, tenant string, id envelope.ID, sink string) error {
	ord, seq, row, err := d.deadRow(tenant, id, sink)
	if err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	d.revive(b, ord, seq, sink, row)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot retry a dead letter: %w", err)
	}
	d.revived(ord, 1)
	return nil
}

// RetryAll retries every dead letter of the tenant passing the filter.
func (d *Dispatcher) RetryAll(ctx context.Context, tenant string, f Filter) (int, error) {
	return d.eachDead(tenant, f, func(b *pebble.Batch, ord uint32, seq uint64, sink string, row meta.Delivery) {
		d.revive(b, ord, seq, sink, row)
	}, func(ord uint32, n int) { d.revived(ord, n) })
}

// Drop deletes one dead letter (a synced write); its attempt log stays
// until it ages out.
func (d *Dispatcher) Drop(ctx context.Context, tenant string, id envelope.ID, sink string) error {
	ord, seq, _, err := d.deadRow(tenant, id, sink)
	if err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	_ = b.Delete(meta.RowKey(nil, ord, seq, sink), nil)
	_ = b.Delete(meta.DeadKey(nil, ord, seq, sink), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot drop a dead letter: %w", err)
	}
	d.dead.Add(-1)
	backlogGauges(d)
	return nil
}

// DropAll drops every dead letter of the tenant passing the filter.
func (d *Dispatcher) DropAll(ctx context.Context, tenant string, f Filter) (int, error) {
	return d.eachDead(tenant, f, func(b *pebble.Batch, ord uint32, seq uint64, sink string, _ meta.Delivery) {
		_ = b.Delete(meta.RowKey(nil, ord, seq, sink), nil)
		_ = b.Delete(meta.DeadKey(nil, ord, seq, sink), nil)
	}, func(_ uint32, n int) { d.dead.Add(-int64(n)); backlogGauges(d) })
}

// Attempts is a hook's attempt log, every sink, in (sink, attempt) order.
func (d *Dispatcher) Attempts(ctx context.Context, tenant string, id envelope.ID) ([]Attempt, error) {
	ord, seq, err := d.locate(tenant, id)
	if err != nil {
		return nil, err
	}
	p := meta.HookPrefix(meta.PrefixAttempt, ord, seq)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: meta.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	out := []Attempt{}
	for ok := it.First(); ok; ok = it.Next() {
		_, _, sink, n, kok := meta.ParseAttemptKey(it.Key())
		var a meta.AttemptRecord
		if !kok || meta.DecodeAttempt(it.Value(), &a) != nil {
			continue
		}
		out = append(out, Attempt{Sink: sink, N: int(n), At: time.Unix(0, a.At).UTC(), Status: int(a.Status),
			Latency: time.Duration(a.Latency), Outcome: a.Outcome, Error: a.Error})
	}
	return out, it.Error()
}

// deadRow finds a tenant's dead letter by event id and sink.
func (d *Dispatcher) deadRow(tenant string, id envelope.ID, sink string) (uint32, uint64, meta.Delivery, error) {
	ord, seq, err := d.locate(tenant, id)
	if err != nil {
		return 0, 0, meta.Delivery{}, err
	}
	row, found, err := d.readRow(ord, seq, sink)
	switch {
	case err != nil:
		return 0, 0, row, err
	case !found:
		return 0, 0, row, ErrNoDelivery
	case row.State != meta.RowDead:
		return 0, 0, row, ErrNotDead
	}
	return ord, seq, row, nil
}

// eachDead applies fn to every dead letter of the tenant passing the
// filter, in synced batches; done is told how many each batch held.
func (d *Dispatcher) eachDead(tenant string, f Filter, fn func(*pebble.Batch, uint32, uint64, string, meta.Delivery), done func(uint32, int)) (int, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return 0, nil
	}
	b := d.db.NewBatch()
	defer b.Close()
	total, inBatch := 0, 0
	commit := func() error {
		if inBatch == 0 {
			return nil
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("cannot change dead letters: %w", err)
		}
		done(ord, inBatch)
		total += inBatch
		inBatch = 0
		b.Reset()
		return nil
	}
	err := d.scanDead(tenant, ord, meta.TenantPrefix(meta.PrefixDead, ord), f, func(r Row, row meta.Delivery) (bool, error) {
		fn(b, ord, r.Seq, r.Sink, row)
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

// revive adds to b what makes a dead row pending and due now.
func (d *Dispatcher) revive(b *pebble.Batch, ord uint32, seq uint64, sink string, row meta.Delivery) {
	now := d.o.Now().UnixNano()
	row.State, row.Attempts, row.StartedAt, row.Due = meta.RowPending, 0, now, now
	_ = b.Set(meta.RowKey(nil, ord, seq, sink), row.AppendTo(nil), nil)
	_ = b.Delete(meta.DeadKey(nil, ord, seq, sink), nil)
	_ = b.Set(meta.DueKey(nil, ord, now, seq, sink), nil, nil)
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
	p := meta.TenantPrefix(meta.PrefixRow, ord)
	it, ierr := d.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: meta.PrefixEnd(p)})
	if ierr != nil {
		return 0, 0, ierr
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var row meta.Delivery
		if meta.DecodeDelivery(it.Value(), &row) == nil && row.EventID == id {
			_, seq, _, _ := meta.ParseRowKey(it.Key())
			return ord, seq, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: %w", ErrNoDelivery, err)
}

func (d *Dispatcher) readRow(ord uint32, seq uint64, sink string) (meta.Delivery, bool, error) {
	var row meta.Delivery
	v, closer, err := d.db.Get(meta.RowKey(nil, ord, seq, sink))
	if errors.Is(err, pebble.ErrNotFound) {
		return row, false, nil
	}
	if err != nil {
		return row, false, fmt.Errorf("cannot read a delivery row: %w", err)
	}
	defer closer.Close()
	if err := meta.DecodeDelivery(v, &row); err != nil {
		return row, false, err
	}
	return row, true, nil
}

func rowOf(tenant string, ord uint32, seq uint64, sink string, r *meta.Delivery) Row {
	st := State(r.State)
	out := Row{Tenant: tenant, Ordinal: ord, Seq: seq, EventID: r.EventID, Source: r.Source, Sink: sink, State: st,
		Attempts: int(r.Attempts), ReceivedAt: time.Unix(0, r.ReceivedAt).UTC(), LastStatus: int(r.LastStatus), LastError: r.LastError}
	if st == Pending {
		out.Due = time.Unix(0, r.Due).UTC()
	}
	if r.LastAt != 0 {
		out.LastAttemptAt = time.Unix(0, r.LastAt).UTC()
	}
	return out
}
