package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/meta"
)

// The job's own rules: the stages run in the seed's order, each recorded
// in the progress row before the next starts, each resumed after a kill
// from the last one recorded, with the same result as a run without one.
// The node's stages are tested where they live (meta, dispatch, edge,
// admin) and together against the binary (cmd/ankusa's erase tests).

// killableStore is the meta store's progress rows, with a kill switch:
// once killed, every write fails, as if the process had died there.
type killableStore struct {
	s      *meta.Store
	mu     sync.Mutex
	killed bool
}

func (k *killableStore) kill() {
	k.mu.Lock()
	k.killed = true
	k.mu.Unlock()
}

func (k *killableStore) dead() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed
}

var errKilled = errors.New("the process is dead")

func (k *killableStore) SetEraseProgress(t string, row []byte) error {
	if k.dead() {
		return errKilled
	}
	return k.s.SetEraseProgress(t, row)
}
func (k *killableStore) EraseProgress(t string) ([]byte, bool, error) { return k.s.EraseProgress(t) }
func (k *killableStore) EraseProgresses() (map[string][]byte, error)  { return k.s.EraseProgresses() }

// rig is an eraser over fake stages that log what they do and check, as
// each runs, that the stage before it is recorded.
type rig struct {
	t     *testing.T
	store *killableStore
	mu    sync.Mutex
	log   []string // stages run, in order
	fail  map[string]int
	// block, when set, holds the Close step until it is closed.
	block chan struct{}
}

