package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/envelope"
	backoffpkg "github.com/ankusa/ankusa/internal/backoff"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// Attempt outcomes, as the attempt log and the metrics name them.
const (
	outDelivered   = "delivered"
	outRetry       = "retry"
	outDead        = "dead"
	outCircuitOpen = "circuit_open"
)

// attempt runs one attempt of t and records its outcome in the row.
func (d *Dispatcher) attempt(r *runner, t *task) {
	defer d.finish(t)
	now := d.o.Now()
	env := t.env
	if env == nil {
		var err error
		if env, err = d.o.Hooks.Fetch(t.row.EventID); err != nil {
			d.unreadable(r, t, now, err)
			return
		}
	}
	if t.row.Release != 0 {
		// Released from the quarantine pen: delivered as verified, or,
		// forced out, as flagged (never as the quarantined record says).
		released := *env
		released.Verification.Quarantined = false
		released.Verification.Verified = t.row.Release == meta.ReleaseVerified
		released.Verification.Flagged = t.row.Release == meta.ReleaseForced
		env = &released
	}
	target := r.source
	if tg, ok := r.sink.(Targeter); ok {
		target = tg.Target(env)
	}
	r.mu.Lock()
	ok, probe, until := r.breaker(target).allow(now)
	r.mu.Unlock()
	if !ok {
		r.circuit.Inc()
		why := fmt.Sprintf("circuit open for %s after repeated failures; next probe at %s", target, until.UTC().Format(time.RFC3339))
		if now.Sub(time.Unix(0, t.row.StartedAt)) >= time.Duration(r.spec.MaxAge) {
			d.record(r, t, env, now, 0, 0, &Error{Err: errors.New(why)})
			return
		}
		d.reschedule(t, until.Add(backoffpkg.Full(0, time.Second, time.Second)), why)
		return
	}
	// The sinks bound an attempt by the spec's timeout themselves; a
	// context that is never cancelled lets the HTTP sink run the request
	// on this goroutine instead of a watcher's.
	dl := Delivery{Envelope: env, Attempt: int(t.row.Attempts) + 1, SinkID: t.id.Sink}
	err := r.sink.Deliver(context.Background(), &dl)
	end := d.o.Now()
	latency := end.Sub(now)
	var e *Error
	status := dl.Status
	if err != nil {
		e = AsError(err)
		if e.Status == 0 {
			e.Status = status
		}
		status = e.Status
	}
	r.mu.Lock()
	b := r.breaker(target)
	// Only a target that does not answer opens the breaker: one that
	// answers 5xx or 429 costs an answer, and backoff paces it.
	if b.record(end, e != nil && !e.Permanent && e.Status == 0 && !e.Answered, probe) {
		d.o.Logger.Warn("circuit opened: deliveries to a target that does not answer pause", zap.String("sink", r.name), zap.String("target", target), zap.Time("until", b.until))
	}
	if b.idle() {
		delete(r.breakers, target)
	}
	r.mu.Unlock()
	d.record(r, t, env, end, latency, status, e)
}

