package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
	"github.com/ankusa/ankusa/internal/throttle"
)

// Sink filters (sinks[].filter, DESIGN.md §2.7) are evaluated once per
// hook and sink before anything is written for the sink: a hook a filter
// does not match gets no delivery row for it (the row writer, a released
// quarantined hook) and no attempt (wal.type: none). A filter that fails
// at run time (a missing field, the cost limit) counts as no match: the
// hook is not delivered there, and the failure is counted and logged.
//
// A hook that no sink's filter matches is committed and archived like
// any other; it simply has no row, so nothing waits for it: the
// checkpoint moves past it and retention finds nothing live in its
// range (meta.Store.HoldsLive reads rows).
//
// Programs are compiled when the source is validated (config load, admin
// write) and cached by expression in package filter: evaluating a filter
// looks its program up, it does not compile it. One that was never
// validated (a source built without the node's checks) compiles on its
// first hook; one that does not compile counts as failing.

// filterLogEvery spaces the log lines of failing filters: a broken filter
// on a busy source fails on every hook.
const filterLogEvery = 10 * time.Second

// sinkFilters evaluates filters and keeps their counters; safe for
// concurrent use (the row writer, admin releases, Direct's commits).
type sinkFilters struct {
	log    *zap.Logger
	now    func() time.Time
	errLog throttle.Throttle
	// counters are by source and sink, looked up without building the
	// metric's name on every hook.
	counters sync.Map // filterKey -> *filterCounters
}

type filterKey struct{ source, sink string }

type filterCounters struct{ skipped, errors *metrics.Counter }

func newSinkFilters(log *zap.Logger, now func() time.Time) *sinkFilters {
	return &sinkFilters{log: log, now: now, errLog: throttle.Throttle{Every: filterLogEvery}}
}

// takes reports whether sink spec of source gets hook e. *h is the hook
// as filters see it, made on the first filter and shared by the hook's
// other sinks so its headers and body are read once.
func (f *sinkFilters) takes(source string, spec *config.Sink, e *envelope.Envelope, h **filter.Hook) bool {
	if spec.Filter == "" {
		return true
	}
	p, err := filter.Compile(spec.Filter)
	ok := false
	if err == nil {
		if *h == nil {
			*h = filter.NewHook(e)
		}
		// Never interrupted, not even by the node stopping: an
		// interruption would read as no match, and the hook would lose
		// its row for good. The cost limit and filter.WorkLimit bound
		// every evaluation to milliseconds.
		ok, err = p.Eval(context.Background(), *h)
	}
	if ok {
		return true
	}
	c := f.countersOf(source, spec.ID)
	c.skipped.Inc()
	if err != nil {
		c.errors.Inc()
		f.logFailure(source, spec, e, err)
	}
	return false
}

func (f *sinkFilters) countersOf(source, sink string) *filterCounters {
	k := filterKey{source, sink}
	if c, ok := f.counters.Load(k); ok {
		return c.(*filterCounters)
	}
	labels := `{source="` + source + `",sink="` + sink + `"}`
	c, _ := f.counters.LoadOrStore(k, &filterCounters{
		skipped: metrics.GetOrCreateCounter("ankusa_filter_skipped_total" + labels),
		errors:  metrics.GetOrCreateCounter("ankusa_filter_errors_total" + labels),
	})
	return c.(*filterCounters)
}

// logFailure logs a filter's run-time failure, at most once per
// filterLogEvery, with the count of the ones held back since.
func (f *sinkFilters) logFailure(source string, spec *config.Sink, e *envelope.Envelope, err error) {
	ok, held := f.errLog.Allow(f.now())
	if !ok {
		return
	}
	f.log.Warn("a sink filter failed on a hook: it counts as no match, the sink gets no delivery of it",
		zap.String("source", source), zap.String("sink", spec.ID), zap.String("filter", spec.Filter),
		zap.Stringer("event_id", e.ID), zap.String("tenant", e.TenantID), zap.Error(err),
		zap.Int64("held_back", held))
}
