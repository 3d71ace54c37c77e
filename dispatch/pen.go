package dispatch

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// The quarantine pen (DESIGN.md §6 item 6): a hook that failed
// verification under on_verify_failure: quarantine is a WAL record like
// any other; the row writer holds it here with a pen row (q/<ord><seq>)
// instead of delivery rows, and it is delivered only once an operator
// releases it. The pen owns the rows and the primitives that change them;
// whether a hook may leave (verifying it again) and the audit row that
// records who changed what are the caller's (package admin), passed in.

// Errors of the pen's operator calls.
var (
	// ErrNotQuarantined: the tenant has no such hook in the pen.
	ErrNotQuarantined = errors.New("dispatch: no such quarantined hook")
	// ErrSourceGone: the hook's source no longer exists, so nothing
	// could deliver it (nor verify it again).
	ErrSourceGone = errors.New("dispatch: the hook's source no longer exists")
	// ErrBusy: the hook's pen row is not yet covered by the checkpoint;
	// retry in a moment.
	ErrBusy = errors.New("dispatch: the hook was quarantined a moment ago; retry")
)

// pen is the pen's accounting: rows and body bytes held (the bytes of
// hooks the edge reserved and the writer has not yet written included),
// and the tenants it refuses.
type pen struct {
	rows, bytes atomic.Int64
	closed      sync.Map // tenant name → struct{}
	// mu serialises the operator's changes: two of them must not both
	// see a row and both act on it (a release and a drop of one hook).
	mu sync.Mutex
}

var (
	penRowsGauge  = metrics.NewGauge("ankusa_quarantine_hooks", nil)
	penBytesGauge = metrics.NewGauge("ankusa_quarantine_bytes", nil)
	penReleased   = metrics.NewCounter("ankusa_quarantine_released_total")
	penDropped    = metrics.NewCounter("ankusa_quarantine_dropped_total")
)

func (d *Dispatcher) penGauges() {
	penRowsGauge.Set(float64(d.pen.rows.Load()))
	penBytesGauge.Set(float64(d.pen.bytes.Load()))
}

// loadPen counts the pen's rows and bytes (at Open, after the rebuild).
func (d *Dispatcher) loadPen() error {
	rows, bytes, damaged, err := d.meta.PenSize()
	damagedRows.Add(damaged)
	if err != nil {
		return err
	}
	d.pen.rows.Store(rows)
	d.pen.bytes.Store(bytes)
	d.penGauges()
	return nil
}

// ReservePen takes n bytes of the pen's cap for a quarantined hook of
// tenant, before its commit. closed: the pen refuses the tenant (it is
// being erased).
func (d *Dispatcher) ReservePen(tenant string, n int64) (ok, closed bool) {
	if _, c := d.pen.closed.Load(tenant); c {
		return false, true
	}
	if d.pen.bytes.Add(n) > d.o.MaxPenBytes {
		d.pen.bytes.Add(-n)
		return false, false
	}
	d.penGauges()
	return true, false
}

// UnreservePen gives back a reservation whose hook was not committed.
func (d *Dispatcher) UnreservePen(n int64) {
	d.pen.bytes.Add(-n)
	d.penGauges()
}

// ClosePen makes the pen refuse the tenant's hooks (the erase job closes
// the tenant first); OpenPen undoes it.
func (d *Dispatcher) ClosePen(tenant string) { d.pen.closed.Store(tenant, struct{}{}) }

// OpenPen lets the pen take the tenant's hooks again.
func (d *Dispatcher) OpenPen(tenant string) { d.pen.closed.Delete(tenant) }

// PenItem is one quarantined hook, as the operator sees it.
type PenItem struct {
	Tenant     string
	Source     string
	ID         envelope.ID
	Seq        uint64
	ReceivedAt time.Time
	Bytes      int
	// Failure is why verification failed (missing, malformed, mismatch,
	// expired).
	Failure string
}

