package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// task is one claimed row on its way to an attempt.
type task struct {
	id    meta.RowID
	row   meta.Delivery
	env   *envelope.Envelope // nil: read back from the store first
	sh    *shared            // the hook in memory (first attempts)
	first bool
	// settled: the attempt's outcome moved or deleted the row's due
	// entry, so letting go of the row needs no meta.NoteDue, unless
	// requeued (not 0) says it moved it to that due time (a retry, or a
	// pause while a circuit is open).
	settled  bool
	requeued int64
}

// runner runs the attempts of one sink: a FIFO per tenant, served
// round-robin, at most spec.Concurrency attempts in flight and at most
// spec.TenantConcurrency of them for one tenant, so a tenant whose
// receiver is slow holds a bounded share of the slots.
//
// A runner serves one spec of its sink (edits.go): src is the snapshot's
// source it was last checked against. When an edit changes the spec, a
// new runner takes the key and this one is retired: it takes no more
// tasks, hands its queued ones over, and closes its sink once the
// attempts it has in flight end.
type runner struct {
	d      *Dispatcher
	source string
	spec   config.Sink
	sink   Sink
	name   string // source/sink id, the metric label and the runners key
	src    atomic.Pointer[source.Source]

	// retired is set (under mu) when the runner leaves service; done is
	// closed then, which ends loop.
	retired   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	tenants   map[uint32]*tenantQueue
	ring      []*tenantQueue // tenants with queued tasks, in turn order
	rr        int
	queued    int
	inflight  int
	queueCap  int
	tenantCap int // queued tasks per tenant
	breakers  map[string]*breaker
	idle      *sync.Cond

	kick chan struct{}
	// work hands a started attempt to an idle worker (worker): an
	// attempt runs on a goroutine whose stack has already grown to what
	// a delivery needs, instead of a new one that grows it again.
	work chan runItem

	delivered, retried, deadened, circuit *metrics.Counter
}

// runItem is an attempt handed to a worker.
type runItem struct {
	t *task
	q *tenantQueue
}

// workerIdle is how long a worker waits for its next attempt before it
// exits: long enough to outlast the gaps of a steady load, short enough
// that a burst's workers do not linger.
const workerIdle = 10 * time.Second

type tenantQueue struct {
	ord      uint32
	tasks    []*task
	inflight int
	inRing   bool
}

func newRunner(d *Dispatcher, src *source.Source, spec config.Sink, sk Sink) *runner {
	r := &runner{
		d: d, source: src.Name, spec: spec, sink: sk, name: src.Name + "/" + spec.ID, done: make(chan struct{}),
		tenants:  map[uint32]*tenantQueue{},
		breakers: map[string]*breaker{},
		// First attempts wait here from memory; past it they are read back
		// from the store, which costs far more. The hooks' bytes are
		// bounded by the intake (dispatch.intake_bytes), so the count can
		// be generous.
		queueCap: max(4096, 64*spec.Concurrency),
		kick:     make(chan struct{}, 1),
		work:     make(chan runItem),
	}
	r.tenantCap = max(16, r.queueCap/4)
	r.idle = sync.NewCond(&r.mu)
	r.delivered = attemptCounter(r.name, "delivered")
	r.retried = attemptCounter(r.name, "retry")
	r.deadened = attemptCounter(r.name, "dead")
	r.circuit = attemptCounter(r.name, "circuit_open")
	r.src.Store(src)
	d.wg.Add(1)
	go r.loop()
	return r
}

// hasRoom reports whether the runner would take a task of tenant ord.
func (r *runner) hasRoom(ord uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.tenants[ord]
	return r.queued < r.queueCap && (q == nil || len(q.tasks) < r.tenantCap)
}

// offer queues t; false when the runner or the tenant's queue is full.
func (r *runner) offer(t *task) bool {
	r.mu.Lock()
	q := r.tenants[t.id.Ord]
	if r.queued >= r.queueCap || (q != nil && len(q.tasks) >= r.tenantCap) || r.d.stopping() || r.retired.Load() {
		r.mu.Unlock()
		return false
	}
	if q == nil {
		q = &tenantQueue{ord: t.id.Ord}
		r.tenants[t.id.Ord] = q
	}
	q.tasks = append(q.tasks, t)
	if !q.inRing {
		q.inRing = true
		r.ring = append(r.ring, q)
	}
	r.queued++
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return true
}

// loop starts attempts while there are slots and tasks: each on an idle
// worker, or on a new one when none is idle.
func (r *runner) loop() {
	defer r.d.wg.Done()
	var closed []*task
	for {
		r.mu.Lock()
		for {
			t, q := r.startLocked(&closed)
			if t == nil {
				break
			}
			select {
			case r.work <- runItem{t, q}:
			default:
				r.d.workers.Add(1)
				go r.worker(t, q)
			}
		}
		r.mu.Unlock()
		r.finishClosed(closed)
		closed = closed[:0]
		select {
		case <-r.kick:
		case <-r.done:
			return // retired: its queued tasks were handed over
		case <-r.d.stop:
			r.dropQueued()
			return
		}
	}
}

