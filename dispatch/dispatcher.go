package dispatch

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// HookStore reads committed hooks back: the segment store, which reads
// sealed segments and the WAL alike.
type HookStore interface {
	Fetch(id envelope.ID) (*envelope.Envelope, error)
	Scan(from, to uint64, fn func(*envelope.Envelope) error) error
}

// Options configure a Dispatcher.
type Options struct {
	Meta  *meta.Store
	Hooks HookStore
	// Sources is the current source snapshot (sinks are read from it).
	Sources source.Store
	// NewSink builds the sink of one source's sink spec.
	NewSink func(source string, spec config.Sink) (Sink, error)
	// Ordinal maps a tenant name to its ordinal (the WAL's table), for
	// the operator's calls.
	Ordinal func(tenant string) (uint32, bool)
	// LastSeq is the seq of the last durable hook at Open: rows are
	// rebuilt up to it.
	LastSeq uint64
	// Intake is where the WAL hands committed hooks off (NewIntake; its
	// Handoff is the WAL's OnDurable).
	Intake *Intake
	// CheckpointEvery is how often the checkpoint moves (default 100ms).
	CheckpointEvery time.Duration
	// AttemptLogTTL is how long attempt log entries are kept (default 24h).
	AttemptLogTTL time.Duration
	Logger        *zap.Logger
	Now           func() time.Time
	// OnFatal is called once when the meta store fails: the node stops.
	OnFatal func(error)
	// MaxPenBytes caps the quarantine pen (limits.max_quarantine_bytes;
	// default 256 MiB).
	MaxPenBytes int64
	// Erased are the ordinals of tenants erased or being erased: they
	// start closed (CloseTenant), before anything is rebuilt or claimed,
	// and the rebuild past the checkpoint creates nothing for their hooks
	// (DESIGN.md §6 item 4).
	Erased []uint32
	// SeqsReused says seqs above the log's end at Open may be given again
	// to new hooks while rows of the lost hooks they named are still
	// stored (wal.WAL.LossAccepted): a new row may then be a second write
	// of its key, so no row goes with a single delete (meta.Batch.
	// DeleteFreshPending), which would bring the older one back.
	SeqsReused bool
}

// EnsureDefaults fills unset options.
func (o *Options) EnsureDefaults() {
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 100 * time.Millisecond
	}
	if o.AttemptLogTTL == 0 {
		o.AttemptLogTTL = 24 * time.Hour
	}
	if o.MaxPenBytes == 0 {
		o.MaxPenBytes = config.DefaultMaxQuarantine
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OnFatal == nil {
		o.OnFatal = func(err error) { panic("BUG: dispatch: no OnFatal for " + err.Error()) }
	}
}

// Dispatcher is the dispatch stage. It is safe for concurrent use.
type Dispatcher struct {
	o    Options
	meta *meta.Store // o.Meta

	workers atomic.Int64 // attempt workers started (runner.worker)

	in      *Intake
	written uint64        // last seq with rows written (writer goroutine)
	flushed atomic.Uint64 // last seq whose rows are readable (not yet durable)
	// The last seq whose rows are durable is the store's
	// DurableCheckpoint: the writer moves it with a synced write.
	lastCkpt time.Time

	hmu  sync.Mutex
	held map[meta.RowID]struct{} // rows an attempt holds (the in-memory lease)
	// doomed are held rows an operator dead-lettered (source_rows.go):
	// their holder dead-letters them as it lets go.
	doomed map[meta.RowID]*doom

	rmu     sync.Mutex
	runners map[string]*runner // by source + "/" + sink id
	// retiring are runners an edit replaced or removed whose attempts in
	// flight have not all ended (edits.go).
	retiring map[*runner]struct{}
	srcKick  chan struct{} // SourcesChanged's pass is due
	// dlmu serialises the operator's dead-lettering of a source's rows.
	dlmu sync.Mutex
	// redeliverMu serialises the operator's redeliveries (redeliver.go).
	redeliverMu sync.Mutex

	tmu sync.Mutex
	// active holds the tenants that may have pending rows; the value is
	// set by markActive and cleared when a pass looks at the tenant, so a
	// pass that finds none removes it only when no row came meanwhile.
	active   map[uint32]bool
	inflight map[uint32]int // attempts running, by tenant ordinal
	// busy counts the other writes of a tenant's rows under way (claim
	// passes, operator changes), which a closed tenant waits for too
	// (erase.go).
	busy map[uint32]int
	// closedOrds are the ordinals closed for their tenant's erase; read
	// without a lock, replaced under tmu (erase.go).
	closedOrds atomic.Pointer[map[uint32]struct{}]

	pending, dead atomic.Int64 // rows by state, for the backlog gauges

	pen pen // the quarantine pen's accounting

	// counts are every tenant's committed hooks and bytes up to written
	// (writer goroutine); dirty those changed since the last checkpoint.
	// countsMu guards them; ckptMu is held from taking the dirty counters
	// to writing them, so an erase that removes a tenant's is not undone.
	ckptMu   sync.Mutex
	countsMu sync.Mutex
	counts   map[uint32]meta.TenantCounts
	dirty    map[uint32]struct{}

	schedWake chan struct{}
	stop      chan struct{}
	wg        sync.WaitGroup
	fatalOnce sync.Once
	closed    atomic.Bool

	filters *sinkFilters // sinks[].filter (filter.go)
}

