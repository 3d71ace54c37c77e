package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
)

// Deliveries is the dispatch stage's dead letters and attempt log, as the
// admin API uses them: *dispatch.Dispatcher is one, as it is. Every change
// is a synced write, with the audit row the handler makes for it in the
// same batch. Each method acts on the rows of tenant only: another
// tenant's delivery is dispatch.ErrNoDelivery, exactly as one that does
// not exist. The handlers map dispatch.ErrNoDelivery (the one 404),
// dispatch.ErrNotDead (409) and dispatch.ErrBadCursor (400); any other
// error is a 500. It must be safe for concurrent use.
type Deliveries interface {
	// Dead lists the tenant's dead letters in (seq, sink) order after cursor ("" = from the start), at most limit, filtered; next is "" at the end.
	Dead(ctx context.Context, tenant string, f dispatch.Filter, cursor string, limit int) (rows []dispatch.Row, next string, err error)
	// Retry makes one dead letter pending again, due now, with its attempt count and max_age clock reset.
	Retry(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error
	// RetryAll does that for every dead letter of the tenant passing the
	// filter, in batches, each with the row audit(n) makes; n is how many.
	RetryAll(ctx context.Context, tenant string, f dispatch.Filter, audit func(n int) meta.AuditRow) (n int, err error)
	// Drop deletes one dead letter.
	Drop(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error
	// DropAll deletes every dead letter of the tenant passing the filter.
	DropAll(ctx context.Context, tenant string, f dispatch.Filter, audit func(n int) meta.AuditRow) (n int, err error)
	// Redeliver sends a hook to one sink of its source again: a new
	// pending row, due now (a dead letter is retried). dispatch's
	// ErrPending, ErrNoSink, ErrSourceGone, ErrFiltered,
	// ErrWasQuarantined and ErrBusy say why it cannot.
	Redeliver(ctx context.Context, tenant string, id envelope.ID, sink string, audit meta.AuditRow) error
	// Attempts is a hook's attempt log, oldest first, every sink.
	Attempts(ctx context.Context, tenant string, id envelope.ID) ([]dispatch.Attempt, error)
}

// Error codes of the deliveries endpoints.
const (
	codeDeliveryNotDead  = "delivery_not_dead"
	codeDeliveryPending  = "delivery_pending"
	codeFiltered         = "filtered"
	codeWasQuarantined   = "was_quarantined"
	msgDeliveryNotDead   = "this delivery is pending or in flight; only a dead letter can be retried or dropped"
	msgDeliveriesFailed  = "the deliveries could not be read or changed; the node's log says why"
	defaultDeliveryLimit = 100
	maxDeliveryLimit     = 1000
)

// registerDeliveries adds the routes of the dead-letter endpoints (see the
// package doc), each behind auth's tenant guard.
func registerDeliveries(mux router, auth *Auth, d Deliveries, now func() time.Time, log *zap.Logger) {
	h := &deliveryHandlers{d: d, now: now, log: log}
	route := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, auth.TenantGuard(f)) }
	route("GET /v1/tenants/{tenant}/deliveries", h.list)
	route("POST /v1/tenants/{tenant}/deliveries/retry", h.retryAll)
	route("POST /v1/tenants/{tenant}/deliveries/drop", h.dropAll)
	route("POST /v1/tenants/{tenant}/deliveries/{event_id}/{sink}/retry", h.retryOne)
	route("DELETE /v1/tenants/{tenant}/deliveries/{event_id}/{sink}", h.dropOne)
	route("GET /v1/tenants/{tenant}/hooks/{event_id}/attempts", h.attempts)
	route("POST /v1/tenants/{tenant}/hooks/{event_id}/sinks/{sink}/redeliver", h.redeliver)
}

// deliveryHandlers serves the deliveries endpoints from d; it logs to log
// what a client is not told.
type deliveryHandlers struct {
	d   Deliveries
	now func() time.Time // stamps the audit rows
	log *zap.Logger
}

// Audit actions of the dead-letter changes.
const (
	actionDeadRetry    = "deliveries.retry"
	actionDeadDrop     = "deliveries.drop"
	actionDeadRetryAll = "deliveries.retry_all"
	actionDeadDropAll  = "deliveries.drop_all"
	actionRedeliver    = "hooks.redeliver"
)

// auditRow records a dead-letter change by r's principal, with its
// lifecycle event.
func (h *deliveryHandlers) auditRow(r *http.Request, action, tenant, entity, detail string, ev meta.Event) meta.AuditRow {
	return meta.AuditRow{At: h.now().UTC(), Principal: principalName(r), Action: action, Tenant: tenant,
		Entity: entity, Detail: detail, Outcome: outcomeOK, Event: ev}
}

