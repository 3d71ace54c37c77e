package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// Direct is the commit step of wal.type: none (DESIGN.md §2.4): there is no
// log to retry from, so a hook is acknowledged only once every sink of its
// source has taken it, and at least one of them is durable (its ok means
// the hook is safe there). Sinks whose filter does not take the hook are
// not attempted and not waited for (deliverAll). Any failure answers 503 and the provider's own
// retry is the retry. A source without a durable sink is refused at boot;
// one that arrives anyway (a stored source) is ErrNoDurableSink, a 503,
// until it is updated.
type Direct struct {
	o DirectOptions
	// num gives each hook its identity: the commit loop's allocator,
	// with the reserved floors of wal.type: none (wal.Reserved).
	num *wal.Reserved

	rmu   sync.Mutex
	sinks map[string]*directSink // by source/sink id

	filters *sinkFilters // sinks[].filter (filter.go)
}

// directSink is a cached sink with the spec it was built from: an edit
// that changes the spec replaces it (the old one closes once the hooks
// it is delivering are done), one that does not keeps it.
type directSink struct {
	sink    Sink
	spec    config.Sink
	src     *source.Source // the snapshot's source it was last checked against
	refs    int            // deliveries running on it
	retired bool
}

// DirectOptions configure Direct.
type DirectOptions struct {
	Meta    *meta.Store
	Sources source.Store
	NewSink func(source string, spec config.Sink) (Sink, error)
	Node    uint16
	// MaxTenants caps the tenant ordinals (tenants.max; 0: no cap).
	MaxTenants int
	Logger     *zap.Logger
	Now        func() time.Time
}

// OpenDirect starts numbering above what the meta store recorded (the
// reserved floor after a crash, the last numbers after a clean stop).
func OpenDirect(o DirectOptions) (*Direct, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	num, err := wal.OpenReserved(o.Meta, o.Node, o.MaxTenants)
	if err != nil {
		return nil, err
	}
	return &Direct{o: o, num: num, sinks: map[string]*directSink{}, filters: newSinkFilters(o.Logger, o.Now)}, nil
}

// Commit delivers the record in r to every sink of its source, then fills
// in r's Seq, ID and Ordinal. It implements the edge's commit step.
func (c *Direct) Commit(r *wal.Request) error {
	payload := r.Buf[wal.FrameHeaderSize:]
	var e envelope.Envelope
	if _, err := envelope.Decode(payload, &e); err != nil {
		return fmt.Errorf("BUG: an edge record does not decode: %w", err)
	}
	src := c.o.Sources.Snapshot().Lookup([]byte(e.SourceID))
	if src == nil || !hasDurable(src.Spec.Sinks) {
		return source.ErrNoDurableSink
	}
	if err := c.number(&e); err != nil {
		return err
	}
	if err := c.deliverAll(src, &e); err != nil {
		return err
	}
	r.Seq, r.ID, r.Ordinal = e.Seq, e.ID, e.TenantOrdinal
	return nil
}

// number gives e its seq, event id and tenant ordinal.
func (c *Direct) number(e *envelope.Envelope) (err error) {
	e.Seq, e.ID, e.TenantOrdinal, err = c.num.Assign(e.TenantID, uint64(c.o.Now().UnixMilli()))
	return err
}

// Ordinal returns a tenant's ordinal, if it has one.
func (c *Direct) Ordinal(tenant string) (uint32, bool) { return c.num.Ordinal(tenant) }

// TenantsFull reports whether a new tenant would be refused (tenants.max).
// Erased tenants count: ordinals are never reused.
func (c *Direct) TenantsFull() bool { return c.num.TenantsFull() }

// ForgetTenant makes name stop naming ordinal ord, if it still does (the
// tenant's erase): its next hook is a new tenant's, with a new ordinal
// written, synced, to the tenant mirror before it is given. ord is never
// given again, at the next boot either: the numbering floor is above
// every ordinal a tombstone names (wal.ReadFloor).
func (c *Direct) ForgetTenant(name string, ord uint32) { c.num.ForgetTenant(name, ord) }

// LastSeq is the last seq given to a hook (the erase's seq_at_close).
func (c *Direct) LastSeq() uint64 { return c.num.LastSeq() }

func hasDurable(sinks []config.Sink) bool {
	for i := range sinks {
		if sinks[i].Durable() {
			return true
		}
	}
	return false
}