// Open rebuilds the rows of every hook past the checkpoint up to
// o.LastSeq (creating only absent rows), then starts the writer, the
// scheduler and the sweeper, which drain o.Intake.
func Open(o Options) (*Dispatcher, error) {
	o.EnsureDefaults()
	if o.Intake == nil {
		return nil, errors.New("BUG: dispatch: Open without an Intake")
	}
	d := &Dispatcher{
		o:         o,
		in:        o.Intake,
		meta:      o.Meta,
		held:      map[meta.RowID]struct{}{},
		doomed:    map[meta.RowID]*doom{},
		runners:   map[string]*runner{},
		retiring:  map[*runner]struct{}{},
		srcKick:   make(chan struct{}, 1),
		active:    map[uint32]bool{},
		inflight:  map[uint32]int{},
		busy:      map[uint32]int{},
		schedWake: make(chan struct{}, 1),
		stop:      make(chan struct{}),
		filters:   newSinkFilters(o.Logger, o.Now),
	}
	for _, ord := range o.Erased {
		d.CloseTenant(ord)
	}
	ckpt, err := o.Meta.DispatchCheckpoint()
	if err != nil {
		return nil, err
	}
	if d.counts, err = o.Meta.AllTenantCounts(); err != nil {
		return nil, err
	}
	d.dirty = map[uint32]struct{}{}
	if err := d.countRows(); err != nil {
		return nil, err
	}
	start := time.Now()
	n, err := d.rebuild(ckpt, o.LastSeq)
	if err != nil {
		return nil, err
	}
	if err := d.loadPen(); err != nil {
		return nil, err
	}
	d.written = max(ckpt, o.LastSeq)
	d.flushed.Store(d.written)
	if d.written > ckpt {
		if err := o.Meta.SetDispatchCheckpointWith(d.written, d.takeDirty()); err != nil { // no checkpoint runs yet: no ckptMu
			return nil, err
		}
	}
	checkpointSeq.Set(float64(d.written))
	d.lastCkpt = o.Now()
	if ckpt < o.LastSeq {
		o.Logger.Info("dispatch rows rebuilt past the checkpoint",
			zap.Uint64("from_seq", ckpt+1), zap.Uint64("to_seq", o.LastSeq), zap.Int("rows_created", n), zap.Duration("took", time.Since(start)))
	}
	d.wg.Add(4)
	go d.writeLoop()
	go d.scheduleLoop()
	go d.sweepLoop()
	go d.sourcesLoop()
	return d, nil
}

// Checkpoint is the seq up to which every hook's rows are durable: the
// WAL and segments below it are not needed to rebuild anything. It is the
// meta store's DurableCheckpoint, which only the row writer moves.
func (d *Dispatcher) Checkpoint() uint64 { return d.meta.DurableCheckpoint() }

// count adds committed hooks to a tenant's counters (writer goroutine);
// a closed tenant's stay as they were at the close.
func (d *Dispatcher) count(ord uint32, hooks, bytes uint64) {
	if d.isClosed(ord) {
		return
	}
	d.countsMu.Lock()
	c := d.counts[ord]
	c.Hooks += hooks
	c.Bytes += bytes
	d.counts[ord] = c
	d.dirty[ord] = struct{}{}
	d.countsMu.Unlock()
}

// takeDirty returns the counters changed since the last checkpoint.
func (d *Dispatcher) takeDirty() map[uint32]meta.TenantCounts {
	d.countsMu.Lock()
	defer d.countsMu.Unlock()
	out := make(map[uint32]meta.TenantCounts, len(d.dirty))
	for ord := range d.dirty {
		out[ord] = d.counts[ord]
	}
	clear(d.dirty)
	return out
}