// record writes an attempt's outcome: delivered rows are deleted, failed
// ones rescheduled with backoff or dead-lettered.
func (d *Dispatcher) record(r *runner, t *task, env *envelope.Envelope, now time.Time, latency time.Duration, status int, e *Error) {
	if d.isClosed(t.id.Ord) {
		// The tenant was closed while the attempt ran: its rows are
		// being erased, and this outcome would write one back.
		closedSkips.Inc()
		return
	}
	row := t.row
	n := row.Attempts + 1
	row.Attempts, row.LastAt, row.LastStatus = n, now.UnixNano(), uint16(status)
	outcome := outDelivered
	b := d.meta.NewBatch()
	defer b.Close()
	oldDue := row.Due
	switch {
	case e == nil && t.first && n == 1 && !d.o.SeqsReused:
		// The row writer wrote this row once and held it for this
		// attempt since: nothing else wrote it (source_rows.go marks a
		// held row instead), and its key names no lost hook's row
		// (SeqsReused).
		row.LastError = ""
		b.DeleteFreshPending(t.id, oldDue)
	case e == nil:
		row.LastError = ""
		b.DeletePending(t.id, oldDue)
	case e.Permanent || int(n) >= r.spec.MaxAttempts || now.Sub(time.Unix(0, row.StartedAt)) >= time.Duration(r.spec.MaxAge):
		outcome = outDead
		row.LastError = deadReason(e, int(n), r)
		b.PutDead(t.id, oldDue, &row)
	default:
		outcome = outRetry
		row.LastError = e.Error()
		row.Due = now.Add(backoff(r, int(n), e.RetryAfter)).UnixNano()
		b.MovePending(t.id, oldDue, &row)
	}
	a := meta.AttemptRecord{At: now.Add(-latency).UnixNano(), Latency: int64(latency), Status: uint16(status), Outcome: outcome, Error: row.LastError}
	b.PutAttempt(t.id, n, &a)
	if err := b.Commit(meta.NoSync); err != nil {
		d.fatal(fmt.Errorf("cannot record a delivery attempt: %w", err))
		return
	}
	t.settled = true
	switch outcome {
	case outDelivered:
		r.delivered.Inc()
		d.pending.Add(-1)
		deliverySeconds.Update(now.Sub(time.Unix(0, env.ReceivedAt)).Seconds())
	case outRetry:
		r.retried.Inc()
		t.requeued = row.Due // finish marks the tenant active once it lets go
	case outDead:
		r.deadened.Inc()
		deadTotal.Inc()
		d.pending.Add(-1)
		d.dead.Add(1)
		d.o.Logger.Warn("dead letter", zap.String("sink", r.name), zap.String("tenant", env.TenantID),
			zap.Stringer("event_id", env.ID), zap.Int("attempts", int(n)), zap.String("error", row.LastError))
	}
	backlogGauges(d)
}

func deadReason(e *Error, n int, r *runner) string {
	switch {
	case e.Permanent:
		return e.Error()
	case n >= r.spec.MaxAttempts:
		return fmt.Sprintf("%s (gave up after max_attempts=%d)", e.Error(), r.spec.MaxAttempts)
	default:
		return fmt.Sprintf("%s (gave up: older than max_age=%s)", e.Error(), time.Duration(r.spec.MaxAge))
	}
}

// unreadable handles a hook that cannot be read back: gone from this node
// or damaged is a dead letter (nothing will bring it back by waiting); any
// other read error is retried.
func (d *Dispatcher) unreadable(r *runner, t *task, now time.Time, err error) {
	e := &Error{Err: fmt.Errorf("cannot read the hook back from the store: %w", err)}
	var ce *segment.CorruptError
	if errors.Is(err, segment.ErrNotFound) || errors.Is(err, segment.ErrRemoved) || errors.As(err, &ce) {
		e.Permanent = true
	}
	d.o.Logger.Error("cannot read a hook for delivery", zap.String("sink", r.name), zap.Uint64("seq", t.id.Seq), zap.Error(err))
	d.record(r, t, &envelope.Envelope{ID: t.row.EventID, ReceivedAt: t.row.ReceivedAt}, now, 0, 0, e)
}

// reschedule moves a pending row to due without counting an attempt (the
// circuit is open).
func (d *Dispatcher) reschedule(t *task, due time.Time, why string) {
	if d.isClosed(t.id.Ord) {
		closedSkips.Inc()
		return
	}
	row := t.row
	b := d.meta.NewBatch()
	defer b.Close()
	oldDue := row.Due
	row.Due, row.LastError = due.UnixNano(), why
	b.MovePending(t.id, oldDue, &row)
	if err := b.Commit(meta.NoSync); err != nil {
		d.fatal(fmt.Errorf("cannot reschedule a delivery: %w", err))
		return
	}
	t.settled, t.requeued = true, row.Due // finish marks the tenant active once it lets go
}

// backoff is the wait before attempt n+1: full jitter over an exponential
// ceiling, and never before the target's own Retry-After.
func backoff(r *runner, n int, retryAfter time.Duration) time.Duration {
	return max(backoffpkg.Full(n-1, time.Duration(r.spec.RetryBase), time.Duration(r.spec.RetryMax)), retryAfter)
}
