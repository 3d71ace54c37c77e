package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// Quarantine is the quarantine pen (hooks that failed verification under
// on_verify_failure: quarantine, held and not delivered until released) as
// the admin API uses it: *dispatch.Dispatcher is one, as it is. The pen
// owns its rows and the primitives that change them; the handlers decide
// (a release without force verifies the hook again, quarantine_policy.go)
// and hand each primitive the audit row that records the change. Each
// method acts on tenant's hooks only: another tenant's hook is
// dispatch.ErrNotQuarantined, as one that does not exist. It must be safe
// for concurrent use.
type Quarantine interface {
	// Quarantined lists the tenant's held hooks in seq order after cursor.
	Quarantined(ctx context.Context, tenant string, f dispatch.Filter, cursor string, limit int) ([]dispatch.PenItem, string, error)
	// QuarantinedHook is one held hook.
	QuarantinedHook(ctx context.Context, tenant string, id envelope.ID) (dispatch.PenItem, error)
	// Release hands the hook to dispatch, verified or forced, with its
	// audit row.
	Release(ctx context.Context, tenant string, id envelope.ID, mode dispatch.ReleaseMode, audit meta.AuditRow) (dispatch.Released, error)
	// DropQuarantined deletes the hook's pen row, with its audit row: it
	// is never delivered.
	DropQuarantined(ctx context.Context, tenant string, id envelope.ID, audit meta.AuditRow) error
	// DropAllQuarantined drops every held hook of the tenant passing the
	// filter, in batches, each with the audit row audit(n) makes for it.
	DropAllQuarantined(ctx context.Context, tenant string, f dispatch.Filter, audit func(n int) meta.AuditRow) (int, error)
}

const (
	codeSignatureInvalid = "signature_invalid"
	codeSourceGone       = "source_gone"
	codeUnavailable      = "unavailable"
	msgQuarantineFailed  = "the quarantine pen could not be read or changed; the node's log says why"
)

// registerQuarantine adds the pen's routes behind auth's tenant guard.
func registerQuarantine(mux router, auth *Auth, h *quarantineHandlers) {
	route := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, auth.TenantGuard(f)) }
	route("GET /v1/tenants/{tenant}/quarantine", h.list)
	route("POST /v1/tenants/{tenant}/quarantine/drop", h.dropAll)
	route("POST /v1/tenants/{tenant}/quarantine/{event_id}/release", h.release)
	route("DELETE /v1/tenants/{tenant}/quarantine/{event_id}", h.drop)
}

// quarantineHandlers serves the pen's routes from q; a release verifies
// hooks read from hooks with the secrets of sources; now stamps the audit
// rows; log takes what a client is not told.
type quarantineHandlers struct {
	q       Quarantine
	hooks   HookFetcher
	sources source.Store
	now     func() time.Time
	log     *zap.Logger
}