// TenantCounts is what the tenant with ordinal ord has committed, up to
// the hooks whose rows are written.
func (d *Dispatcher) TenantCounts(ord uint32) meta.TenantCounts {
	d.countsMu.Lock()
	defer d.countsMu.Unlock()
	return d.counts[ord]
}

// Written is the seq up to which every hook's rows and node-scope dedupe
// keys are in the store (readable; durable once the checkpoint passes).
func (d *Dispatcher) Written() uint64 { return d.flushed.Load() }

// InFlight is the number of attempts running for the tenant with ordinal
// ord (the erase job waits for 0, through WaitTenantIdle).
func (d *Dispatcher) InFlight(ord uint32) int {
	d.tmu.Lock()
	defer d.tmu.Unlock()
	return d.inflight[ord]
}

// allRunners is every sink's runner, the retiring ones too.
func (d *Dispatcher) allRunners() []*runner {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	runners := make([]*runner, 0, len(d.runners)+len(d.retiring))
	for _, r := range d.runners {
		runners = append(runners, r)
	}
	for r := range d.retiring {
		runners = append(runners, r)
	}
	return runners
}

// Close stops claiming and starting attempts, waits for running attempts
// to record their outcome, writes the last checkpoint and closes the
// sinks. Hooks handed off and not yet written keep their rows through the
// rebuild at the next boot.
func (d *Dispatcher) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.in.closed.Store(true)
	close(d.stop)
	d.wg.Wait()
	runners := d.allRunners()
	for _, r := range runners {
		r.wait()
	}
	var errs []error
	for _, r := range runners {
		if err := r.closeSink(); err != nil {
			errs = append(errs, fmt.Errorf("cannot close sink %s: %w", r.name, err))
		}
	}
	d.in.close()
	return errors.Join(errs...)
}

func (d *Dispatcher) fatal(err error) {
	d.fatalOnce.Do(func() {
		d.o.Logger.Error("dispatch: meta store failure", zap.Error(err))
		d.o.OnFatal(err)
	})
}

// stopping reports whether Close has begun.
func (d *Dispatcher) stopping() bool {
	select {
	case <-d.stop:
		return true
	default:
		return false
	}
}

func (d *Dispatcher) hold(id meta.RowID) bool {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	if _, ok := d.held[id]; ok {
		return false
	}
	d.held[id] = struct{}{}
	inFlightRows.Set(float64(len(d.held)))
	return true
}

func (d *Dispatcher) isHeld(id meta.RowID) bool {
	d.hmu.Lock()
	defer d.hmu.Unlock()
	_, ok := d.held[id]
	return ok
}

// release lets go of a row whose due entry may still be at due: the
// claim passes skip held rows and start past them (meta.DueRows), so the
// store is told, after the row is free, that a pass must look there again.
func (d *Dispatcher) release(id meta.RowID, due int64) {
	d.unhold(id)
	d.meta.NoteDue(id.Ord, due)
}

// unhold lets go of a row. A row an operator dead-lettered while it was
// held is dead-lettered now, before the hold ends, so an attempt that
// failed cannot leave it pending (one that succeeded deleted it: it was
// delivered).
func (d *Dispatcher) unhold(id meta.RowID) {
	for {
		d.hmu.Lock()
		dm := d.doomed[id]
		if dm == nil {
			delete(d.held, id)
			inFlightRows.Set(float64(len(d.held)))
			d.hmu.Unlock()
			return
		}
		delete(d.doomed, id)
		d.hmu.Unlock()
		dm.dead = d.buryHeld(id, dm.reason)
		close(dm.done)
	}
}

// markActive says the tenant has pending rows; call it after they are
// committed. A closed tenant's rows are never claimed.
func (d *Dispatcher) markActive(ord uint32) {
	d.tmu.Lock()
	if !d.isClosed(ord) {
		d.active[ord] = true
	}
	d.tmu.Unlock()
}

func (d *Dispatcher) wakeScheduler() {
	select {
	case d.schedWake <- struct{}{}:
	default:
	}
}

// countRows sets the backlog gauges from the store, and marks every
// tenant with rows active.
func (d *Dispatcher) countRows() error {
	c, err := d.meta.CountRows()
	if err != nil {
		return err
	}
	for _, ord := range c.Tenants {
		if !d.isClosed(ord) {
			d.active[ord] = true
		}
	}
	d.pending.Store(c.Rows - c.Dead)
	d.dead.Store(c.Dead)
	backlogGauges(d)
	return nil
}