func penItem(tenant string, seq uint64, p *meta.PenRow) PenItem {
	return PenItem{Tenant: tenant, Source: p.Source, ID: p.EventID, Seq: seq, ReceivedAt: time.Unix(0, p.ReceivedAt).UTC(),
		Bytes: int(p.Bytes), Failure: envelope.FailureName(p.Failure)}
}

func (f *Filter) matchPen(p *meta.PenRow) bool {
	r := Row{Source: p.Source, ReceivedAt: time.Unix(0, p.ReceivedAt)}
	return f.Match(&r)
}

// Quarantined lists a tenant's quarantined hooks passing the filter, in
// seq order after cursor.
func (d *Dispatcher) Quarantined(_ context.Context, tenant string, f Filter, cursor string, limit int) ([]PenItem, string, error) {
	ord, ok := d.ordinal(tenant)
	if !ok {
		return []PenItem{}, "", nil
	}
	from := uint64(0)
	if cursor != "" {
		c, err := hex.DecodeString(cursor)
		if err != nil || len(c) != 8 {
			return nil, "", ErrBadCursor
		}
		from = binary.BigEndian.Uint64(c) + 1
	}
	items := []PenItem{}
	next := ""
	err := d.scanPen(ord, from, f, func(seq uint64, p *meta.PenRow) bool {
		if len(items) == limit {
			next = hex.EncodeToString(binary.BigEndian.AppendUint64(nil, items[len(items)-1].Seq))
			return true
		}
		items = append(items, penItem(tenant, seq, p))
		return false
	})
	return items, next, err
}

// scanPen calls fn with every pen row of the tenant passing the filter,
// from seq from on, until fn says stop.
func (d *Dispatcher) scanPen(ord uint32, from uint64, f Filter, fn func(seq uint64, p *meta.PenRow) (stop bool)) error {
	damaged, err := d.meta.PenRows(ord, from, func(seq uint64, p *meta.PenRow) bool {
		return f.matchPen(p) && fn(seq, p)
	})
	damagedRows.Add(damaged)
	return err
}

// findPen finds a tenant's pen row by event id.
func (d *Dispatcher) findPen(tenant string, id envelope.ID) (uint32, uint64, meta.PenRow, error) {
	var p meta.PenRow
	ord, ok := d.ordinal(tenant)
	if !ok {
		return 0, 0, p, ErrNotQuarantined
	}
	seq := uint64(0)
	if e, err := d.o.Hooks.Fetch(id); err == nil {
		if e.TenantID != tenant {
			return 0, 0, p, ErrNotQuarantined
		}
		seq = e.Seq
	} else {
		// The hook may be gone from local disk: its pen row still names it.
		err := d.scanPen(ord, 0, Filter{}, func(s uint64, r *meta.PenRow) bool {
			if r.EventID == id {
				seq = s
				return true
			}
			return false
		})
		if err != nil {
			return 0, 0, p, err
		}
		if seq == 0 {
			return 0, 0, p, ErrNotQuarantined
		}
	}
	p, found, err := d.meta.PenRow(ord, seq)
	if err != nil {
		return 0, 0, p, err
	}
	if !found {
		if seq > d.flushed.Load() {
			return 0, 0, p, ErrBusy // committed; its row is on its way
		}
		return 0, 0, p, ErrNotQuarantined
	}
	if p.EventID != id {
		return 0, 0, p, ErrNotQuarantined
	}
	return ord, seq, p, nil
}

