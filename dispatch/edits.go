package dispatch

import (
	"errors"
	"fmt"
	"reflect"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// Source edits at runtime (issue 15). The source store publishes a new
// immutable snapshot per write, with a new *source.Source for the changed
// source only. A runner remembers the *source.Source it was last checked
// against; every way to an attempt goes through runnerFor, which checks
// the current snapshot, so the next attempt of every pending hook, first
// attempt (from memory) or retry (claimed by the scheduler), uses the
// sink's current spec:
//
//   - same pointer: the runner is current (one lookup, no lock taken
//     beyond rmu);
//   - another pointer, the sink's spec unchanged (an edit to another sink
//     of the source, or to the source's verifier): the runner is kept and
//     remembers the new pointer, so connections are not churned;
//   - the spec changed: a new runner takes the key and the old one is
//     retired, handing its queued tasks to the new one;
//   - the source or the sink is gone: the runner is retired and the row is
//     dead-lettered by the scheduler, naming source and sink (claim).
//
// A retired runner finishes the attempts it has in flight with its spec
// and then closes its sink. A task a runner had already taken when the
// edit came is checked again when its attempt starts (redirect).
// SourcesChanged applies all this eagerly, off the caller's goroutine.

// errStopping: the dispatcher is closing, so no runner is built.
var errStopping = errors.New("dispatch: closing")

// sameSink reports whether two specs of a sink deliver alike: every key,
// the secret's reference and resolved value included, but the filter,
// which the row writer reads from the current spec and a sink never sees
// (editing it must not reconnect to a broker). reflect.DeepEqual keeps up
// with fields added to config.Sink; it runs only when a source's pointer
// changed, never per attempt.
func sameSink(a, b *config.Sink) bool {
	if a.Filter != b.Filter {
		ac, bc := *a, *b
		ac.Filter, bc.Filter = "", ""
		return reflect.DeepEqual(&ac, &bc)
	}
	return reflect.DeepEqual(a, b)
}

// sinkSpec is the spec of sink id in src (nil: the source is gone).
func sinkSpec(src *source.Source, id string) (config.Sink, bool) {
	if src == nil {
		return config.Sink{}, false
	}
	for _, spec := range src.Spec.Sinks {
		if spec.ID == id {
			return spec, true
		}
	}
	return config.Sink{}, false
}

// goneReason says why a row's sink cannot be attempted: its source or the
// sink is no longer in the current snapshot.
func (d *Dispatcher) goneReason(sourceName, sinkID string) string {
	if d.o.Sources.Snapshot().Lookup([]byte(sourceName)) == nil {
		return fmt.Sprintf("source %q no longer exists (sink %q)", sourceName, sinkID)
	}
	return fmt.Sprintf("sink %q is no longer a sink of source %q", sinkID, sourceName)
}

// runnerFor returns the runner of a source's sink for the sink's spec in
// the current snapshot, building it when there is none or the spec
// changed; nil when the source or the sink is gone.
func (d *Dispatcher) runnerFor(sourceName, sinkID string) (*runner, error) {
	cur := d.o.Sources.Snapshot().Lookup([]byte(sourceName))
	key := sourceName + "/" + sinkID
	d.rmu.Lock()
	r := d.runners[key]
	if r != nil && cur != nil && r.src.Load() == cur {
		d.rmu.Unlock()
		return r, nil
	}
	nr, err := d.refreshLocked(key, r, cur, sinkID)
	var old retiredRunner
	if r != nil && nr != r {
		old = d.retireLocked(key, r)
	}
	d.rmu.Unlock()
	if old.r != nil {
		d.handOver(old, nr)
	}
	return nr, err
}

// refreshLocked is runnerFor's slow path (under rmu): r, the runner of
// key (or nil), was built for another *source.Source than cur.
func (d *Dispatcher) refreshLocked(key string, r *runner, cur *source.Source, sinkID string) (*runner, error) {
	spec, ok := sinkSpec(cur, sinkID)
	switch {
	case !ok:
		return nil, nil
	case r != nil && sameSink(&r.spec, &spec):
		r.src.Store(cur)
		return r, nil
	case d.stopping():
		return nil, errStopping
	}
	sk, err := d.o.NewSink(cur.Name, spec)
	if err != nil {
		// The old runner's spec is outdated: it is retired all the same.
		return nil, fmt.Errorf("cannot build sink %s of source %q: %w", sinkID, cur.Name, err)
	}
	nr := newRunner(d, cur, spec, sk)
	d.runners[key] = nr
	return nr, nil
}

// retiredRunner is a runner taken out of service, with the tasks it had
// queued and whether it was idle then.
type retiredRunner struct {
	r     *runner
	tasks []*task
	idle  bool
}

// retireLocked takes r out of service (under rmu): it takes no more tasks
// and its loop ends; handOver does the rest outside the lock.
func (d *Dispatcher) retireLocked(key string, r *runner) retiredRunner {
	if d.runners[key] == r {
		delete(d.runners, key)
	}
	d.retiring[r] = struct{}{}
	r.mu.Lock()
	out := retiredRunner{r: r}
	for _, q := range r.ring {
		out.tasks = append(out.tasks, q.tasks...)
		q.tasks, q.inRing = nil, false
	}
	r.ring, r.queued = nil, 0
	r.retired.Store(true)
	out.idle = r.inflight == 0
	r.mu.Unlock()
	close(r.done)
	return out
}

// handOver gives a retired runner's queued tasks to its successor (nil:
// the sink is gone). One it does not take is given back: its row stays
// pending and the scheduler claims it (and dead-letters it when the sink
// is gone). An idle runner's sink is closed now, a busy one's by the last
// attempt to end (run).
func (d *Dispatcher) handOver(old retiredRunner, next *runner) {
	for _, t := range old.tasks {
		if next != nil && next.offer(t) {
			continue
		}
		d.finish(t)
		d.markActive(t.id.Ord)
	}
	if len(old.tasks) > 0 {
		d.wakeScheduler()
	}
	d.o.Logger.Info("sink spec changed or removed: its runner is retired", zap.String("sink", old.r.name),
		zap.Int("queued_handed_over", len(old.tasks)), zap.Bool("idle", old.idle))
	if old.idle {
		d.closeRetired(old.r)
	}
}

// closeRetired closes a retired runner's sink, once.
func (d *Dispatcher) closeRetired(r *runner) {
	if err := r.closeSink(); err != nil {
		d.o.Logger.Warn("cannot close a retired sink", zap.String("sink", r.name), zap.Error(err))
	}
	d.rmu.Lock()
	delete(d.retiring, r)
	d.rmu.Unlock()
	sinksRetired.Inc()
}

// closeSink closes the runner's sink the first time it is called; later
// calls return nil.
func (r *runner) closeSink() error {
	var err error
	r.closeOnce.Do(func() { err = r.sink.Close() })
	return err
}

// redirect checks, as an attempt starts, that r still serves the sink's
// current spec; when it does not, the task goes to the runner that does
// (or back to the scheduler) and redirect reports true: the attempt is
// not r's. A row an operator dead-lettered meanwhile is not attempted.
func (d *Dispatcher) redirect(r *runner, t *task) bool {
	if d.isClosed(t.id.Ord) {
		closedSkips.Inc()
		d.finish(t) // its tenant is being erased
		return true
	}
	if d.isDoomed(t.id) {
		d.finish(t) // dead-letters it (unhold)
		return true
	}
	cur := d.o.Sources.Snapshot().Lookup([]byte(r.source))
	if cur != nil && cur == r.src.Load() && !r.retired.Load() {
		return false
	}
	nr, err := d.runnerFor(r.source, t.id.Sink)
	if err == nil && nr == r {
		return false
	}
	if nr == nil || !nr.offer(t) {
		d.finish(t)
		d.markActive(t.id.Ord)
		d.wakeScheduler()
	}
	return true
}

// SourcesChanged tells the dispatcher the source store published a new
// snapshot. It returns at once; a background pass then retires the
// runners of sources and sinks the snapshot no longer has (their sinks
// close once their attempts in flight end) and replaces those whose spec
// changed. The pass walks the runners, which exist only for sinks that
// delivered something since boot, never the snapshot's sources, and calls
// coalesce: a burst of writes costs one pass or two. Attempts do not wait
// for the pass: each checks the snapshot as it starts.
func (d *Dispatcher) SourcesChanged() {
	select {
	case d.srcKick <- struct{}{}:
	default:
	}
}

// sourcesLoop runs SourcesChanged's passes until Close.
func (d *Dispatcher) sourcesLoop() {
	defer d.wg.Done()
	var buf []*runner
	for {
		select {
		case <-d.stop:
			return
		case <-d.srcKick:
			buf = d.applySources(buf[:0])
		}
	}
}

// applySources is one pass: the runners are copied under rmu (pointers,
// into buf, reused), checked against the snapshot outside it, and only
// the stale ones go through runnerFor.
func (d *Dispatcher) applySources(buf []*runner) []*runner {
	d.rmu.Lock()
	for _, r := range d.runners {
		buf = append(buf, r)
	}
	d.rmu.Unlock()
	snap := d.o.Sources.Snapshot()
	defer clear(buf) // hold no retired runner until the next pass
	for _, r := range buf {
		if cur := snap.Lookup([]byte(r.source)); cur != nil && cur == r.src.Load() {
			continue
		}
		if d.stopping() {
			break
		}
		if _, err := d.runnerFor(r.source, r.spec.ID); err != nil && !errors.Is(err, errStopping) {
			d.o.Logger.Error("cannot start deliveries to an edited sink", zap.String("sink", r.name), zap.Error(err))
		}
	}
	return buf
}
