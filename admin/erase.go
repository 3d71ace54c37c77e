package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
)

// TenantEraser runs the node's tenant erase jobs (DESIGN.md §2.11): cli
// wires one over *tenant.Eraser and the meta store's tombstones. It must
// be safe for concurrent use; Erasing and HookGone are asked on the
// request path and must not block.
type TenantEraser interface {
	// Erase starts erasing tenant as principal; started false: one is running.
	// *EraseRefusedError: the tenant cannot be erased (409).
	Erase(tenant, principal string) (started bool, err error)
	// EraseStatus is the running erase or the tombstone; found false: neither.
	EraseStatus(tenant string) (st EraseStatus, found bool, err error)
	// Erasing reports whether an erase of tenant is running (writes under
	// /v1/tenants/{tenant}/ answer 409 tenant_erasing while it is).
	Erasing(tenant string) bool
	// HookGone reports whether a stored hook of tenant with ordinal ord is
	// gone: its tenant was erased (or is being erased) under that ordinal.
	HookGone(tenant string, ord uint32) (bool, error)
}

// EraseStatus is what GET /v1/tenants/{tenant}/erase reports: a running
// erase (its progress row) or a finished one (its tombstone).
type EraseStatus struct {
	Tenant string
	// Running: the job runs (or resumes at the next boot); false: the
	// tombstone of a finished erase.
	Running bool
	// Stage is the last stage done (tenant.Stage*).
	Stage string
	// StartedAt is when the job started; zero when unknown (a tombstone
	// does not keep it).
	StartedAt time.Time
	// Removed counts what each stage removed, by stage.
	Removed map[string]int64
	// ErasedAt is when the final batch was written; zero while running.
	ErasedAt time.Time
	// SeqAtClose is the node's last seq once the tenant was closed (every
	// hook of the tenant is at or below it); HasSeqAtClose is false
	// before the close.
	HasSeqAtClose bool
	SeqAtClose    uint64
	// Ordinals are the tenant's ordinals the erase covers (erased: the
	// tombstone's, every ordinal the name ever had on this node).
	Ordinals []uint32
}

// EraseRefusedError is a TenantEraser's refusal of a tenant that cannot be
// erased: default, or one a configured source or route names. The admin
// API answers it 409 tenant_from_config with Reason.
type EraseRefusedError struct {
	// Reason says why, for people ("tenant acme is named by the source
	// stripe of the config file; remove it from the config first").
	Reason string
}

func (e *EraseRefusedError) Error() string { return "tenant cannot be erased: " + e.Reason }

// Error codes of the erase routes and of a write refused during an erase.
const (
	codeTenantFromConfig = "tenant_from_config"
	codeTenantErasing    = "tenant_erasing"
)

// Erase metrics: requests that failed inside the node (500), and writes
// refused because their tenant is being erased.
var (
	eraseRequestFailures = metrics.NewCounter(`ankusa_admin_erase_failures_total`)
	erasingRefusals      = metrics.NewCounter(`ankusa_admin_tenant_erasing_refusals_total`)
)

// eraseHandlers serves DELETE /v1/tenants/{tenant} and GET
// /v1/tenants/{tenant}/erase.
type eraseHandlers struct {
	er  TenantEraser
	log *zap.Logger
}

func registerErase(mux router, auth *Auth, h *eraseHandlers) {
	mux.Handle("DELETE /v1/tenants/{tenant}", auth.Guard(needErase, http.HandlerFunc(h.erase)))
	mux.Handle("GET /v1/tenants/{tenant}/erase", auth.TenantGuard(http.HandlerFunc(h.status)))
}

// erase serves DELETE /v1/tenants/{tenant}?confirm={tenant}: 202 once the
// job's progress row is synced, 200 when one is already running, each
// with the status; 400 without the tenant typed again as confirm; 409
// tenant_from_config for a tenant that cannot be erased.
func (h *eraseHandlers) erase(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	vs, msg := queryParams(r, "confirm")
	if confirm, given := vs["confirm"]; msg == "" && confirm != tenant {
		msg = fmt.Sprintf("confirm: pass ?confirm=%s, the tenant typed again, to erase it", tenant)
		if given {
			msg = fmt.Sprintf("confirm: %q is not the path's tenant %q; pass ?confirm=%s, the tenant typed again, to erase it", confirm, tenant, tenant)
		}
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	started, err := h.er.Erase(tenant, principalName(r))
	var refused *EraseRefusedError
	switch {
	case errors.As(err, &refused):
		writeError(w, http.StatusConflict, codeTenantFromConfig, fmt.Sprintf("tenant %s cannot be erased: %s", tenant, refused.Reason))
		return
	case err != nil:
		h.fail(w, "cannot start erasing a tenant", tenant, err)
		return
	}
	status := http.StatusOK
	if started {
		status = http.StatusAccepted
	}
	st, found, err := h.er.EraseStatus(tenant)
	if err != nil {
		h.fail(w, "cannot read the status of an erase", tenant, err)
		return
	}
	if !found {
		// The job is started (or running) but its row was not read back:
		// answer what is known rather than a 500 for an erase that runs.
		st = EraseStatus{Tenant: tenant, Running: true, Stage: "started"}
	}
	writeValue(w, status, newEraseJSON(st))
}

// status serves GET /v1/tenants/{tenant}/erase: the running erase or the
// tombstone; 404 when the node has neither.
func (h *eraseHandlers) status(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	if _, msg := queryParams(r); msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	st, found, err := h.er.EraseStatus(tenant)
	switch {
	case err != nil:
		h.fail(w, "cannot read the status of an erase", tenant, err)
	case !found:
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("this node has no erase of tenant %s, running or done", tenant))
	default:
		writeValue(w, http.StatusOK, newEraseJSON(st))
	}
}