// deadEvents are the lifecycle event verbs of the dead-letter actions.
var deadEvents = map[string]string{
	actionDeadRetry: "retried", actionDeadDrop: "dropped",
	actionDeadRetryAll: "bulk_retried", actionDeadDropAll: "bulk_dropped",
	actionRedeliver: "redelivered",
}

// bulkEventData is the data of the event of one batch of a change to
// every held hook or dead letter passing f: how many, and the filter.
func bulkEventData(n int, f dispatch.Filter) map[string]any {
	data := map[string]any{"count": n}
	if f.Source != "" {
		data["source"] = f.Source
	}
	if !f.Since.IsZero() {
		data["since"] = stamp(f.Since)
	}
	if !f.Until.IsZero() {
		data["until"] = stamp(f.Until)
	}
	return data
}

// batchAudit makes the audit row of each batch of a change to every dead
// letter passing f: how many, and the source when f names one.
func (h *deliveryHandlers) batchAudit(r *http.Request, action, tenant string, f dispatch.Filter) func(n int) meta.AuditRow {
	return func(n int) meta.AuditRow {
		detail := fmt.Sprintf("%d dead letters", n)
		if f.Source != "" {
			detail += ", source " + f.Source
		}
		return h.auditRow(r, action, tenant, "", detail, changeEvent("delivery", deadEvents[action], tenant, bulkEventData(n, f)))
	}
}

func (h *deliveryHandlers) list(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	q, ok := parseListQuery(w, r)
	if !ok {
		return
	}
	rows, next, err := h.d.Dead(r.Context(), tenant, q.filter, q.cursor, q.limit)
	if err == nil {
		err = checkRowsTenant(rows, tenant)
	}
	if err != nil {
		h.fail(w, r, "cannot list dead letters", err, zap.Any("filter", q.filter), zap.String("cursor", q.cursor))
		return
	}
	writeValue(w, http.StatusOK, newDeliveryList(rows, next))
}

func (h *deliveryHandlers) retryAll(w http.ResponseWriter, r *http.Request) {
	h.all(w, r, "retried", actionDeadRetryAll, h.d.RetryAll, false)
}

func (h *deliveryHandlers) dropAll(w http.ResponseWriter, r *http.Request) {
	h.all(w, r, "dropped", actionDeadDropAll, h.d.DropAll, true)
}

// all serves retry and drop of every dead letter passing the query's
// filter: {"<verb>": n}. needFilter refuses an empty filter without all=true.
func (h *deliveryHandlers) all(w http.ResponseWriter, r *http.Request, verb, action string,
	do func(context.Context, string, dispatch.Filter, func(int) meta.AuditRow) (int, error), needFilter bool) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	f, ok := parseBulkQuery(w, r, "dead letter", verb, needFilter)
	if !ok {
		return
	}
	n, err := do(r.Context(), tenant, f, h.batchAudit(r, action, tenant, f))
	if err != nil {
		h.fail(w, r, "cannot change dead letters", err, zap.String("action", verb), zap.Any("filter", f))
		return
	}
	writeValue(w, http.StatusOK, map[string]int{verb: n})
}

func (h *deliveryHandlers) retryOne(w http.ResponseWriter, r *http.Request) {
	tenant, id, sink, ok := pathDelivery(w, r)
	if !ok {
		return
	}
	row := h.auditRow(r, actionDeadRetry, tenant, id.String(), "sink "+sink,
		changeEvent("delivery", deadEvents[actionDeadRetry], id.String(), map[string]string{"event_id": id.String(), "sink": sink}))
	if err := h.d.Retry(r.Context(), tenant, id, sink, row); err != nil {
		h.fail(w, r, "cannot retry dead letter", err, zap.Stringer("id", id), zap.String("sink", sink))
		return
	}
	writeValue(w, http.StatusOK, map[string]int{"retried": 1})
}

