package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
)

// The erase job (DESIGN.md §2.11, the seed's "Erasing a tenant") removes
// everything the node holds for one tenant, in stages, each recorded in
// the job's progress row (m:erase:<tenant>) before the next runs, so that
// a kill between stages resumes at the next boot with the stage after the
// last one recorded. The job knows the order and the record; the node's
// stages do the work (EraseSteps), since this package imports no storage.

// The stages, in order. Stage names are the progress row's "stage" (the
// last one done) and GET /v1/tenants/{t}/erase's.
const (
	StageStarted    = "started"    // the progress row exists: the request's 202
	StageClosed     = "closed"     // no hook, pen entry or attempt of the tenant runs any more
	StageSources    = "sources"    // its sources and routes, each audited with its deleted event
	StageRateLimit  = "rate_limit" // its override and fleet buckets
	StageDeliveries = "deliveries" // its pending, in-flight and dead rows and attempt log
	StageQuarantine = "quarantine" // its pen rows
	StageClaims     = "claims"     // claims/tenant=<t>/ in every claim store
	StageDedupe     = "dedupe"     // its node dedupe keys
	StageEvents     = "events"     // its lifecycle events, once published
	StageErased     = "erased"     // the final batch: tombstone, ordinal and counters, audit row
	StageArchived   = "archived"   // the archive's tombstone object
)

// EraseStages lists the stages in the order the job runs them.
var EraseStages = []string{StageStarted, StageClosed, StageSources, StageRateLimit, StageDeliveries,
	StageQuarantine, StageClaims, StageDedupe, StageEvents, StageErased, StageArchived}

// EraseJob is an erase's progress row, JSON.
type EraseJob struct {
	Tenant    string    `json:"tenant"`
	Principal string    `json:"principal"`
	StartedAt time.Time `json:"started_at"`
	// Stage is the last stage done.
	Stage string `json:"stage"`
	// Ordinal is the tenant's ordinal when it was closed (HasOrdinal
	// false: the tenant never sent a hook to this node).
	Ordinal    uint32 `json:"ordinal"`
	HasOrdinal bool   `json:"has_ordinal"`
	// SeqAtClose is the node's last seq once the tenant was closed: every
	// hook of the tenant is at or below it.
	SeqAtClose uint64 `json:"seq_at_close"`
	// Hooks and Bytes are the tenant's counters at the close.
	Hooks uint64 `json:"hooks"`
	Bytes uint64 `json:"bytes"`
	// Removed counts what each stage removed.
	Removed map[string]int64 `json:"removed"`
	// ErasedAt is set by the final batch.
	ErasedAt time.Time `json:"erased_at,omitzero"`
}

// EraseSteps are the node's stages, as the job calls them. A nil step has
// nothing to do on this node (no claim store, no lifecycle events...).
// Every step is idempotent: after a kill it runs again from the start.
type EraseSteps struct {
	// Close stops the tenant's hooks (503 tenant_erasing), the pen and
	// dispatch for it and waits until nothing of it runs; it sets the
	// job's Ordinal, HasOrdinal, SeqAtClose and counters. It also runs
	// first at a resume, before any later stage, so the tenant is closed
	// again after a restart.
	Close func(ctx context.Context, j *EraseJob) error
	// The stages between, each returning how many things it removed.
	Sources, RateLimit, Deliveries, Quarantine, Claims, Dedupe, Events func(ctx context.Context, j *EraseJob) (int64, error)
	// Finish writes the final batch (which deletes the progress row) and
	// sets j.ErasedAt.
	Finish func(ctx context.Context, j *EraseJob) error
	// Archive writes the archive's tombstone object (after Finish; the
	// progress row is gone by then, the tombstone says it is pending).
	Archive func(ctx context.Context, j *EraseJob) error
	// Reopen lets the name send again, as a new tenant, once Finish has
	// run (and at a resume of an erase whose Finish ran).
	Reopen func(j *EraseJob)
}

// EraseProgress keeps the progress rows (the meta store).
type EraseProgress interface {
	SetEraseProgress(tenant string, row []byte) error
	EraseProgress(tenant string) (row []byte, found bool, err error)
	EraseProgresses() (map[string][]byte, error)
}

// EraserOptions configure an Eraser.
type EraserOptions struct {
	Progress EraseProgress
	Steps    EraseSteps
	Logger   *zap.Logger
	// Now is the clock of StartedAt; default time.Now.
	Now func() time.Time
	// AfterStage, when set, is called once each stage is recorded (the
	// crash tests kill the process there).
	AfterStage func(tenant, stage string)
	// Retry is the first wait after a failed stage, doubled up to a
	// minute; default one second.
	Retry time.Duration
}