func newRig(t *testing.T) *rig {
	s, err := meta.Open(meta.Options{FS: vfs.NewMem(), Dir: "meta"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &rig{t: t, store: &killableStore{s: s}, fail: map[string]int{}}
}

func (r *rig) ran(stage string) {
	r.mu.Lock()
	r.log = append(r.log, stage)
	r.mu.Unlock()
}

func (r *rig) ranStages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// recorded is the stage the progress row holds ("" without one).
func (r *rig) recorded(tenant string) string {
	row, found, err := r.store.s.EraseProgress(tenant)
	if err != nil {
		r.t.Error(err)
	}
	if !found {
		return ""
	}
	var j EraseJob
	if err := json.Unmarshal(row, &j); err != nil {
		r.t.Error(err)
	}
	return j.Stage
}

// step is a counted stage: it checks the stage before it is recorded,
// fails when told to, and removes one thing.
func (r *rig) step(stage string) func(context.Context, *EraseJob) (int64, error) {
	return func(ctx context.Context, j *EraseJob) (int64, error) {
		if err := r.precheck(ctx, stage, j); err != nil {
			return 0, err
		}
		r.ran(stage)
		return 1, nil
	}
}

func (r *rig) precheck(ctx context.Context, stage string, j *EraseJob) error {
	if r.store.dead() {
		return errKilled
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.fail[stage] > 0 {
		r.fail[stage]--
		r.mu.Unlock()
		return fmt.Errorf("stage %s fails on purpose", stage)
	}
	r.mu.Unlock()
	prev := EraseStages[stageIndex(stage)-1]
	if got := r.recorded(j.Tenant); stage != StageClosed && got != prev {
		r.t.Errorf("stage %s runs with the progress row at %q, want %q", stage, got, prev)
	}
	return nil
}

func (r *rig) eraser(after func(tenant, stage string)) *Eraser {
	steps := EraseSteps{
		Close: func(ctx context.Context, j *EraseJob) error {
			if err := r.precheck(ctx, StageClosed, j); err != nil {
				return err
			}
			if r.block != nil {
				select {
				case <-r.block:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			r.ran(StageClosed)
			if !j.HasOrdinal {
				j.Ordinal, j.HasOrdinal, j.SeqAtClose = 7, true, 1000
			}
			return nil
		},
		Sources: r.step(StageSources), RateLimit: r.step(StageRateLimit), Deliveries: r.step(StageDeliveries),
		Quarantine: r.step(StageQuarantine), Claims: r.step(StageClaims), Dedupe: r.step(StageDedupe), Events: r.step(StageEvents),
		Finish: func(ctx context.Context, j *EraseJob) error {
			if err := r.precheck(ctx, StageErased, j); err != nil {
				return err
			}
			row := meta.AuditRow{At: time.Now(), Principal: j.Principal, Action: "tenant.delete",
				Event: meta.Event{Type: meta.EventType("tenant", "deleted"), Subject: j.Tenant}}
			if _, _, err := r.store.s.FinishErase(meta.Tombstone{Tenant: j.Tenant, SeqAtClose: j.SeqAtClose, ErasedAt: time.Now(), Removed: j.Removed}, j.Ordinal, j.HasOrdinal, 0, row); err != nil {
				return err
			}
			r.ran(StageErased)
			j.ErasedAt = time.Now()
			return nil
		},
		Archive: func(ctx context.Context, j *EraseJob) error {
			if r.store.dead() {
				return errKilled
			}
			r.ran(StageArchived)
			return nil
		},
		Reopen: func(j *EraseJob) { r.ran("reopen") },
	}
	return NewEraser(EraserOptions{Progress: r.store, Steps: steps, AfterStage: after, Retry: time.Millisecond})
}

func TestEraseRunsStagesInOrder(t *testing.T) {
	r := newRig(t)
	e := r.eraser(nil)
	started, err := e.Erase("acme", "ops")
	if err != nil || !started {
		t.Fatalf("Erase = %v, %v", started, err)
	}
	e.Wait()
	want := append(slices.Clone(EraseStages[1:stageIndex(StageArchived)]), "reopen", StageArchived)
	if got := r.ranStages(); !slices.Equal(got, want) {
		t.Fatalf("stages ran %v, want %v", got, want)
	}
	if r.recorded("acme") != "" {
		t.Fatal("the progress row outlived the final batch")
	}
	tomb, found, err := r.store.s.TombstoneOf("acme")
	if err != nil || !found || !tomb.Gone(7) || tomb.SeqAtClose != 1000 {
		t.Fatalf("tombstone %+v, %v, %v", tomb, found, err)
	}
	for _, s := range []string{StageSources, StageRateLimit, StageDeliveries, StageQuarantine, StageClaims, StageDedupe, StageEvents} {
		if tomb.Removed[s] != 1 {
			t.Errorf("tombstone's removed[%s] = %d, want 1", s, tomb.Removed[s])
		}
	}
}

// A kill after each stage is recorded (the write that records the next
// one, and every step after, fails as the dead process would) resumes at
// the next boot with the stage after it; every stage then has run once
// (the close twice: it runs again at a resume, the closed state being
// memory) and the result is the uninterrupted one.
func TestEraseResumesAfterEveryStage(t *testing.T) {
	for _, killAt := range EraseStages[:stageIndex(StageErased)] {
		t.Run(killAt, func(t *testing.T) {
			r := newRig(t)
			killed := make(chan struct{})
			e := r.eraser(func(_, stage string) {
				if stage == killAt {
					r.store.kill()
					close(killed)
				}
			})
			if killAt == StageStarted {
				// The 202's write: a kill right after it.
				r.store.kill()
				close(killed)
				r.block = make(chan struct{})
			}
			if _, err := e.Erase("acme", "ops"); err != nil && killAt != StageStarted {
				t.Fatal(err)
			}
			<-killed
			e.Close()
			if killAt == StageStarted {
				// Nothing was written: the row is not there and Erase said so.
				if r.recorded("acme") != "" {
					t.Fatal("a progress row without its write")
				}
				return
			}
			if got := r.recorded("acme"); got != killAt {
				t.Fatalf("after the kill the progress row says %q, want %q", got, killAt)
			}
			before := r.ranStages()
			// The next boot.
			r.store.mu.Lock()
			r.store.killed = false
			r.store.mu.Unlock()
			e2 := r.eraser(nil)
			if started, err := e2.Erase("acme", "ops"); err != nil || started {
				t.Fatalf("a second erase before the resume: started %v, %v; want the running one", started, err)
			}
			if err := e2.Resume(); err != nil {
				t.Fatal(err)
			}
			e2.Wait()
			after := r.ranStages()[len(before):]
			wantAfter := []string{StageClosed}
			for _, s := range EraseStages[stageIndex(killAt)+1 : stageIndex(StageArchived)] {
				if s != StageClosed {
					wantAfter = append(wantAfter, s)
				}
			}
			wantAfter = append(wantAfter, "reopen", StageArchived)
			if !slices.Equal(after, wantAfter) {
				t.Fatalf("the resume ran %v, want %v (before the kill: %v)", after, wantAfter, before)
			}
			tomb, found, err := r.store.s.TombstoneOf("acme")
			if err != nil || !found || !tomb.Gone(7) || r.recorded("acme") != "" {
				t.Fatalf("after the resume: tombstone %+v %v %v, progress %q", tomb, found, err, r.recorded("acme"))
			}
		})
	}
}

// A stage that fails is retried, and the job goes on once it succeeds;
// an erase asked for while one runs is the running one.
func TestEraseRetriesAndIsOneAtATime(t *testing.T) {
	r := newRig(t)
	r.fail[StageClaims] = 3
	r.block = make(chan struct{})
	e := r.eraser(nil)
	if started, err := e.Erase("acme", "ops"); err != nil || !started {
		t.Fatalf("Erase = %v, %v", started, err)
	}
	if started, err := e.Erase("acme", "ops"); err != nil || started {
		t.Fatalf("a second Erase while the first runs = %v, %v; want not started", started, err)
	}
	j, running, err := e.Running("acme")
	if err != nil || !running || j.Stage != StageStarted || j.Principal != "ops" {
		t.Fatalf("Running = %+v, %v, %v", j, running, err)
	}
	before := eraseFailures.Get()
	close(r.block)
	e.Wait()
	if got := eraseFailures.Get() - before; got != 3 {
		t.Fatalf("%d stage failures counted, want 3", got)
	}
	if !slices.Contains(r.ranStages(), StageArchived) {
		t.Fatalf("the job did not finish: %v", r.ranStages())
	}
	if _, running, _ := e.Running("acme"); running {
		t.Fatal("still running after the end")
	}
	// Erasing the name again is a new job (the tombstone then names the
	// ordinal twice, once).
	if started, err := e.Erase("acme", "ops"); err != nil || !started {
		t.Fatalf("Erase again = %v, %v", started, err)
	}
	e.Wait()
}

func TestEraseRefusesABadName(t *testing.T) {
	r := newRig(t)
	e := r.eraser(nil)
	for _, name := range []string{"", "Acme", "a/b", "../x"} {
		if _, err := e.Erase(name, "ops"); !errors.Is(err, ErrEraseRefused) {
			t.Errorf("Erase(%q) = %v, want ErrEraseRefused", name, err)
		}
	}
}

// A progress row that does not parse stops the resume, naming the tenant.
func TestEraseBadProgressRow(t *testing.T) {
	r := newRig(t)
	for _, row := range []string{`{`, `{"tenant":"other","stage":"closed"}`, `{"tenant":"acme","stage":"nonsense"}`} {
		if err := r.store.s.SetEraseProgress("acme", []byte(row)); err != nil {
			t.Fatal(err)
		}
		err := r.eraser(nil).Resume()
		if err == nil || !strings.Contains(err.Error(), "tenant acme") {
			t.Errorf("Resume over %s = %v, want an error naming the tenant", row, err)
		}
	}
}

func TestClosed(t *testing.T) {
	var c Closed
	if c.IsClosed([]byte("acme")) {
		t.Fatal("an empty set closes acme")
	}
	c.Close("acme")
	c.Close("globex")
	c.Open("globex")
	if !c.IsClosed([]byte("acme")) || c.IsClosed([]byte("globex")) {
		t.Fatal("Close/Open")
	}
	name := []byte("initech")
	if n := testing.AllocsPerRun(1000, func() { c.IsClosed(name) }); n != 0 {
		t.Fatalf("IsClosed allocates %v times", n)
	}
	var nilSet *Closed
	if nilSet.IsClosed(name) {
		t.Fatal("a nil set closes")
	}
}

// Once the name is open again, a new erase of it starts even while the
// last one's archive write still fails and is retried (the name may have
// sent again as a new tenant in the meantime).
func TestEraseAgainWhileArchiveRetries(t *testing.T) {
	r := newRig(t)
	e := r.eraser(nil)
	archiveDown := make(chan struct{})
	steps := e.o.Steps
	archive := steps.Archive
	steps.Archive = func(ctx context.Context, j *EraseJob) error {
		select {
		case <-archiveDown:
			return archive(ctx, j)
		default:
			return errors.New("the archive is down")
		}
	}
	e.o.Steps = steps
	if started, err := e.Erase("acme", "ops"); err != nil || !started {
		t.Fatalf("Erase = %v, %v", started, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(r.ranStages(), "reopen") {
		if time.Now().After(deadline) {
			t.Fatalf("the first erase did not reopen the name: %v", r.ranStages())
		}
		time.Sleep(time.Millisecond)
	}
	var started bool
	for !started {
		var err error
		if started, err = e.Erase("acme", "ops"); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a second erase did not start while the first one's archive write was retried")
		}
		time.Sleep(time.Millisecond)
	}
	close(archiveDown)
	e.Wait()
	if n := countOf(r.ranStages(), StageArchived); n != 2 {
		t.Fatalf("%d archive writes, want one per erase: %v", n, r.ranStages())
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