// fail answers a 500 whose cause goes to the log.
func (h *eraseHandlers) fail(w http.ResponseWriter, msg, tenant string, err error) {
	eraseRequestFailures.Inc()
	h.log.Error(msg, zap.String("tenant", tenant), zap.Error(err))
	writeError(w, http.StatusInternalServerError, codeInternal, "the node could not read or change this; its log says why")
}

// eraseJSON is the status of an erase in the API. erased_at is null while
// it runs, seq_at_close before the close, started_at when the tombstone
// does not know it.
type eraseJSON struct {
	Tenant     string           `json:"tenant"`
	State      string           `json:"state"`
	Stage      string           `json:"stage"`
	StartedAt  *string          `json:"started_at"`
	Removed    map[string]int64 `json:"removed"`
	ErasedAt   *string          `json:"erased_at"`
	SeqAtClose *uint64          `json:"seq_at_close"`
	Ordinals   []uint32         `json:"ordinals"`
}

// The states of an erase's status.
const (
	eraseStateRunning = "running"
	eraseStateErased  = "erased"
)

func newEraseJSON(st EraseStatus) eraseJSON {
	out := eraseJSON{Tenant: st.Tenant, State: eraseStateErased, Stage: st.Stage, Removed: st.Removed, Ordinals: st.Ordinals}
	if st.Running {
		out.State = eraseStateRunning
	}
	stampOrNull := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := stamp(t)
		return &s
	}
	out.StartedAt = stampOrNull(st.StartedAt)
	if !st.Running {
		out.ErasedAt = stampOrNull(st.ErasedAt)
	}
	if st.HasSeqAtClose {
		seq := st.SeqAtClose
		out.SeqAtClose = &seq
	}
	if out.Removed == nil {
		out.Removed = map[string]int64{}
	}
	if out.Ordinals == nil {
		out.Ordinals = []uint32{}
	}
	return out
}

// needErase is the check of DELETE /v1/tenants/{tenant}: tenants:write
// and tenant:*, together; a token for one tenant cannot erase even its own.
func needErase(p *Principal, _ *http.Request) string {
	var missing []string
	if !p.CanWriteTenants() {
		missing = append(missing, ScopeTenantsWrite)
	}
	if !p.allTenants {
		missing = append(missing, ScopeAllTenants)
	}
	if len(missing) == 0 {
		return ""
	}
	return strings.Join(missing, " and ") + " (erasing a tenant needs both " + ScopeTenantsWrite + " and " + ScopeAllTenants + ")"
}

// refuseErasing answers 409 tenant_erasing, and reports true, when r is a
// write under /v1/tenants/{tenant}/ (any method but GET and HEAD) whose
// tenant erasing reports being erased. Auth.Guard asks it of every
// request it admits, so no write route can miss it.
func refuseErasing(w http.ResponseWriter, r *http.Request, erasing func(tenant string) bool) bool {
	_, path, _ := strings.Cut(r.Pattern, " ")
	if r.Method == http.MethodGet || r.Method == http.MethodHead || !strings.HasPrefix(path, "/v1/tenants/{tenant}/") {
		return false
	}
	tenant := r.PathValue("tenant")
	if !erasing(tenant) {
		return false
	}
	writeErasing(w, tenant)
	return true
}

// writeErasing is the 409 of a write under a tenant being erased: from
// the guard, or from dispatch (dispatch.ErrTenantErasing) when the erase
// closed the tenant after the guard let the write through.
func writeErasing(w http.ResponseWriter, tenant string) {
	erasingRefusals.Inc()
	writeError(w, http.StatusConflict, codeTenantErasing, fmt.Sprintf("tenant %s is being erased; GET /v1/tenants/%s/erase reports it", tenant, tenant))
}
