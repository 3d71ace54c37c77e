package admin

import (
	"context"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
)

// HookFetcher reads stored hooks by event id (package segment, later with
// the archive behind it). Implementations must be safe for concurrent use.
type HookFetcher interface {
	// Fetch returns the hook with id. The caller owns the envelope. An
	// unknown id is an error wrapping ErrHookNotFound; a hook of an erased
	// tenant is one wrapping ErrHookGone. tenant is the tenant asking: a
	// fetcher answers ErrHookGone only for that tenant's hooks (and
	// ErrHookNotFound for other tenants'), so a 410 tells no tenant about
	// another's erased hooks. The handler checks the TenantID of what Fetch
	// returns itself; Fetch need not. Any other error is a 500.
	Fetch(ctx context.Context, tenant string, id envelope.ID) (*envelope.Envelope, error)
}

// Options is what Register needs.
type Options struct {
	// Tokens are the bearer tokens (config admin.tokens).
	Tokens []config.AdminToken
	// Hooks serves GET /v1/tenants/{tenant}/hooks/{id}; nil leaves the
	// route out.
	Hooks HookFetcher
	// Deliveries serves the dead-letter and attempt-log routes (see the
	// package doc); nil leaves them out.
	Deliveries Deliveries
	// Quarantine serves the quarantine pen's routes; nil leaves them out.
	Quarantine Quarantine
	// Health makes /healthz and /readyz answer 503 once storage failed;
	// nil: nothing to ask (wal.type: none).
	Health Health
	// Logger logs what a client is not told (500s); nil: no logging.
	Logger *zap.Logger
}

// Validate reports what is wrong with o (the tokens, see ValidateTokens).
func (o *Options) Validate() error { return ValidateTokens(o.Tokens) }

// Register adds the admin API's /v1 routes to mux, each behind the token
// guard. It fails, naming the token and field, when a token is invalid.
func Register(mux *http.ServeMux, o Options) error {
	auth, err := NewAuth(o.Tokens)
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if o.Hooks != nil {
		mux.Handle("GET /v1/tenants/{tenant}/hooks/{id}", auth.TenantGuard(&hookHandler{fetch: o.Hooks, log: log}))
	}
	if o.Deliveries != nil {
		registerDeliveries(mux, auth, o.Deliveries, log)
	}
	if o.Quarantine != nil {
		registerQuarantine(mux, auth, o.Quarantine, log)
	}
	return nil
}

// hookHandler serves GET /v1/tenants/{tenant}/hooks/{id}: the hook's JSON
// form (package envelope) and a newline.
type hookHandler struct {
	fetch HookFetcher
	log   *zap.Logger
}

// notFoundHook is the one 404 for an unknown id, an id that does not parse
// and another tenant's hook, so they cannot be told apart.
const notFoundHook = "no hook with this id"

func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, text := r.PathValue("tenant"), r.PathValue("id")
	id, err := envelope.ParseID([]byte(text))
	if err != nil || !config.ValidName([]byte(tenant)) {
		writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
		return
	}
	e, err := h.fetch.Fetch(r.Context(), tenant, id)
	switch {
	case errors.Is(err, ErrHookNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, notFoundHook)
		return
	case errors.Is(err, ErrHookGone):
		writeError(w, http.StatusGone, codeGone, "this hook's tenant was erased")
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
	body := e.AppendJSON(make([]byte, 0, 1024+len(e.Body)*4/3))
	writeJSON(w, http.StatusOK, append(body, '\n'))
}
