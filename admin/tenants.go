package admin

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// TenantDirectory is the tenants the node knows (the meta store's mirror
// of the WAL's tenant records): *meta.Store is one, as it is. It must be
// safe for concurrent use.
type TenantDirectory interface {
	// TenantsAfter lists the tenants after after in name order, at most limit.
	TenantsAfter(after string, limit int) ([]meta.TenantInfo, error)
	// TenantInfo is one tenant; found is false for one the node does not know.
	TenantInfo(name string) (t meta.TenantInfo, found bool, err error)
}

// TenantCounter is what each tenant has committed: *dispatch.Dispatcher
// is one, as it is, and its counts are live (every hook whose delivery
// rows are written), ahead of the ones the meta store persists with the
// dispatch checkpoint. It must be safe for concurrent use.
type TenantCounter interface {
	TenantCounts(ord uint32) meta.TenantCounts
}

// tenantHandlers serves the tenants, rate-limit and audit routes.
type tenantHandlers struct {
	dir       TenantDirectory
	counts    TenantCounter // nil: hooks and bytes are null
	limits    RateLimits    // nil: rate_limit is null, the rate_limit routes are out
	overrides OverrideStore
	audit     AuditLog
	now       func() time.Time
	log       *zap.Logger
}

// tenantJSON is one tenant in GET /v1/tenants and GET /v1/tenants/{t}.
// first_seen is null when the node that mirrored the tenant did not
// record it; hooks and bytes when the node runs no dispatch stage.
type tenantJSON struct {
	Tenant    string         `json:"tenant"`
	Ordinal   uint32         `json:"ordinal"`
	FirstSeen *string        `json:"first_seen"`
	Hooks     *uint64        `json:"hooks"`
	Bytes     *uint64        `json:"bytes"`
	RateLimit *rateLimitJSON `json:"rate_limit"`
}

type tenantList struct {
	Tenants    []tenantJSON `json:"tenants"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

func (h *tenantHandlers) tenantOf(t meta.TenantInfo) tenantJSON {
	out := tenantJSON{Tenant: t.Name, Ordinal: t.Ordinal}
	if !t.FirstSeen.IsZero() {
		s := stamp(t.FirstSeen)
		out.FirstSeen = &s
	}
	if h.counts != nil {
		c := h.counts.TenantCounts(t.Ordinal)
		out.Hooks, out.Bytes = &c.Hooks, &c.Bytes
	}
	if h.limits != nil {
		if rl, ok := h.limits.Override(t.Name); ok {
			j := newRateLimitJSON(rl)
			out.RateLimit = &j
		}
	}
	return out
}

// list serves GET /v1/tenants: every tenant the node knows, in name order;
// the cursor is the hex of the last name of the page.
func (h *tenantHandlers) list(w http.ResponseWriter, r *http.Request) {
	if _, msg := queryParams(r, "cursor", "limit"); msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	cursor, limit, err := pageParams(r)
	if err != nil {
		writeQueryError(w, err)
		return
	}
	after, err := hex.DecodeString(cursor)
	if err != nil || cursor != "" && !config.ValidName(after) {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, "cursor: not a next_cursor this listing returned; start again without cursor")
		return
	}
	ts, err := h.dir.TenantsAfter(string(after), limit+1)
	if err != nil {
		h.fail(w, "cannot list tenants", err)
		return
	}
	out := tenantList{Tenants: make([]tenantJSON, 0, min(len(ts), limit))}
	if len(ts) > limit {
		ts = ts[:limit]
		out.NextCursor = hex.EncodeToString([]byte(ts[limit-1].Name))
	}
	for _, t := range ts {
		out.Tenants = append(out.Tenants, h.tenantOf(t))
	}
	writeValue(w, http.StatusOK, out)
}

// one serves GET /v1/tenants/{tenant}.
func (h *tenantHandlers) one(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("tenant")
	t, found, err := h.dir.TenantInfo(name)
	switch {
	case err != nil:
		h.fail(w, "cannot read a tenant", err, zap.String("tenant", name))
	case !found:
		writeError(w, http.StatusNotFound, codeNotFound, "this node knows no tenant "+name)
	default:
		writeValue(w, http.StatusOK, h.tenantOf(t))
	}
}

// fail answers a 500 whose cause goes to the log.
func (h *tenantHandlers) fail(w http.ResponseWriter, msg string, err error, fields ...zap.Field) {
	h.log.Error(msg, append(fields, zap.Error(err))...)
	writeError(w, http.StatusInternalServerError, codeInternal, "the node could not read or change this; its log says why")
}

// registerTenants adds the tenants, rate-limit and audit routes.
func registerTenants(mux router, auth *Auth, h *tenantHandlers) {
	if h.dir != nil {
		mux.Handle("GET /v1/tenants", auth.TenantsReadGuard(http.HandlerFunc(h.list)))
		mux.Handle("GET /v1/tenants/{tenant}", auth.TenantGuard(http.HandlerFunc(h.one)))
	}
	if h.limits != nil && h.overrides != nil {
		mux.Handle("GET /v1/tenants/{tenant}/rate_limit", auth.TenantGuard(http.HandlerFunc(h.getRateLimit)))
		mux.Handle("PUT /v1/tenants/{tenant}/rate_limit", auth.TenantsWriteGuard(http.HandlerFunc(h.putRateLimit)))
		mux.Handle("DELETE /v1/tenants/{tenant}/rate_limit", auth.TenantsWriteGuard(http.HandlerFunc(h.deleteRateLimit)))
	}
	if h.audit != nil {
		mux.Handle("GET /v1/audit", auth.Guard(needAuditScope, http.HandlerFunc(h.listAudit)))
	}
}

// errNoOverride: a DELETE of an override the tenant does not have (404).
var errNoOverride = errors.New("admin: no override")

// notFoundOverride is the 404 of a DELETE with no override to remove.
func notFoundOverride(w http.ResponseWriter, tenant string) {
	writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("tenant %s has no rate limit override", tenant))
}