// waitCheckpoint waits (briefly) until the checkpoint covers seq: the
// rebuild after a crash recreates only absent rows past the checkpoint,
// so an operator's change to a row it does not yet cover could be undone
// by it.
func (d *Dispatcher) waitCheckpoint(ctx context.Context, seq uint64) error {
	deadline := time.Now().Add(5 * time.Second)
	for d.meta.DurableCheckpoint() < seq {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return ErrBusy
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// ReleaseMode says how a hook leaves the pen; its deliveries carry it
// (the envelope's verification says verified, or flagged).
type ReleaseMode byte

const (
	// ReleaseVerified: the hook verified again, with its source's current
	// secrets at the time it was received.
	ReleaseVerified = ReleaseMode(meta.ReleaseVerified)
	// ReleaseForced: an operator forced it out unverified.
	ReleaseForced = ReleaseMode(meta.ReleaseForced)
)

// Released is what a release did.
type Released struct {
	// Verified: the hook left as ReleaseVerified; otherwise it was forced
	// out and is delivered flagged.
	Verified bool
	// Rows is the number of delivery rows created (the source's sinks).
	Rows int
}

// QuarantinedHook is the tenant's quarantined hook id, as the caller
// deciding on its release sees it. ErrNotQuarantined: the tenant holds no
// such hook (another tenant's is the same); ErrBusy: it was committed a
// moment ago and its pen row is on its way.
func (d *Dispatcher) QuarantinedHook(_ context.Context, tenant string, id envelope.ID) (PenItem, error) {
	_, seq, p, err := d.findPen(tenant, id)
	if err != nil {
		return PenItem{}, err
	}
	return penItem(tenant, seq, &p), nil
}

// Release moves a quarantined hook into normal dispatch, as mode says:
// whether it may leave (verifying it again, or an operator's force) is
// the caller's decision, made before. The pen row goes, one delivery row
// per sink of the hook's source comes, and audit, the caller's record of
// the change, is written with them in one synced batch, once the
// checkpoint covers the pen row (ErrBusy if it does not soon).
// ErrSourceGone: the source no longer exists, so no sink could take it.
func (d *Dispatcher) Release(ctx context.Context, tenant string, id envelope.ID, mode ReleaseMode, audit meta.AuditRow) (Released, error) {
	var out Released
	if mode != ReleaseVerified && mode != ReleaseForced {
		return out, fmt.Errorf("BUG: dispatch: release mode %d", mode)
	}
	done, err := d.enterTenant(tenant)
	if err != nil {
		return out, err
	}
	defer done()
	d.pen.mu.Lock()
	defer d.pen.mu.Unlock()
	ord, seq, p, err := d.findPen(tenant, id)
	if err != nil {
		return out, err
	}
	src := d.o.Sources.Snapshot().Lookup([]byte(p.Source))
	if src == nil {
		return out, ErrSourceGone
	}
	if err := d.waitCheckpoint(ctx, seq); err != nil {
		return out, err
	}
	e, err := d.releasedHook(src, id)
	if err != nil {
		return out, err
	}
	b := d.meta.NewBatch()
	defer b.Close()
	b.DeletePen(ord, seq)
	now := d.o.Now().UnixNano()
	var fh *filter.Hook
	for _, spec := range src.Spec.Sinks {
		if e != nil && !d.filters.takes(src.Name, &spec, e, &fh) {
			continue // its filter does not want the hook: no row (filter.go)
		}
		row := meta.Delivery{ReceivedAt: p.ReceivedAt, StartedAt: now, Due: now, EventID: id, Source: p.Source, Release: byte(mode)}
		b.PutPending(meta.RowID{Ord: ord, Seq: seq, Sink: spec.ID}, &row)
		out.Rows++
	}
	if fh != nil {
		fh.Release()
	}
	if err := d.commitPen(b, audit, 1, int64(p.Bytes)); err != nil {
		return out, fmt.Errorf("cannot release a quarantined hook: %w", err)
	}
	penReleased.Inc()
	out.Verified = mode == ReleaseVerified
	if out.Rows > 0 {
		d.pending.Add(int64(out.Rows))
		backlogGauges(d)
		d.markActive(ord)
		d.wakeScheduler()
	}
	return out, nil
}

// DropQuarantined deletes a quarantined hook's pen row, with audit (the
// caller's record of it) in the same synced batch: it is never delivered.
// The hook stays in the log and the archive like any other.
func (d *Dispatcher) DropQuarantined(ctx context.Context, tenant string, id envelope.ID, audit meta.AuditRow) error {
	done, err := d.enterTenant(tenant)
	if err != nil {
		return err
	}
	defer done()
	d.pen.mu.Lock()
	defer d.pen.mu.Unlock()
	ord, seq, p, err := d.findPen(tenant, id)
	if err != nil {
		return err
	}
	if err := d.waitCheckpoint(ctx, seq); err != nil {
		return err
	}
	b := d.meta.NewBatch()
	defer b.Close()
	b.DeletePen(ord, seq)
	if err := d.commitPen(b, audit, 1, int64(p.Bytes)); err != nil {
		return fmt.Errorf("cannot drop a quarantined hook: %w", err)
	}
	penDropped.Inc()
	return nil
}

// DropAllQuarantined drops every quarantined hook of the tenant passing the
// filter, in synced batches of at most 1000; each batch holds the audit
// row audit(n) makes for its n hooks.
func (d *Dispatcher) DropAllQuarantined(ctx context.Context, tenant string, f Filter, audit func(n int) meta.AuditRow) (int, error) {
	done, err := d.enterTenant(tenant)
	if err != nil {
		return 0, err
	}
	defer done()
	d.pen.mu.Lock()
	defer d.pen.mu.Unlock()
	ord, ok := d.ordinal(tenant)
	if !ok {
		return 0, nil
	}
	var batch []uint64 // seqs
	var bytes int64
	total := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := d.waitCheckpoint(ctx, batch[len(batch)-1]); err != nil {
			return err
		}
		b := d.meta.NewBatch()
		defer b.Close()
		for _, seq := range batch {
			b.DeletePen(ord, seq)
		}
		if err := d.commitPen(b, audit(len(batch)), int64(len(batch)), bytes); err != nil {
			return fmt.Errorf("cannot drop quarantined hooks: %w", err)
		}
		penDropped.Add(len(batch))
		total += len(batch)
		batch, bytes = batch[:0], 0
		return nil
	}
	var ferr error
	err = d.scanPen(ord, 0, f, func(seq uint64, p *meta.PenRow) bool {
		batch, bytes = append(batch, seq), bytes+int64(p.Bytes)
		if len(batch) >= 1000 {
			ferr = flush()
			return ferr != nil
		}
		return false
	})
	if err == nil {
		err = ferr
	}
	if err == nil {
		err = flush()
	}
	return total, err
}

// commitPen adds audit to b, which deletes n pen rows holding bytes body
// bytes, commits it synced, and takes the rows off the pen's accounting.
// Every change to the pen is an operator's, so none goes without its
// audit row.
func (d *Dispatcher) commitPen(b *meta.Batch, audit meta.AuditRow, n, bytes int64) error {
	if audit.Action == "" || audit.At.IsZero() {
		return fmt.Errorf("BUG: dispatch: a pen change without its audit row (%+v)", audit)
	}
	if err := b.AddAudit(audit); err != nil {
		return err
	}
	if err := b.Commit(meta.Sync); err != nil {
		return err
	}
	d.pen.rows.Add(-n)
	d.pen.bytes.Add(-bytes)
	d.penGauges()
	return nil
}

// releasedHook reads a quarantined hook back for its source's sink
// filters; nil when no sink of src has one (nothing to read).
func (d *Dispatcher) releasedHook(src *source.Source, id envelope.ID) (*envelope.Envelope, error) {
	for i := range src.Spec.Sinks {
		if src.Spec.Sinks[i].Filter != "" {
			e, err := d.o.Hooks.Fetch(id)
			if err != nil {
				return nil, fmt.Errorf("cannot read the quarantined hook %s for its sinks' filters: %w", id, err)
			}
			return e, nil
		}
	}
	return nil, nil
}
