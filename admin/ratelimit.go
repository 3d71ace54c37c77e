package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// RateLimits is every tenant's limits as the router reads them:
// *tenant.Policy is one, as it is (the limiter and the queue caps read it
// per request, so a change serves the next request). It must be safe for
// concurrent use.
type RateLimits interface {
	// Of is the tenant's effective limits; finite is false when its rate is unbounded.
	Of(tenant string) (rl config.RateLimit, finite bool)
	// Override is the tenant's runtime override, if it has one.
	Override(tenant string) (config.RateLimit, bool)
	// SetOverride and ClearOverride change it once save has made the change durable.
	SetOverride(tenant string, rl config.RateLimit, save func() error) error
	ClearOverride(tenant string, save func() error) error
}

// OverrideStore writes a rate-limit override with its audit row in one
// synced batch: *meta.Store is one, as it is.
type OverrideStore interface {
	SetRateLimitOverride(tenant string, rl config.RateLimit, audit meta.AuditRow) error
	DeleteRateLimitOverride(tenant string, audit meta.AuditRow) error
}

// Audit actions of the rate-limit routes.
const (
	actionRateLimitSet   = "tenant.rate_limit.set"
	actionRateLimitClear = "tenant.rate_limit.clear"
	outcomeOK            = "ok"
)

// jsonRate is a rate in hooks per second, or "inf" for no limit (JSON has
// no infinity).
type jsonRate float64

func (r jsonRate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

func (r *jsonRate) UnmarshalJSON(b []byte) error {
	if string(b) == `"inf"` {
		*r = jsonRate(math.Inf(1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return errors.New(`rate: must be a number of hooks per second above 0, or "inf" for no limit`)
	}
	*r = jsonRate(f)
	return nil
}

// rateLimitJSON is a tenant's limits in the API.
type rateLimitJSON struct {
	Rate          jsonRate `json:"rate"`
	Burst         int      `json:"burst"`
	MaxQueue      int      `json:"max_queue"`
	MaxQueueBytes int64    `json:"max_queue_bytes"`
}

func newRateLimitJSON(rl config.RateLimit) rateLimitJSON {
	return rateLimitJSON{Rate: jsonRate(rl.Rate), Burst: rl.Burst, MaxQueue: rl.MaxQueue, MaxQueueBytes: int64(rl.MaxQueueBytes)}
}

// effectiveJSON is the limits that apply; limited is false when the rate
// is unbounded (rate "inf", or no finite rate_limits.default).
type effectiveJSON struct {
	rateLimitJSON
	Limited bool `json:"limited"`
}

type rateLimitAnswer struct {
	Tenant    string         `json:"tenant"`
	Effective effectiveJSON  `json:"effective"`
	Override  *rateLimitJSON `json:"override"`
}

func (h *tenantHandlers) answerRateLimit(w http.ResponseWriter, status int, tenant string) {
	rl, finite := h.limits.Of(tenant)
	out := rateLimitAnswer{Tenant: tenant, Effective: effectiveJSON{rateLimitJSON: newRateLimitJSON(rl), Limited: finite}}
	if !finite && !math.IsInf(rl.Rate, 1) {
		out.Effective.Rate = jsonRate(math.Inf(1))
	}
	if o, ok := h.limits.Override(tenant); ok {
		j := newRateLimitJSON(o)
		out.Override = &j
	}
	writeValue(w, status, out)
}

// getRateLimit serves GET /v1/tenants/{tenant}/rate_limit, for any
// tenant name (an override may be set before the tenant's first hook).
func (h *tenantHandlers) getRateLimit(w http.ResponseWriter, r *http.Request) {
	h.answerRateLimit(w, http.StatusOK, r.PathValue("tenant"))
}

// rateLimitBody is the body of PUT .../rate_limit: every field required.
type rateLimitBody struct {
	Rate          *jsonRate `json:"rate"`
	Burst         *int      `json:"burst"`
	MaxQueue      *int      `json:"max_queue"`
	MaxQueueBytes *int64    `json:"max_queue_bytes"`
}

// check turns the body into an override, or says what is wrong, naming
// the field.
func (b *rateLimitBody) check() (config.RateLimit, string) {
	switch {
	case b.Rate == nil:
		return config.RateLimit{}, `rate: required (hooks per second, or "inf" for no limit)`
	case b.Burst == nil:
		return config.RateLimit{}, "burst: required (the most hooks at once)"
	case b.MaxQueue == nil:
		return config.RateLimit{}, "max_queue: required (hooks waiting to be committed; 0 for no cap)"
	case b.MaxQueueBytes == nil:
		return config.RateLimit{}, "max_queue_bytes: required (bytes waiting to be committed; 0 for no cap)"
	}
	rl := config.RateLimit{Rate: float64(*b.Rate), Burst: *b.Burst, MaxQueue: *b.MaxQueue, MaxQueueBytes: config.Size(*b.MaxQueueBytes)}
	finite := !math.IsInf(rl.Rate, 1)
	switch {
	case math.IsNaN(rl.Rate) || rl.Rate <= 0:
		return rl, fmt.Sprintf(`rate: %v must be above 0 (hooks per second), or "inf" for no limit`, rl.Rate)
	case rl.Burst < 0 || finite && rl.Burst < 1:
		return rl, fmt.Sprintf("burst: %d must be at least 1 with a finite rate (0 or more with \"inf\")", rl.Burst)
	case rl.MaxQueue < 0:
		return rl, fmt.Sprintf("max_queue: %d must not be negative (0 for no cap)", rl.MaxQueue)
	case rl.MaxQueueBytes < 0:
		return rl, fmt.Sprintf("max_queue_bytes: %d must not be negative (0 for no cap)", rl.MaxQueueBytes)
	}
	return rl, ""
}

// putRateLimit serves PUT .../rate_limit: the override and its audit row
// in one synced batch, then the policy the router reads.
func (h *tenantHandlers) putRateLimit(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	var b rateLimitBody
	if !decodeJSON(w, r, &b) {
		return
	}
	rl, msg := b.check()
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidJSON, msg)
		return
	}
	row := h.auditRow(r, actionRateLimitSet, tenant)
	err := h.limits.SetOverride(tenant, rl, func() error { return h.overrides.SetRateLimitOverride(tenant, rl, row) })
	if err != nil {
		h.fail(w, "cannot set a rate limit override", err, zap.String("tenant", tenant))
		return
	}
	h.answerRateLimit(w, http.StatusOK, tenant)
}

// deleteRateLimit serves DELETE .../rate_limit: 204, or 404 when the
// tenant has no override.
func (h *tenantHandlers) deleteRateLimit(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	row := h.auditRow(r, actionRateLimitClear, tenant)
	err := h.limits.ClearOverride(tenant, func() error {
		if _, ok := h.limits.Override(tenant); !ok {
			return errNoOverride
		}
		return h.overrides.DeleteRateLimitOverride(tenant, row)
	})
	switch {
	case errors.Is(err, errNoOverride):
		notFoundOverride(w, tenant)
	case err != nil:
		h.fail(w, "cannot clear a rate limit override", err, zap.String("tenant", tenant))
	default:
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	}
}

// auditRow records a change of the tenant's limits by r's principal.
func (h *tenantHandlers) auditRow(r *http.Request, action, tenant string) meta.AuditRow {
	return meta.AuditRow{At: h.now().UTC(), Principal: principalName(r), Action: action, Tenant: tenant,
		Entity: "rate_limit", Outcome: outcomeOK}
}
