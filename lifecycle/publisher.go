package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/backoff"
	"github.com/ankusa/ankusa/meta"
)

// SourceID is the source name an event's delivery carries (the sink's
// x-ankusa-source header, {source_id} in its templates).
const SourceID = "lifecycle"

// readAhead is how many events the publisher reads from the outbox at
// once.
const readAhead = 256

// Options configure the node's lifecycle events.
type Options struct {
	Store *meta.Store
	// Node is node.name: the events' source.
	Node string
	// Sink delivers the events; nil: the node keeps its outbox for replay
	// and publishes nothing.
	Sink dispatch.Sink
	// Spec is the sink's config (retry_base, retry_max), defaults applied.
	Spec config.Sink
	// Retain is how long an event is kept (lifecycle.retain): older ones
	// are swept once published.
	Retain time.Duration
	// SweepEvery is how often the outbox is swept; default 10 minutes.
	SweepEvery time.Duration
	Log        *zap.Logger
	// Now is the clock of the sweep and of the lag; default time.Now.
	Now func() time.Time
}

// Lifecycle is the node's lifecycle events: the publisher (with a sink),
// the sweep, replay and the replacement of a tenant's events.
type Lifecycle struct {
	o Options
	// published is the publisher's checkpoint as last moved.
	published atomic.Uint64
	// pendingAt is the time (unix ns) of the oldest event not yet
	// acknowledged by the sink, 0 when the publisher has caught up.
	pendingAt atomic.Int64
	done      chan struct{}
}

// The publisher's metrics.
var (
	publishedTotal  = metrics.NewCounter(`ankusa_lifecycle_events_published_total`)
	publishFailures = metrics.NewCounter(`ankusa_lifecycle_publish_failures_total`)
	damagedTotal    = metrics.NewCounter(`ankusa_lifecycle_events_damaged_total`)
	current         atomic.Pointer[Lifecycle]
	_               = metrics.NewGauge(`ankusa_lifecycle_lag_events`, func() float64 {
		if l := current.Load(); l != nil {
			return float64(l.LagEvents())
		}
		return 0
	})
	_ = metrics.NewGauge(`ankusa_lifecycle_lag_seconds`, func() float64 {
		if l := current.Load(); l != nil {
			return l.LagSeconds()
		}
		return 0
	})
)

// New reads the publisher's checkpoint. Start runs it.
func New(o Options) (*Lifecycle, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 10 * time.Minute
	}
	if o.Retain <= 0 {
		o.Retain = config.DefaultLifecycleRetain
	}
	l := &Lifecycle{o: o, done: make(chan struct{})}
	cp, err := o.Store.EventsPublished()
	if err != nil {
		return nil, err
	}
	l.published.Store(cp)
	current.Store(l)
	return l, nil
}

// Publishing reports whether the node has a lifecycle sink.
func (l *Lifecycle) Publishing() bool { return l.o.Sink != nil }

// Published is the publisher's checkpoint: every event up to this seq was
// acknowledged by the sink.
func (l *Lifecycle) Published() uint64 { return l.published.Load() }

// LagEvents is how many durable events the sink has not acknowledged (0
// without a sink).
func (l *Lifecycle) LagEvents() uint64 {
	if l.o.Sink == nil {
		return 0
	}
	d, p := l.o.Store.EventsDurable(), l.published.Load()
	if d < p {
		return 0
	}
	return d - p
}

// LagSeconds is the age of the oldest event the sink has not acknowledged
// (0 when it has them all, or without a sink).
func (l *Lifecycle) LagSeconds() float64 {
	at := l.pendingAt.Load()
	if at == 0 || l.LagEvents() == 0 {
		return 0
	}
	return max(l.o.Now().Sub(time.Unix(0, at)).Seconds(), 0)
}

// Run publishes (with a sink) and sweeps the outbox until ctx is done.
func (l *Lifecycle) Run(ctx context.Context) {
	defer close(l.done)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		l.sweepLoop(ctx)
	}()
	defer func() { <-swept }() // a sweep in progress ends before the store may close
	if l.o.Sink == nil {
		<-ctx.Done()
		return
	}
	for ctx.Err() == nil {
		wake := l.o.Store.EventsWake()
		n, err := l.publishSome(ctx)
		if err != nil && ctx.Err() == nil {
			l.o.Log.Error("cannot read the lifecycle outbox; trying again in a second", zap.Error(err))
			sleep(ctx, time.Second)
			continue
		}
		if n > 0 {
			continue
		}
		l.pendingAt.Store(0)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-time.After(time.Second):
		}
	}
}

// Done is closed when Run has returned: nothing of it runs any more.
func (l *Lifecycle) Done() <-chan struct{} { return l.done }

