package admin

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
)

// HookFetcher reads stored hooks by event id: *segment.Store is one, as
// it is (a hook retention removed from local disk is read from the
// archive behind it). Fetch returns the hook with id, which the caller
// owns; segment.ErrNotFound and segment.ErrRemoved (no archive to read it
// from) are the one 404, any other error a 500. The handler checks the
// TenantID of what Fetch returns itself, and asks Options.Erase whether
// the hook's tenant was erased under its ordinal (410). It must be safe
// for concurrent use.
type HookFetcher interface {
	Fetch(id envelope.ID) (*envelope.Envelope, error)
}

// The stages that serve the admin API satisfy its interfaces as they are.
var (
	_ HookFetcher  = (*segment.Store)(nil)
	_ DamageReport = (*segment.Store)(nil)
	_ Deliveries   = (*dispatch.Dispatcher)(nil)
	_ Quarantine   = (*dispatch.Dispatcher)(nil)
	// *tenant.Policy is a RateLimits; cli holds that (admin does not
	// import tenant).
	_ TenantDirectory = (*meta.Store)(nil)
	_ TenantCounter   = (*dispatch.Dispatcher)(nil)
	_ OverrideStore   = (*meta.Store)(nil)
	_ AuditLog        = (*meta.Store)(nil)
	_ EventLog        = (*lifecycle.Lifecycle)(nil)
)

// Options is what Register needs.
type Options struct {
	// Tokens are the bearer tokens (config admin.tokens).
	Tokens []config.AdminToken
	// Hooks serves GET /v1/tenants/{tenant}/hooks/{id}, and the hooks a
	// release verifies again; nil leaves the route out.
	Hooks HookFetcher
	// Deliveries serves the dead-letter and attempt-log routes (see the
	// package doc); nil leaves them out.
	Deliveries Deliveries
	// Quarantine serves the quarantine pen's routes; nil leaves them out.
	// They need Hooks and Sources too.
	Quarantine Quarantine
	// Sources is the node's source store: it serves the source and route
	// routes (a source.Writer takes writes; any other store answers them
	// 409 source_store_read_only), and a release verifies a hook again
	// with its source's secrets. nil leaves the source and route routes
	// out.
	Sources source.Store
	// Backlog answers a write that removes a source or a sink with
	// undelivered hooks (409, or ?deliveries=dead_letter); nil: the node
	// holds no deliveries (wal.type: none).
	Backlog Backlog
	// Resolver is route_resolver: answers show the URL path a source or a
	// token answers on.
	Resolver config.RouteResolver
	// Health makes /healthz and /readyz answer 503 once storage failed;
	// nil: nothing to ask (wal.type: none).
	Health Health
	// Storage makes /readyz answer 503, saying why, while the node
	// refuses hooks for a full disk; nil: nothing to ask.
	Storage Storage
	// Damage adds a line per damaged local segment to /readyz (Listen
	// only); nil: none.
	Damage DamageReport
	// Logger logs what a client is not told (500s); nil: no logging.
	Logger *zap.Logger
	// Now stamps the audit rows; nil: time.Now.
	Now func() time.Time
	// Tenants serves GET /v1/tenants and /v1/tenants/{tenant} (the meta
	// store); nil leaves them out.
	Tenants TenantDirectory
	// Counts gives each tenant's committed hooks and bytes (the
	// dispatcher's live counts); nil: they are null.
	Counts TenantCounter
	// Limits and Overrides serve the rate_limit routes (the policy the
	// router reads, the meta store that keeps overrides with their audit
	// rows); both or neither.
	Limits    RateLimits
	Overrides OverrideStore
	// Audit serves GET /v1/audit (the meta store); nil leaves it out.
	Audit AuditLog
	// Events serves GET /v1/events, the lifecycle replay (the node's
	// *lifecycle.Lifecycle, which a node always has); nil leaves it out.
	Events EventLog
	// Claims serves GET /v1/tenants/{tenant}/claims/{ref} (the node's
	// claim stores); nil leaves it out.
	Claims ClaimReader
	// Erase serves DELETE /v1/tenants/{tenant} and GET
	// /v1/tenants/{tenant}/erase, refuses the writes under
	// /v1/tenants/{tenant}/ of a tenant being erased (409
	// tenant_erasing) and makes a fetched hook of an erased tenant 410
	// gone; nil leaves the routes out and checks nothing.
	Erase TenantEraser
	// Listener bounds the admin listener (Listen only).
	Listener ListenerOptions
}

// Validate reports what is wrong with o (the tokens, see ValidateTokens).
func (o *Options) Validate() error { return ValidateTokens(o.Tokens) }

// Register adds the admin API's /v1 routes to mux, each behind the token
// guard but GET /v1/openapi.json (the API's description, no data: open).
// It fails, naming the token and field, when a token is invalid.
func Register(mux *http.ServeMux, o Options) error {
	auth, err := NewAuth(o.Tokens)
	if err != nil {
		return err
	}
	return register(mux, auth, o)
}