// startLocked takes the next task that may start now and counts it in
// flight; a task whose tenant is being erased goes to closed instead.
func (r *runner) startLocked(closed *[]*task) (*task, *tenantQueue) {
	for r.inflight < r.spec.Concurrency {
		t, q := r.pickLocked()
		if t == nil {
			return nil, nil
		}
		if !r.d.startAttempt(t.id.Ord) {
			*closed = append(*closed, t) // its tenant is being erased
			continue
		}
		r.inflight++
		q.inflight++
		return t, q
	}
	return nil, nil
}

func (r *runner) finishClosed(closed []*task) {
	for i, t := range closed {
		r.d.finish(t)
		closed[i] = nil
	}
}

// worker runs t, then takes the next attempt itself while the runner
// has one to start (so a steady load keeps its workers busy without a
// hand-off), then waits for the loop to hand it one, until none comes
// for workerIdle or the runner leaves service. The loop starts a worker
// only when no idle one takes the attempt, so there are at most as many
// busy workers as attempts in flight; an attempt runs on a stack already
// grown to what a delivery needs.
func (r *runner) worker(t *task, q *tenantQueue) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	var closed []*task
	for {
		r.run(t, q)
		r.mu.Lock()
		t, q = nil, nil
		if !r.retired.Load() && !r.d.stopping() {
			t, q = r.startLocked(&closed)
		}
		r.mu.Unlock()
		r.finishClosed(closed)
		closed = closed[:0]
		if t != nil {
			continue
		}
		idle.Reset(workerIdle)
		select {
		case it := <-r.work:
			t, q = it.t, it.q
		case <-idle.C:
			return
		case <-r.done:
			return
		case <-r.d.stop:
			return
		}
	}
}

// pickLocked takes the next task round-robin across tenants under their
// share.
func (r *runner) pickLocked() (*task, *tenantQueue) {
	for n := len(r.ring); n > 0; n-- {
		if r.rr >= len(r.ring) {
			r.rr = 0
		}
		q := r.ring[r.rr]
		if len(q.tasks) == 0 {
			q.inRing = false
			r.ring = append(r.ring[:r.rr], r.ring[r.rr+1:]...)
			continue
		}
		r.rr++
		if q.inflight >= r.spec.TenantConcurrency {
			continue
		}
		t := q.tasks[0]
		q.tasks[0] = nil
		q.tasks = q.tasks[1:]
		r.queued--
		return t, q
	}
	return nil, nil
}

func (r *runner) run(t *task, q *tenantQueue) {
	if !r.d.redirect(r, t) {
		r.d.attempt(r, t)
	}
	r.d.tenantInFlight(t.id.Ord, -1)
	r.mu.Lock()
	r.inflight--
	q.inflight--
	if q.inflight == 0 && len(q.tasks) == 0 && !q.inRing {
		delete(r.tenants, q.ord)
	}
	if r.inflight == 0 {
		r.idle.Broadcast()
	}
	closeNow := r.inflight == 0 && r.retired.Load()
	r.mu.Unlock()
	if closeNow {
		r.d.closeRetired(r)
	}
	// No kick: the worker that ran t takes the next attempt itself.
	r.d.wakeScheduler()
}

// dropQueued gives back the tasks not started (at Close): their rows stay
// pending.
func (r *runner) dropQueued() {
	r.mu.Lock()
	var ts []*task
	for _, q := range r.ring {
		ts = append(ts, q.tasks...)
		q.tasks = nil
	}
	r.queued = 0
	r.mu.Unlock()
	for _, t := range ts {
		r.d.finish(t)
	}
}

// wait blocks until no attempt is running.
func (r *runner) wait() {
	r.mu.Lock()
	for r.inflight > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
}

func (d *Dispatcher) tenantInFlight(ord uint32, delta int) {
	d.tmu.Lock()
	if n := d.inflight[ord] + delta; n > 0 {
		d.inflight[ord] = n
	} else {
		delete(d.inflight, ord)
	}
	d.tmu.Unlock()
}

// finish ends a task's hold: the row is free for the scheduler again and
// the hook's memory is returned.
func (d *Dispatcher) finish(t *task) {
	switch {
	case !t.settled:
		// Still pending, due as it was: the scheduler claims it (a first
		// attempt's tenant was not marked when its row was written).
		d.release(t.id, t.row.Due)
		d.markActive(t.id.Ord)
	case t.requeued != 0:
		// Pending again at a new due time. Marked after the hold ends: a
		// pass between the outcome and now met the row held, so it may
		// have found the tenant empty and taken it off the active set,
		// and its scan may have stepped past the new entry.
		d.release(t.id, t.requeued)
		d.markActive(t.id.Ord)
	default:
		d.unhold(t.id)
	}
	if t.sh != nil {
		d.doneWith(t.sh)
		t.sh = nil
	}
}