// publishSome sends the next events after the checkpoint, up to
// readAhead, and returns how many it sent.
func (l *Lifecycle) publishSome(ctx context.Context) (int, error) {
	var batch []meta.EventRecord
	cp := l.published.Load()
	upTo := min(l.o.Store.EventsDurable(), cp+readAhead)
	err := l.o.Store.Events(cp, upTo, func(ev *meta.EventRecord) (bool, error) {
		batch = append(batch, *ev)
		return false, nil
	})
	var bad *meta.BadEventError
	if errors.As(err, &bad) {
		// A record that does not decode cannot be sent; holding the
		// outbox behind it would stop every later event for good. The
		// events before it go first, then the publisher steps over it,
		// counted and named in the log.
		upTo = bad.Seq
	} else if err != nil {
		return 0, err
	}
	if len(batch) == 0 && upTo > cp && bad == nil {
		// A swept or replaced stretch: nothing in it to send.
		return 1, l.advance(upTo)
	}
	for i := range batch {
		ev := &batch[i]
		l.pendingAt.Store(ev.Time.UnixNano())
		if err := l.deliver(ctx, ev); err != nil {
			return i, nil // ctx is done
		}
		publishedTotal.Inc()
		if err := l.advance(ev.Seq); err != nil {
			return i + 1, err
		}
	}
	if bad != nil {
		damagedTotal.Inc()
		l.o.Log.Error("a lifecycle event in the outbox does not decode; the publisher steps over it (it cannot be sent)",
			zap.Uint64("seq", bad.Seq), zap.Error(bad.Err))
		return len(batch) + 1, l.advance(bad.Seq)
	}
	return len(batch), nil
}

// advance moves the checkpoint to seq.
func (l *Lifecycle) advance(seq uint64) error {
	if err := l.o.Store.SetEventsPublished(seq); err != nil {
		return fmt.Errorf("cannot move the lifecycle publisher's checkpoint: %w", err)
	}
	l.published.Store(seq)
	return nil
}

// deliver sends ev until the sink acknowledges it, waiting between
// attempts as dispatch does; it fails only when ctx is done.
func (l *Lifecycle) deliver(ctx context.Context, ev *meta.EventRecord) error {
	body := Render(ev, l.o.Node)
	env := &envelope.Envelope{
		ID: ev.ID, TenantID: ev.Tenant, SourceID: SourceID, ReceivedAt: ev.Time.UnixNano(),
		Headers: []envelope.Header{{Name: "Content-Type", Value: ContentType}}, Body: body,
		Verification: envelope.Verification{Verifier: "none", Verified: true},
	}
	for attempt := 1; ; attempt++ {
		d := &dispatch.Delivery{Envelope: env, Attempt: attempt, SinkID: SourceID}
		err := l.o.Sink.Deliver(ctx, d)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		publishFailures.Inc()
		e := dispatch.AsError(err)
		wait := max(backoff.Full(attempt-1, time.Duration(l.o.Spec.RetryBase), time.Duration(l.o.Spec.RetryMax)), e.RetryAfter)
		if attempt == 1 || attempt%10 == 0 || e.Permanent {
			l.o.Log.Warn("the lifecycle sink refused an event; sending it again (the publisher never skips one)",
				zap.String("id", ev.ID.String()), zap.String("type", ev.Type), zap.Int("attempt", attempt),
				zap.Int("status", e.Status), zap.Duration("next_in", wait), zap.Error(err))
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sweepLimit bounds the events one sweep step looks at.
const sweepLimit = 10000

// sweepLoop sweeps the outbox a minute after the start, then every
// SweepEvery.
func (l *Lifecycle) sweepLoop(ctx context.Context) {
	wait := min(time.Minute, l.o.SweepEvery)
	for sleep(ctx, wait) {
		wait = l.o.SweepEvery
		if _, err := l.Sweep(); err != nil {
			l.o.Log.Error("cannot sweep the lifecycle outbox; trying again later", zap.Error(err))
		}
	}
}

// Sweep deletes the events older than lifecycle.retain that the sink has
// acknowledged (every one older, without a sink); it returns how many.
func (l *Lifecycle) Sweep() (int, error) {
	upTo := l.o.Store.EventsDurable()
	if l.o.Sink != nil {
		upTo = l.published.Load()
	}
	before := l.o.Now().Add(-l.o.Retain)
	total := 0
	for {
		n, err := l.o.Store.SweepEvents(before, upTo, sweepLimit)
		total += n
		if err != nil || n < sweepLimit {
			return total, err
		}
	}
}

// ErrNotPublished: WaitTenantPublished was stopped while the sink had
// not yet acknowledged the tenant's events.
var ErrNotPublished = errors.New("lifecycle: the tenant's events are not all published yet")

// WaitTenantPublished waits until the publisher has passed every event of
// tenant in the outbox (at once without a lifecycle sink: the outbox is
// the replay then) and returns the last one's seq: the erase deletes the
// tenant's events up to it (meta.Store.DeleteTenantEvents) once the
// tenant is closed and no change of it is written any more. ctx done
// first: ErrNotPublished.
func (l *Lifecycle) WaitTenantPublished(ctx context.Context, tenant string) (uint64, error) {
	upTo, err := l.o.Store.LastTenantEvent(tenant)
	if err != nil {
		return 0, err
	}
	for l.o.Sink != nil && l.published.Load() < upTo {
		if !sleep(ctx, 50*time.Millisecond) {
			return 0, fmt.Errorf("%w (%d of them wait for the lifecycle sink)", ErrNotPublished, upTo-l.published.Load())
		}
	}
	return upTo, nil
}