// deliverAll attempts every sink whose filter takes the hook at once and
// waits for all of them. A hook no filter takes is acknowledged with
// nothing delivered: the operator's filters said no sink wants it, and a
// 503 would only have the provider send it again for ever. Likewise one
// only non-durable sinks take is safe once they have it.
func (c *Direct) deliverAll(src *source.Source, e *envelope.Envelope) error {
	errs := make([]error, len(src.Spec.Sinks))
	var wg sync.WaitGroup
	var fh *filter.Hook
	for i, spec := range src.Spec.Sinks {
		if !c.filters.takes(src.Name, &spec, e, &fh) {
			continue
		}
		ds, err := c.acquire(src, spec)
		if err != nil {
			errs[i] = err
			continue
		}
		sk := ds.sink
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.release(ds)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(spec.ConnectTimeout+spec.Timeout))
			defer cancel()
			if err := sk.Deliver(ctx, &Delivery{Envelope: e, Attempt: 1, SinkID: spec.ID}); err != nil {
				errs[i] = fmt.Errorf("sink %s of source %q: %w", spec.ID, src.Name, err)
			}
		}()
	}
	if fh != nil {
		fh.Release() // every filter has run; the deliveries do not read it
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err != nil {
		directFailures.Inc()
		c.o.Logger.Warn("a hook was refused (503): a sink did not take it and there is no WAL to retry from", zap.String("source", src.Name), zap.Error(err))
	}
	return err
}

// acquire returns the cached sink for spec, a sink of src (the current
// snapshot's), building it when there is none or its spec changed; the
// caller releases it when its delivery is done.
func (c *Direct) acquire(src *source.Source, spec config.Sink) (*directSink, error) {
	key := src.Name + "/" + spec.ID
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if e := c.sinks[key]; e != nil && (e.src == src || sameSink(&e.spec, &spec)) {
		e.src = src
		e.refs++
		return e, nil
	}
	s, err := c.o.NewSink(src.Name, spec)
	if err != nil {
		return nil, fmt.Errorf("cannot build sink %s of source %q: %w", spec.ID, src.Name, err)
	}
	if e := c.sinks[key]; e != nil {
		c.retireLocked(key, e)
	}
	e := &directSink{sink: s, spec: spec, src: src, refs: 1}
	c.sinks[key] = e
	return e, nil
}

// release ends one delivery on e; the last one on a retired sink closes it.
func (c *Direct) release(e *directSink) {
	c.rmu.Lock()
	e.refs--
	closeNow := e.retired && e.refs == 0
	c.rmu.Unlock()
	if closeNow {
		c.closeSink(e)
	}
}

// retireLocked takes e out of the cache (under rmu); it is closed now if
// idle, else by its last delivery. An idle sink's Close runs on its own
// goroutine, not under rmu, which every delivery takes.
func (c *Direct) retireLocked(key string, e *directSink) {
	delete(c.sinks, key)
	e.retired = true
	if e.refs == 0 {
		go c.closeSink(e)
	}
}

func (c *Direct) closeSink(e *directSink) {
	if err := e.sink.Close(); err != nil {
		c.o.Logger.Warn("cannot close a retired sink", zap.String("source", e.src.Name), zap.String("sink", e.spec.ID), zap.Error(err))
	}
	sinksRetired.Inc()
}

// SourcesChanged tells Direct the source store published a new snapshot:
// the cached sinks of sources or sinks it no longer has, or whose spec
// changed, are retired (closed once their deliveries are done). Without
// it a delivery still uses the current spec (acquire checks); this only
// lets go of connections sooner. It walks the cache, which holds only
// sinks that delivered something, never the snapshot's sources: one
// lookup per cached sink, under the lock deliveries take.
func (c *Direct) SourcesChanged() {
	snap := c.o.Sources.Snapshot()
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for key, e := range c.sinks {
		cur := snap.Lookup([]byte(e.src.Name))
		if cur == e.src {
			continue
		}
		if spec, ok := sinkSpec(cur, e.spec.ID); ok && sameSink(&e.spec, &spec) {
			e.src = cur
			continue
		}
		c.retireLocked(key, e)
	}
}

// Close records the numbering floor and closes the sinks.
func (c *Direct) Close() error {
	errs := []error{c.num.Close()}
	c.rmu.Lock()
	for k, e := range c.sinks {
		if err := e.sink.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cannot close sink %s: %w", k, err))
		}
	}
	c.rmu.Unlock()
	return errors.Join(errs...)
}