// register adds the /v1 routes, behind auth's guards, to mux: the
// listener's *http.ServeMux, or the *patternList of Patterns.
func register(mux router, auth *Auth, o Options) error {
	if (o.Limits == nil) != (o.Overrides == nil) {
		return errors.New("BUG: admin: Options.Limits without Options.Overrides, or the other way round")
	}
	if o.Quarantine != nil && (o.Hooks == nil || o.Sources == nil) {
		return errors.New("BUG: admin: the quarantine routes without Options.Hooks and Options.Sources (a release verifies the hook again)")
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var hookGone func(tenant string, ord uint32) (bool, error)
	if o.Erase != nil {
		auth = auth.withErasing(o.Erase.Erasing)
		hookGone = o.Erase.HookGone
	}
	mux.Handle("GET /v1/openapi.json", http.HandlerFunc(serveOpenAPI))
	if o.Sources != nil {
		sh := &sourceHandlers{store: o.Sources, backlog: o.Backlog, resolver: o.Resolver, log: log}
		registerSources(mux, auth, sh)
		registerRoutes(mux, auth, routeHandlers{sh})
	}
	if o.Hooks != nil {
		mux.Handle("GET /v1/tenants/{tenant}/hooks/{event_id}", auth.TenantGuard(&hookHandler{fetch: o.Hooks, gone: hookGone, log: log}))
	}
	if o.Claims != nil {
		mux.Handle("GET /v1/tenants/{tenant}/claims/{"+claimRefWildcard+"}", auth.TenantGuard(&claimHandler{claims: o.Claims, log: log}))
	}
	if o.Deliveries != nil {
		registerDeliveries(mux, auth, o.Deliveries, now, log)
	}
	registerTenants(mux, auth, &tenantHandlers{dir: o.Tenants, counts: o.Counts, limits: o.Limits, overrides: o.Overrides,
		audit: o.Audit, now: now, log: log})
	if o.Events != nil {
		registerEvents(mux, auth, &eventHandlers{events: o.Events, log: log})
	}
	if o.Quarantine != nil {
		registerQuarantine(mux, auth, &quarantineHandlers{q: o.Quarantine, hooks: o.Hooks, sources: o.Sources, now: now, log: log})
	}
	if o.Erase != nil {
		registerErase(mux, auth, &eraseHandlers{er: o.Erase, log: log})
	}
	return nil
}

// hookHandler serves GET /v1/tenants/{tenant}/hooks/{event_id}: the hook's JSON
// form (package envelope) and a newline, or 410 gone when its tenant was
// erased under its ordinal (whether it was read from a local segment or
// the archive).
type hookHandler struct {
	fetch HookFetcher
	gone  func(tenant string, ord uint32) (bool, error) // nil: no erase to ask
	log   *zap.Logger
}

// corruptFetches counts fetches that found the hook's segment damaged.
var corruptFetches = metrics.NewCounter(`ankusa_admin_hook_fetch_corrupt_total`)

// notFoundHook is the one 404 for an unknown id, an id that does not parse
// and another tenant's hook, so they cannot be told apart.
const notFoundHook = "no hook with this id"

func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, text := r.PathValue("tenant"), r.PathValue("event_id")
	id, err := envelope.ParseID([]byte(text))
	if err != nil || !config.ValidName([]byte(tenant)) {
		writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
		return
	}
	e, err := h.fetch.Fetch(id)
	var corrupt *segment.CorruptError
	switch {
	case errors.Is(err, segment.ErrNotFound) || errors.Is(err, segment.ErrRemoved):
		writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
		return
	case errors.As(err, &corrupt):
		h.log.Error("a hook's segment is damaged", zap.String("tenant", tenant), zap.Stringer("id", id),
			zap.String("segment", corrupt.File), zap.Int64("offset", corrupt.Offset), zap.Error(err))
		corruptFetches.Inc()
		writeError(w, http.StatusInternalServerError, codeCorrupt, fmt.Sprintf("the hook's segment %s is damaged at offset %d (%s); the node's log says more",
			filepath.Base(corrupt.File), corrupt.Offset, corrupt.Reason))
		return
	case err == nil && e == nil:
		err = errors.New("BUG: the fetcher returned neither a hook nor an error")
		fallthrough
	case err != nil:
		h.log.Error("cannot fetch hook", zap.String("tenant", tenant), zap.Stringer("id", id), zap.Error(err))
		writeError(w, http.StatusInternalServerError, codeInternal, "the hook could not be read; the node's log says why")
		return
	}
	if e.TenantID != tenant {
		writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
		return
	}
	if h.gone != nil {
		gone, err := h.gone(tenant, e.TenantOrdinal)
		if err != nil {
			h.log.Error("cannot tell whether a hook's tenant was erased", zap.String("tenant", tenant), zap.Stringer("id", id), zap.Error(err))
			writeError(w, http.StatusInternalServerError, codeInternal, "the hook could not be read; the node's log says why")
			return
		}
		if gone {
			writeError(w, http.StatusGone, codeGone, "this hook's tenant was erased")
			return
		}
	}
	body := e.AppendJSON(make([]byte, 0, 1024+len(e.Body)*4/3))
	writeJSON(w, http.StatusOK, append(body, '\n'))
}