// redeliver sends a hook to one sink again, whatever became of its last
// delivery there (a dead letter is retried).
func (h *deliveryHandlers) redeliver(w http.ResponseWriter, r *http.Request) {
	tenant, id, sink, ok := pathDelivery(w, r)
	if !ok {
		return
	}
	row := h.auditRow(r, actionRedeliver, tenant, id.String(), "sink "+sink,
		changeEvent("delivery", deadEvents[actionRedeliver], id.String(), map[string]string{"event_id": id.String(), "sink": sink}))
	err := h.d.Redeliver(r.Context(), tenant, id, sink, row)
	switch {
	case err == nil:
		writeValue(w, http.StatusOK, map[string]int{"redelivered": 1})
	case errors.Is(err, dispatch.ErrPending):
		writeError(w, http.StatusConflict, codeDeliveryPending, "a delivery of this hook to sink "+strconv.Quote(sink)+" is pending; it is on its way, or waiting for its next attempt")
	case errors.Is(err, dispatch.ErrNoSink):
		writeError(w, http.StatusNotFound, codeNotFound, "the hook's source has no sink "+strconv.Quote(sink))
	case errors.Is(err, dispatch.ErrSourceGone):
		writeError(w, http.StatusConflict, codeSourceGone, "the hook's source no longer exists, so no sink could take it")
	case errors.Is(err, dispatch.ErrFiltered):
		writeError(w, http.StatusConflict, codeFiltered, "the filter of sink "+strconv.Quote(sink)+" does not take this hook")
	case errors.Is(err, dispatch.ErrWasQuarantined):
		writeError(w, http.StatusConflict, codeWasQuarantined, "the hook was held in quarantine; how it was released is not kept once it is delivered, so it is not redelivered")
	case errors.Is(err, dispatch.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "the hook was committed a moment ago and its delivery rows are on their way; retry in a second")
	default:
		h.fail(w, r, "cannot redeliver a hook", err, zap.Stringer("id", id), zap.String("sink", sink))
	}
}

func (h *deliveryHandlers) dropOne(w http.ResponseWriter, r *http.Request) {
	tenant, id, sink, ok := pathDelivery(w, r)
	if !ok {
		return
	}
	row := h.auditRow(r, actionDeadDrop, tenant, id.String(), "sink "+sink,
		changeEvent("delivery", deadEvents[actionDeadDrop], id.String(), map[string]string{"event_id": id.String(), "sink": sink}))
	if err := h.d.Drop(r.Context(), tenant, id, sink, row); err != nil {
		h.fail(w, r, "cannot drop dead letter", err, zap.Stringer("id", id), zap.String("sink", sink))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

func (h *deliveryHandlers) attempts(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	id, err := envelope.ParseID([]byte(r.PathValue("event_id")))
	if err != nil {
		writeNotFound(w)
		return
	}
	as, err := h.d.Attempts(r.Context(), tenant, id)
	if err != nil {
		h.fail(w, r, "cannot read attempt log", err, zap.Stringer("id", id))
		return
	}
	writeValue(w, http.StatusOK, newAttemptList(as))
}

// fail answers err: the one 404, a 409, a 400 for a cursor, or a 500 whose
// cause goes to the log with msg and fields, never to the client.
func (h *deliveryHandlers) fail(w http.ResponseWriter, r *http.Request, msg string, err error, fields ...zap.Field) {
	switch {
	case errors.Is(err, dispatch.ErrNoDelivery):
		writeNotFound(w)
	case errors.Is(err, dispatch.ErrTenantErasing):
		writeErasing(w, r.PathValue("tenant"))
	case errors.Is(err, dispatch.ErrNotDead):
		writeError(w, http.StatusConflict, codeDeliveryNotDead, msgDeliveryNotDead)
	case errors.Is(err, dispatch.ErrBadCursor):
		writeError(w, http.StatusBadRequest, codeInvalidQuery, "cursor: not a next_cursor this listing returned; start again without cursor")
	default:
		fields = append(fields, zap.String("tenant", r.PathValue("tenant")), zap.Error(err))
		h.log.Error(msg, fields...)
		writeError(w, http.StatusInternalServerError, codeInternal, msgDeliveriesFailed)
	}
}

// writeNotFound is the admin API's one 404 (the hook fetch's): an unknown
// id, one that does not parse, another tenant's and an invalid name all get
// it, byte for byte.
func writeNotFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
}

// pathTenant returns the {tenant} of r, or answers the one 404 when it is
// not a valid tenant name (only a tenant:* token gets that far).
func pathTenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant := r.PathValue("tenant")
	if !config.ValidName([]byte(tenant)) {
		writeNotFound(w)
		return "", false
	}
	return tenant, true
}

// pathDelivery returns the {tenant}, {event_id} and {sink} of r, or answers
// the one 404 when one of them does not parse.
func pathDelivery(w http.ResponseWriter, r *http.Request) (string, envelope.ID, string, bool) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return "", envelope.ID{}, "", false
	}
	id, err := envelope.ParseID([]byte(r.PathValue("event_id")))
	sink := r.PathValue("sink")
	if err != nil || !config.ValidName([]byte(sink)) {
		writeNotFound(w)
		return "", envelope.ID{}, "", false
	}
	return tenant, id, sink, true
}
