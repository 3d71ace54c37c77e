package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// Quarantine is the quarantine pen as the admin API sees it: hooks that
// failed verification under on_verify_failure: quarantine, held and not
// delivered until released. Every change is a synced write with an audit
// row naming the principal. Each method acts on tenant's hooks only:
// another tenant's hook is ErrNotQuarantined, as one that does not exist.
type Quarantine interface {
	// Quarantined lists the tenant's held hooks in seq order after cursor.
	Quarantined(ctx context.Context, tenant string, f dispatch.Filter, cursor string, limit int) ([]dispatch.PenItem, string, error)
	// Release verifies the hook again with its source's current secrets
	// and, if it passes (or force), hands it to dispatch.
	Release(ctx context.Context, tenant string, id envelope.ID, force bool, principal string) (dispatch.Released, error)
	// Drop deletes the hook's pen row: it is never delivered.
	Drop(ctx context.Context, tenant string, id envelope.ID, principal string) error
	// DropAll drops every held hook of the tenant passing the filter.
	DropAll(ctx context.Context, tenant string, f dispatch.Filter, principal string) (int, error)
}

// Errors a Quarantine implementation returns for the handlers to map.
var (
	// ErrNotQuarantined: no such held hook for this tenant. The one 404.
	ErrNotQuarantined = errors.New("admin: hook not quarantined")
	// ErrStillInvalid: the hook does not verify with the current secrets. 409.
	// The error names the reason after a colon.
	ErrStillInvalid = errors.New("admin: hook still fails verification")
	// ErrSourceGone: the hook's source no longer exists. 409.
	ErrSourceGone = errors.New("admin: source gone")
	// ErrBusy: the hook was held a moment ago and cannot change yet. 503.
	ErrBusy = errors.New("admin: retry shortly")
)

const (
	codeSignatureInvalid = "signature_invalid"
	codeSourceGone       = "source_gone"
	codeUnavailable      = "unavailable"
	msgQuarantineFailed  = "the quarantine pen could not be read or changed; the node's log says why"
)

// registerQuarantine adds the pen's routes behind auth's tenant guard.
func registerQuarantine(mux *http.ServeMux, auth *Auth, q Quarantine, log *zap.Logger) {
	h := &quarantineHandlers{q: q, log: log}
	route := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, auth.TenantGuard(f)) }
	route("GET /v1/tenants/{tenant}/quarantine", h.list)
	route("POST /v1/tenants/{tenant}/quarantine/drop", h.dropAll)
	route("POST /v1/tenants/{tenant}/quarantine/{event_id}/release", h.release)
	route("DELETE /v1/tenants/{tenant}/quarantine/{event_id}", h.drop)
}

type quarantineHandlers struct {
	q   Quarantine
	log *zap.Logger
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
		writeError(w, http.StatusBadRequest, codeInvalidRequest, msg)
		return
	}
	out, err := h.q.Release(r.Context(), tenant, id, force, principalName(r))
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
	if err := h.q.Drop(r.Context(), tenant, id, principalName(r)); err != nil {
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
	n, err := h.q.DropAll(r.Context(), tenant, f, principalName(r))
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
	switch {
	case errors.Is(err, ErrNotQuarantined):
		writeNotFound(w)
	case errors.Is(err, ErrStillInvalid):
		_, reason, ok := strings.Cut(err.Error(), ErrStillInvalid.Error()+": ")
		if !ok || reason == "" {
			reason = "unknown"
		}
		writeError(w, http.StatusConflict, codeSignatureInvalid,
			"the hook does not verify with the source's current secrets (reason: "+reason+"); fix the secret and release it again, or release it with force=true to deliver it flagged")
	case errors.Is(err, ErrSourceGone):
		writeError(w, http.StatusConflict, codeSourceGone, "the hook's source no longer exists, so nothing could deliver it; drop it")
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "the hook was quarantined a moment ago; retry in a second")
	case errors.Is(err, ErrBadCursor):
		writeError(w, http.StatusBadRequest, codeInvalidRequest, "cursor: not a next_cursor this listing returned; start again without cursor")
	default:
		fields = append(fields, zap.String("tenant", r.PathValue("tenant")), zap.Error(err))
		h.log.Error(msg, fields...)
		writeError(w, http.StatusInternalServerError, codeInternal, msgQuarantineFailed)
	}
}