// Eraser runs the node's erase jobs, one goroutine each.
type Eraser struct {
	o      EraserOptions
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// running holds the jobs of the tenants being erased, by generation:
	// a job lets go of its tenant once the name is open again, while
	// its archive write may still run, so that a new erase of the name
	// can start.
	running map[string]uint64
	gen     uint64
}

// Erase metrics.
var (
	erasesStarted  = metrics.NewCounter(`ankusa_erase_started_total`)
	erasesFinished = metrics.NewCounter(`ankusa_erase_finished_total`)
	eraseFailures  = metrics.NewCounter(`ankusa_erase_stage_failures_total`)
	erasesRunning  = metrics.NewGauge(`ankusa_erase_running`, nil)
)

// NewEraser returns an eraser; Resume starts the jobs a kill interrupted.
func NewEraser(o EraserOptions) *Eraser {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Retry == 0 {
		o.Retry = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Eraser{o: o, ctx: ctx, cancel: cancel, running: map[string]uint64{}}
}

// Jobs reads every running erase's progress row, so the node can close
// their tenants before it serves (Resume runs them).
func (e *Eraser) Jobs() ([]EraseJob, error) {
	rows, err := e.o.Progress.EraseProgresses()
	if err != nil {
		return nil, err
	}
	out := make([]EraseJob, 0, len(rows))
	for t, row := range rows {
		j, err := decodeJob(t, row)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, nil
}

// Resume starts every job whose progress row is in the store.
func (e *Eraser) Resume() error {
	jobs, err := e.Jobs()
	if err != nil {
		return err
	}
	for _, j := range jobs {
		e.o.Logger.Info("erase: resuming", zap.String("tenant", j.Tenant), zap.String("after_stage", j.Stage))
		e.start(j)
	}
	return nil
}

// ErrEraseRefused: the tenant cannot be erased (default, or named by a
// source of the config): the admin API's 409.
var ErrEraseRefused = errors.New("tenant cannot be erased")

// Erase starts erasing tenant (Ankusa.Tenant.delete/3): it returns once
// the progress row is synced (started true), or at once when an erase of
// the tenant is already running (started false).
func (e *Eraser) Erase(tenant, principal string) (started bool, err error) {
	if !config.ValidName([]byte(tenant)) {
		return false, fmt.Errorf("%w: %q is not a tenant name", ErrEraseRefused, tenant)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.running[tenant]; ok {
		return false, nil
	}
	if _, found, err := e.o.Progress.EraseProgress(tenant); err != nil || found {
		return false, err
	}
	j := EraseJob{Tenant: tenant, Principal: principal, StartedAt: e.o.Now().UTC(), Stage: StageStarted, Removed: map[string]int64{}}
	if err := e.save(&j); err != nil {
		return false, err
	}
	erasesStarted.Inc()
	e.o.Logger.Info("erase: started", zap.String("tenant", tenant), zap.String("principal", principal))
	e.startLocked(j)
	return true, nil
}

// Running is tenant's running job, if any (read from its progress row).
func (e *Eraser) Running(tenant string) (EraseJob, bool, error) {
	row, found, err := e.o.Progress.EraseProgress(tenant)
	if err != nil || !found {
		return EraseJob{}, false, err
	}
	j, err := decodeJob(tenant, row)
	return j, err == nil, err
}

// Close stops the running jobs where they are (each resumes at the next
// boot) and waits for them.
func (e *Eraser) Close() {
	e.cancel()
	e.wg.Wait()
}

// Wait waits until no job runs (tests).
func (e *Eraser) Wait() { e.wg.Wait() }

func (e *Eraser) start(j EraseJob) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.running[j.Tenant]; !ok {
		e.startLocked(j)
	}
}

func (e *Eraser) startLocked(j EraseJob) {
	e.gen++
	gen := e.gen
	e.running[j.Tenant] = gen
	erasesRunning.Inc()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer erasesRunning.Dec()
		err := e.run(&j, func() { e.release(j.Tenant, gen) })
		e.release(j.Tenant, gen)
		switch {
		case err == nil:
			erasesFinished.Inc()
			e.o.Logger.Info("erase: done", zap.String("tenant", j.Tenant), zap.Time("erased_at", j.ErasedAt), zap.Any("removed", j.Removed))
		case e.ctx.Err() != nil:
			e.o.Logger.Info("erase: stopped with the node; it resumes at the next boot", zap.String("tenant", j.Tenant), zap.String("after_stage", j.Stage))
		}
	}()
}

// release lets go of tenant, if job gen still holds it.
func (e *Eraser) release(tenant string, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running[tenant] == gen {
		delete(e.running, tenant)
	}
}

// run runs the stages after j.Stage, each retried until it succeeds or
// the eraser closes; reopened is called once the name is open again.
func (e *Eraser) run(j *EraseJob, reopened func()) error {
	done := stageIndex(j.Stage)
	if done < stageIndex(StageErased) && e.o.Steps.Close != nil {
		// Closed again at every resume: the closed state is memory.
		if err := e.retry(j, StageClosed, func(ctx context.Context) error { return e.o.Steps.Close(ctx, j) }); err != nil {
			return err
		}
		if done < stageIndex(StageClosed) {
			if err := e.record(j, StageClosed); err != nil {
				return err
			}
		}
	}
	counted := []struct {
		stage string
		step  func(context.Context, *EraseJob) (int64, error)
	}{
		{StageSources, e.o.Steps.Sources}, {StageRateLimit, e.o.Steps.RateLimit}, {StageDeliveries, e.o.Steps.Deliveries},
		{StageQuarantine, e.o.Steps.Quarantine}, {StageClaims, e.o.Steps.Claims}, {StageDedupe, e.o.Steps.Dedupe},
		{StageEvents, e.o.Steps.Events},
	}
	for _, c := range counted {
		if stageIndex(j.Stage) >= stageIndex(c.stage) {
			continue
		}
		if c.step != nil {
			err := e.retry(j, c.stage, func(ctx context.Context) error {
				n, err := c.step(ctx, j)
				if err == nil {
					j.Removed[c.stage] += n
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		if err := e.record(j, c.stage); err != nil {
			return err
		}
	}
	if stageIndex(j.Stage) < stageIndex(StageErased) {
		err := e.retry(j, StageErased, func(ctx context.Context) error { return e.o.Steps.Finish(ctx, j) })
		if err != nil {
			return err
		}
		j.Stage = StageErased
		e.after(j.Tenant, StageErased)
	}
	if e.o.Steps.Reopen != nil {
		e.o.Steps.Reopen(j)
	}
	// The name is a new tenant's from here: a new erase of it may start
	// while this one's archive write still runs (a later tombstone
	// replaces an earlier one, never the other way round).
	reopened()
	if e.o.Steps.Archive != nil {
		if err := e.retry(j, StageArchived, func(ctx context.Context) error { return e.o.Steps.Archive(ctx, j) }); err != nil {
			return err
		}
	}
	j.Stage = StageArchived
	e.after(j.Tenant, StageArchived)
	return nil
}

// retry runs step until it succeeds, waiting longer after each failure,
// or until the eraser closes.
func (e *Eraser) retry(j *EraseJob, stage string, step func(context.Context) error) error {
	wait := e.o.Retry
	for {
		err := step(e.ctx)
		if err == nil {
			return nil
		}
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		eraseFailures.Inc()
		e.o.Logger.Error("erase: a stage failed; retrying", zap.String("tenant", j.Tenant), zap.String("stage", stage), zap.Duration("retry_in", wait), zap.Error(err))
		select {
		case <-e.ctx.Done():
			return e.ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// record makes stage the job's last stage done, with a synced write.
func (e *Eraser) record(j *EraseJob, stage string) error {
	prev := j.Stage
	j.Stage = stage
	err := e.retry(j, stage, func(context.Context) error { return e.save(j) })
	if err != nil {
		j.Stage = prev
		return err
	}
	e.after(j.Tenant, stage)
	return nil
}

func (e *Eraser) after(tenant, stage string) {
	if e.o.AfterStage != nil {
		e.o.AfterStage(tenant, stage)
	}
}

func (e *Eraser) save(j *EraseJob) error {
	row, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return e.o.Progress.SetEraseProgress(j.Tenant, row)
}

func decodeJob(tenant string, row []byte) (EraseJob, error) {
	var j EraseJob
	if err := json.Unmarshal(row, &j); err != nil {
		return j, fmt.Errorf("the erase progress row of tenant %s does not parse: %w", tenant, err)
	}
	if j.Tenant != tenant || stageIndex(j.Stage) < 0 {
		return j, fmt.Errorf("the erase progress row of tenant %s names tenant %q at stage %q", tenant, j.Tenant, j.Stage)
	}
	if j.Removed == nil {
		j.Removed = map[string]int64{}
	}
	return j, nil
}

func stageIndex(stage string) int {
	for i, s := range EraseStages {
		if s == stage {
			return i
		}
	}
	return -1
}
