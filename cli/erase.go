package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// The tenant erase on this node: tenant.Eraser runs the seed's stages in
// order and records each; the steps below are the node's stages doing
// the work (DESIGN.md §2.11).

// eraseCrashEnv names a stage after which the node kills itself with
// SIGKILL once the stage is recorded: the crash tests' hook (every stage
// boundary must resume at the next boot). Never set in production.
const eraseCrashEnv = "ANKUSA_TEST_ERASE_CRASH_AFTER"

// drainWarn is how long the close waits for the tenant's hooks and
// attempts before it logs that it still waits (it waits on: the wait is
// bounded by the node's own request and attempt timeouts).
const drainWarn = 30 * time.Second

// closeBound bounds one try of the close's wait: past it the try fails
// (logged, counted) and the job tries again after its backoff, so a
// wedged attempt shows in the log and the metrics rather than in silence.
const closeBound = 2 * time.Minute

// openEraser builds the eraser, reads the erases a kill interrupted
// (n.resumed) and closes their tenants before any stage serves.
func (n *node) openEraser() error {
	o := tenant.EraserOptions{Progress: n.meta, Logger: n.log.Named("erase"), Steps: n.eraseSteps()}
	if stage := os.Getenv(eraseCrashEnv); stage != "" {
		n.log.Warn("erase: "+eraseCrashEnv+" is set: the node kills itself after that stage of an erase (a crash test)", zap.String("stage", stage))
		o.AfterStage = func(t, s string) {
			if s == stage {
				n.log.Warn("erase: killing the node after a stage, as " + eraseCrashEnv + " asks")
				_ = n.log.Sync()
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	n.eraser = tenant.NewEraser(o)
	jobs, err := n.eraser.Jobs()
	if err != nil {
		return fmt.Errorf("cannot read the running tenant erases: %w", err)
	}
	for _, j := range jobs {
		n.closed.Close(j.Tenant)
	}
	n.resumed = jobs
	return nil
}

// erasedOrdinals are the ordinals whose hooks dispatch must not rebuild
// rows for: every tombstoned one and those of the running erases (the
// WAL is open: a job closed before its ordinal was recorded has it
// there).
func (n *node) erasedOrdinals() ([]uint32, error) {
	erased, err := n.meta.ErasedOrdinals()
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, len(erased))
	for o := range erased {
		out = append(out, o)
	}
	for _, j := range n.resumed {
		if j.HasOrdinal {
			out = append(out, j.Ordinal)
		} else if o, ok := n.ordinal(j.Tenant); ok {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// resumeErases starts the interrupted erases and writes the archive
// tombstones a kill left unwritten; the node serves by then.
func (n *node) resumeErases() error {
	if err := n.eraser.Resume(); err != nil {
		return err
	}
	ts, err := n.meta.Tombstones()
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.ArchivePending {
			n.eraseWG.Add(1)
			go n.archiveTombstoneLoop(t.Tenant)
		}
	}
	return nil
}

// closeErasingPen has the pen refuse the tenants of the running erases
// (dispatch is open, the router not yet).
func (n *node) closeErasingPen() {
	if n.dispatch == nil {
		return
	}
	for _, j := range n.resumed {
		n.dispatch.ClosePen(j.Tenant)
	}
}

// ordinal is the tenant's ordinal on this node, if it has one.
func (n *node) ordinal(t string) (uint32, bool) {
	switch {
	case n.wal != nil:
		return n.wal.Ordinal(t)
	case n.direct != nil:
		return n.direct.Ordinal(t)
	}
	return 0, false
}

// lastSeq is the node's last committed seq.
func (n *node) lastSeq() uint64 {
	switch {
	case n.wal != nil:
		return n.wal.LastSeq()
	case n.direct != nil:
		return n.direct.LastSeq()
	}
	return 0
}

func (n *node) eraseSteps() tenant.EraseSteps {
	return tenant.EraseSteps{
		Close:      n.eraseClose,
		Sources:    n.eraseSources,
		RateLimit:  n.eraseRateLimit,
		Deliveries: n.eraseDeliveries,
		Quarantine: n.eraseQuarantine,
		Claims:     n.eraseClaims,
		Dedupe:     n.eraseDedupe,
		Events:     n.eraseEvents,
		Finish:     n.eraseFinish,
		Archive:    n.eraseArchive,
		Reopen:     n.eraseReopen,
	}
}

// eraseClose closes the tenant: its hooks 503 tenant_erasing, the pen
// refuses it, dispatch claims none of its rows; then it waits until none
// of its hooks is between admission and commit and no attempt of it
// runs, and records its ordinal, the seq at close and its counters.
func (n *node) eraseClose(ctx context.Context, j *tenant.EraseJob) error {
	ctx, cancel := context.WithTimeout(ctx, closeBound)
	defer cancel()
	n.closed.Close(j.Tenant)
	if n.dispatch != nil {
		n.dispatch.ClosePen(j.Tenant)
	}
	start := time.Now()
	warned := false
	wait := func(what string, done func() bool) error {
		for !done() {
			if !warned && time.Since(start) > drainWarn {
				warned = true
				n.log.Warn("erase: still waiting for the tenant's "+what, zap.String("tenant", j.Tenant), zap.Duration("waited", time.Since(start)))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	}
	if n.queues != nil {
		if err := wait("hooks being committed", func() bool { return n.queues.Queued(j.Tenant) == 0 }); err != nil {
			return err
		}
	}
	ord, ok := n.ordinal(j.Tenant)
	if j.HasOrdinal {
		ord, ok = j.Ordinal, true
	}
	if !ok {
		return nil // never sent a hook here: nothing of it runs
	}
	first := !j.HasOrdinal
	j.Ordinal, j.HasOrdinal = ord, true
	if first {
		j.SeqAtClose = n.lastSeq()
	}
	if n.dispatch != nil {
		n.dispatch.CloseTenant(ord)
		if err := n.dispatch.WaitTenantIdle(ctx, ord, j.SeqAtClose); err != nil {
			return err
		}
		if first {
			c := n.dispatch.TenantCounts(ord)
			j.Hooks, j.Bytes = c.Hooks, c.Bytes
		}
	}
	n.log.Info("erase: tenant closed", zap.String("tenant", j.Tenant), zap.Uint32("ordinal", ord), zap.Uint64("seq_at_close", j.SeqAtClose), zap.Duration("took", time.Since(start)))
	return nil
}

// eraseSources deletes the tenant's routes, then its sources, through the
// store's own writes: each is audited with its deleted lifecycle event,
// in the meta store or in Redis. Config sources and routes never reach
// here (the erase of such a tenant is refused).
func (n *node) eraseSources(_ context.Context, j *tenant.EraseJob) (int64, error) {
	w, ok := n.sources.(source.Writer)
	if !ok {
		return 0, nil
	}
	audit := func(action string) meta.AuditRow {
		return meta.AuditRow{Principal: j.Principal, Action: action, Detail: "tenant erase"}
	}
	routes, err := sweepPages("route", func() []entity {
		rs, _ := w.Snapshot().Routes(j.Tenant, "", 100)
		out := make([]entity, 0, len(rs))
		for _, r := range rs {
			if !r.FromConfig {
				out = append(out, entity{r.ID, func() error {
					_, err := w.DeleteRoute(source.RouteDelete{Tenant: j.Tenant, ID: r.ID, Audit: audit("route.delete")})
					return err
				}})
			}
		}
		return out
	})
	if err != nil {
		return routes, err
	}
	srcs, err := sweepPages("source", func() []entity {
		ss, _ := w.Snapshot().Sources(j.Tenant, "", 100)
		out := make([]entity, 0, len(ss))
		for _, s := range ss {
			if !s.FromConfig {
				out = append(out, entity{s.Name, func() error {
					_, err := w.DeleteSource(source.SourceDelete{Tenant: j.Tenant, Name: s.Name, Audit: audit("source.delete")})
					return err
				}})
			}
		}
		return out
	})
	return routes + srcs, err
}

// entity is a source or route to delete.
type entity struct {
	name   string
	delete func() error
}

// sweepPages deletes the entities page lists, page after page, until a
// page is empty; one another write removed first counts as removed.
func sweepPages(kind string, page func() []entity) (int64, error) {
	var removed int64
	for {
		es := page()
		if len(es) == 0 {
			return removed, nil
		}
		for _, e := range es {
			var se *source.Error
			if err := e.delete(); err != nil && !(errors.As(err, &se) && se.Code == source.CodeNotFound) {
				return removed, fmt.Errorf("cannot delete %s %s: %w", kind, e.name, err)
			}
			removed++
		}
	}
}

// eraseRateLimit removes the tenant's override (audited) and, with
// rate_limits.scope: fleet, its bucket in Redis.
func (n *node) eraseRateLimit(ctx context.Context, j *tenant.EraseJob) (int64, error) {
	var removed int64
	if n.policy != nil {
		if _, ok := n.policy.Override(j.Tenant); ok {
			row := meta.AuditRow{At: time.Now().UTC(), Principal: j.Principal, Action: "tenant.rate_limit.clear", Tenant: j.Tenant,
				Entity: "rate_limit", Outcome: "ok", Detail: "tenant erase"}
			err := n.policy.ClearOverride(j.Tenant, func() error { return n.meta.DeleteRateLimitOverride(j.Tenant, row) })
			if err != nil {
				return 0, err
			}
			removed++
		}
	}
	if n.fleetLimiter != nil {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		k, err := n.rdb.Del(c, n.fleetLimiter.Key(j.Tenant)).Result()
		if err != nil {
			return removed, fmt.Errorf("cannot delete the tenant's fleet rate-limit bucket in Redis: %w", err)
		}
		removed += k
	}
	return removed, nil
}

func (n *node) eraseDeliveries(_ context.Context, j *tenant.EraseJob) (int64, error) {
	if n.dispatch == nil || !j.HasOrdinal {
		return 0, nil
	}
	return n.dispatch.EraseTenantRows(j.Ordinal)
}

func (n *node) eraseQuarantine(_ context.Context, j *tenant.EraseJob) (int64, error) {
	if n.dispatch == nil || !j.HasOrdinal {
		return 0, nil
	}
	return n.dispatch.EraseTenantPen(j.Ordinal)
}

func (n *node) eraseClaims(ctx context.Context, j *tenant.EraseJob) (int64, error) {
	if n.claims == nil {
		return 0, nil
	}
	c, err := n.claims.DeleteTenant(ctx, j.Tenant)
	return int64(c), err
}

func (n *node) eraseDedupe(_ context.Context, j *tenant.EraseJob) (int64, error) {
	if !j.HasOrdinal {
		return 0, nil
	}
	del, err := n.meta.DeleteTenantFamilies(j.Ordinal, j.Tenant, "dedupe")
	return del.Total(), err
}

// eraseEvents deletes the tenant's lifecycle events (the redacted
// entities they carry) once the publisher has delivered them.
//
// It first sweeps the tenant's sources, routes and override once more: an
// admin write that passed its guard just before the tenant closed may
// have landed after their stage (the sweep finds nothing otherwise), and
// its deleted event must be published before the events go.
func (n *node) eraseEvents(ctx context.Context, j *tenant.EraseJob) (int64, error) {
	late, err := n.eraseSources(ctx, j)
	if err != nil {
		return 0, err
	}
	lateRL, err := n.eraseRateLimit(ctx, j)
	if err != nil {
		return 0, err
	}
	if late+lateRL > 0 {
		n.log.Warn("erase: removed sources, routes or an override written while the tenant closed", zap.String("tenant", j.Tenant), zap.Int64("count", late+lateRL))
		j.Removed[tenant.StageSources] += late
	}
	upTo, err := n.lifecycle.WaitTenantPublished(ctx, j.Tenant)
	if err != nil {
		return 0, err
	}
	return n.meta.DeleteTenantEvents(j.Tenant, upTo)
}

// eraseData is the data of the io.ankusa.tenant.deleted event.
type eraseData struct {
	Tenant     string           `json:"tenant"`
	ErasedAt   time.Time        `json:"erased_at"`
	StartedAt  time.Time        `json:"started_at"`
	SeqAtClose uint64           `json:"seq_at_close"`
	Hooks      uint64           `json:"hooks"`
	Bytes      uint64           `json:"bytes"`
	Removed    map[string]int64 `json:"removed"`
}

// eraseFinish writes the final batch: the tombstone, the name freed, the
// counters gone, the tenant.delete audit row and its event.
func (n *node) eraseFinish(ctx context.Context, j *tenant.EraseJob) error {
	// The final batch deletes the progress row: a retry after a batch that
	// committed (its read-back failed) finds it gone and writes nothing
	// more.
	if _, running, err := n.eraser.Running(j.Tenant); err != nil {
		return err
	} else if !running {
		tomb, found, err := n.meta.TombstoneOf(j.Tenant)
		if err != nil || !found {
			return errors.Join(err, fmt.Errorf("BUG: erase of tenant %s: neither a progress row nor a tombstone at the final batch", j.Tenant))
		}
		j.ErasedAt = tomb.ErasedAt
		return nil
	}
	// An event of the tenant written since the events stage (a write
	// that raced the close) is published before the batch deletes it.
	upTo, err := n.lifecycle.WaitTenantPublished(ctx, j.Tenant)
	if err != nil {
		return err
	}
	at := time.Now().UTC()
	data, _ := json.Marshal(eraseData{Tenant: j.Tenant, ErasedAt: at, StartedAt: j.StartedAt, SeqAtClose: j.SeqAtClose, Hooks: j.Hooks, Bytes: j.Bytes, Removed: j.Removed})
	final := meta.AuditRow{At: at, Principal: j.Principal, Action: "tenant.delete", Tenant: j.Tenant, Entity: "tenant/" + j.Tenant, Outcome: "ok",
		Event: meta.Event{Type: meta.EventType("tenant", "deleted"), Subject: j.Tenant, Data: data}}
	tomb := meta.Tombstone{Tenant: j.Tenant, SeqAtClose: j.SeqAtClose, StartedAt: j.StartedAt, ErasedAt: at, Hooks: j.Hooks, Bytes: j.Bytes, Removed: j.Removed,
		ArchivePending: n.archive != nil}
	if _, _, err := n.meta.FinishErase(tomb, j.Ordinal, j.HasOrdinal, upTo, final); err != nil {
		return err
	}
	j.ErasedAt = at
	return nil
}

// eraseReopen lets the name send again: it is a new tenant, with a new
// ordinal, whose hooks are not gone.
func (n *node) eraseReopen(j *tenant.EraseJob) {
	if j.HasOrdinal {
		switch {
		case n.wal != nil:
			n.wal.ForgetTenant(j.Tenant, j.Ordinal)
		case n.direct != nil:
			n.direct.ForgetTenant(j.Tenant, j.Ordinal)
		}
	}
	if n.dispatch != nil {
		n.dispatch.OpenPen(j.Tenant)
	}
	n.closed.Open(j.Tenant)
}

// eraseArchive writes the archive's tombstone object (replay skips the
// tenant's hooks received before erased_at) and records it written.
func (n *node) eraseArchive(ctx context.Context, j *tenant.EraseJob) error {
	if n.archive == nil {
		return nil
	}
	t, found, err := n.meta.TombstoneOf(j.Tenant)
	if err != nil || !found || !t.ArchivePending {
		return err
	}
	return n.archiveTombstone(ctx, t)
}

func (n *node) archiveTombstone(ctx context.Context, t meta.Tombstone) error {
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := archive.WriteTombstone(c, n.archive, n.layout, archive.Tombstone{Tenant: t.Tenant, ErasedAt: t.ErasedAt,
		Node: n.cfg.Node.Name, SeqAtClose: t.SeqAtClose, Ordinals: t.Ordinals})
	if err != nil {
		return err
	}
	return n.meta.SetTombstoneArchived(t.Tenant, t.ErasedAt)
}

// archiveTombstoneLoop writes a tombstone a kill left unwritten, retried
// until it is or the node stops; each try reads the tombstone again (a
// later erase of the name may have replaced it).
func (n *node) archiveTombstoneLoop(tenant string) {
	defer n.eraseWG.Done()
	wait := time.Second
	for {
		t, found, err := n.meta.TombstoneOf(tenant)
		if err == nil && (!found || !t.ArchivePending) {
			return
		}
		if err == nil {
			err = n.archiveTombstone(n.eraseCtx(), t)
		}
		if err == nil || n.eraseCtx().Err() != nil {
			return
		}
		n.log.Error("erase: cannot write the archive tombstone; retrying", zap.String("tenant", tenant), zap.Duration("retry_in", wait), zap.Error(err))
		select {
		case <-n.eraseCtx().Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// eraseCtx is done once the node stops.
func (n *node) eraseCtx() context.Context { return n.stopCtx }

// eraseAdmin is the admin API's view of the erase.
type eraseAdmin struct{ n *node }

var _ admin.TenantEraser = eraseAdmin{}

// Erase refuses default and a tenant the config names (a source or a
// route of the file: it would come back at the next boot), then starts
// the job.
func (e eraseAdmin) Erase(t, principal string) (bool, error) {
	if why := configuredTenant(e.n.cfg, t); why != "" {
		return false, &admin.EraseRefusedError{Reason: why}
	}
	return e.n.eraser.Erase(t, principal)
}

// configuredTenant says why the config keeps tenant t ("" when it does
// not).
func configuredTenant(cfg *config.Config, t string) string {
	if t == config.DefaultTenant {
		return "tenant default holds the shared sources; it cannot be erased"
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Sources)) {
		if cfg.Sources[name].TenantID == t {
			return fmt.Sprintf("source %s of the config file belongs to tenant %s; remove it there first", name, t)
		}
	}
	for _, r := range cfg.Routes.Table {
		if r.TenantID == t {
			return fmt.Sprintf("route %s of the config file (routes.table) belongs to tenant %s; remove it there first", r.ID, t)
		}
	}
	return ""
}

func (e eraseAdmin) EraseStatus(t string) (admin.EraseStatus, bool, error) {
	j, running, err := e.n.eraser.Running(t)
	if err != nil {
		return admin.EraseStatus{}, false, err
	}
	if running {
		return admin.EraseStatus{Tenant: t, Running: true, Stage: j.Stage, StartedAt: j.StartedAt, Removed: j.Removed,
			HasSeqAtClose: j.HasOrdinal, SeqAtClose: j.SeqAtClose, Ordinals: ordinalsOf(j)}, true, nil
	}
	tomb, found, err := e.n.meta.TombstoneOf(t)
	if err != nil || !found {
		return admin.EraseStatus{}, false, err
	}
	stage := tenant.StageArchived
	if tomb.ArchivePending {
		stage = tenant.StageErased
	}
	return admin.EraseStatus{Tenant: t, Stage: stage, StartedAt: tomb.StartedAt, Removed: tomb.Removed, ErasedAt: tomb.ErasedAt,
		HasSeqAtClose: true, SeqAtClose: tomb.SeqAtClose, Ordinals: tomb.Ordinals}, true, nil
}

func ordinalsOf(j tenant.EraseJob) []uint32 {
	if j.HasOrdinal {
		return []uint32{j.Ordinal}
	}
	return []uint32{}
}

func (e eraseAdmin) Erasing(t string) bool { return e.n.closed.IsClosed([]byte(t)) }

// HookGone: the hook's ordinal is one the tenant was erased under, or the
// one of its running erase.
func (e eraseAdmin) HookGone(t string, ord uint32) (bool, error) {
	j, running, err := e.n.eraser.Running(t)
	if err != nil {
		return false, err
	}
	if running {
		if o, ok := e.n.ordinal(t); j.HasOrdinal && j.Ordinal == ord || !j.HasOrdinal && ok && o == ord {
			return true, nil
		}
	}
	tomb, found, err := e.n.meta.TombstoneOf(t)
	return found && tomb.Gone(ord), err
}