// penList is the body of GET .../quarantine.
type penList struct {
	Hooks      []penJSON `json:"hooks"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

type penJSON struct {
	EventID    string `json:"event_id"`
	Seq        uint64 `json:"seq"`
	Source     string `json:"source"`
	ReceivedAt string `json:"received_at"`
	Bytes      int    `json:"bytes"`
	Failure    string `json:"failure"`
}

func (h *quarantineHandlers) list(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	q, ok := parsePageQuery(w, r, nil)
	if !ok {
		return
	}
	items, next, err := h.q.Quarantined(r.Context(), tenant, q.filter, q.cursor, q.limit)
	if err != nil {
		h.fail(w, r, "cannot list quarantined hooks", err)
		return
	}
	out := penList{Hooks: make([]penJSON, 0, len(items)), NextCursor: next}
	for _, it := range items {
		if it.Tenant != tenant {
			h.fail(w, r, "cannot list quarantined hooks", fmt.Errorf("BUG: the pen listed a hook of tenant %q for %q", it.Tenant, tenant))
			return
		}
		out.Hooks = append(out.Hooks, penJSON{EventID: it.ID.String(), Seq: it.Seq, Source: it.Source,
			ReceivedAt: stamp(it.ReceivedAt), Bytes: it.Bytes, Failure: it.Failure})
	}
	writeValue(w, http.StatusOK, out)
}

func (h *quarantineHandlers) release(w http.ResponseWriter, r *http.Request) {
	tenant, id, ok := pathPenHook(w, r)
	if !ok {
		return
	}
	vs, msg := queryParams(r, "force")
	force := false
	switch v, given := vs["force"]; {
	case msg != "":
	case !given || v == "false":
	case v == "true":
		force = true
	default:
		msg = fmt.Sprintf("force: %q must be true or false", v)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	out, err := h.releaseHook(r.Context(), tenant, id, force, principalName(r))
	if err != nil {
		h.fail(w, r, "cannot release a quarantined hook", err, zap.Stringer("id", id))
		return
	}
	writeValue(w, http.StatusOK, map[string]any{"released": 1, "verified": out.Verified, "deliveries": out.Rows})
}

func (h *quarantineHandlers) drop(w http.ResponseWriter, r *http.Request) {
	tenant, id, ok := pathPenHook(w, r)
	if !ok {
		return
	}
	if err := h.dropHook(r.Context(), tenant, id, principalName(r)); err != nil {
		h.fail(w, r, "cannot drop a quarantined hook", err, zap.Stringer("id", id))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

func (h *quarantineHandlers) dropAll(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	f, ok := parseBulkQuery(w, r, "quarantined hook", "dropped", true)
	if !ok {
		return
	}
	n, err := h.q.DropAllQuarantined(r.Context(), tenant, f, h.dropAllAudit(tenant, f, principalName(r)))
	if err != nil {
		h.fail(w, r, "cannot drop quarantined hooks", err, zap.Any("filter", f))
		return
	}
	writeValue(w, http.StatusOK, map[string]int{"dropped": n})
}

// pathPenHook returns the tenant and event id of a pen route, or answers
// the one 404.
func pathPenHook(w http.ResponseWriter, r *http.Request) (string, envelope.ID, bool) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return "", envelope.ID{}, false
	}
	id, err := envelope.ParseID([]byte(r.PathValue("event_id")))
	if err != nil {
		writeNotFound(w)
		return "", envelope.ID{}, false
	}
	return tenant, id, true
}

func principalName(r *http.Request) string {
	if p := PrincipalFrom(r.Context()); p != nil {
		return p.Name
	}
	return ""
}

// fail answers err: the one 404, a 409 naming why a release cannot happen,
// a 503 to retry, a 400 for a cursor, or a 500 whose cause goes to the log.
func (h *quarantineHandlers) fail(w http.ResponseWriter, r *http.Request, msg string, err error, fields ...zap.Field) {
	var invalid *stillInvalidError
	switch {
	case errors.Is(err, dispatch.ErrNotQuarantined):
		writeNotFound(w)
	case errors.As(err, &invalid):
		writeError(w, http.StatusConflict, codeSignatureInvalid,
			"the hook does not verify with the source's current secrets (reason: "+invalid.Reason+"); fix the secret and release it again, or release it with force=true to deliver it flagged")
	case errors.Is(err, dispatch.ErrTenantErasing):
		writeErasing(w, r.PathValue("tenant"))
	case errors.Is(err, dispatch.ErrSourceGone):
		writeError(w, http.StatusConflict, codeSourceGone, "the hook's source no longer exists, so nothing could deliver it; drop it")
	case errors.Is(err, dispatch.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "the hook was quarantined a moment ago; retry in a second")
	case errors.Is(err, dispatch.ErrBadCursor):
		writeError(w, http.StatusBadRequest, codeInvalidQuery, "cursor: not a next_cursor this listing returned; start again without cursor")
	default:
		fields = append(fields, zap.String("tenant", r.PathValue("tenant")), zap.Error(err))
		h.log.Error(msg, fields...)
		writeError(w, http.StatusInternalServerError, codeInternal, msgQuarantineFailed)
	}
}
