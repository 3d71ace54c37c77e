package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ankusa/ankusa/config"
)

// Scopes a token may hold; a tenant scope is ScopeTenantPrefix + a tenant
// name, or ScopeAllTenants.
const (
	ScopeTenantsRead  = "tenants:read"
	ScopeTenantsWrite = "tenants:write"
	ScopeTenantPrefix = "tenant:"
	ScopeAllTenants   = "tenant:*"
	ScopeDebug        = "debug"
)

// Principal is the holder of a configured token: its name (what audit rows
// record) and its scopes. It is immutable and safe for concurrent use.
type Principal struct {
	Name         string
	tenantsRead  bool
	tenantsWrite bool
	allTenants   bool
	debug        bool
	tenants      []string
}

// CanTenant reports whether p may act under /v1/tenants/<tenant>/
// (tenant:<tenant> or tenant:*).
func (p *Principal) CanTenant(tenant string) bool {
	if p.allTenants {
		return true
	}
	for _, t := range p.tenants {
		if t == tenant {
			return true
		}
	}
	return false
}

// CanReadTenants reports whether p holds tenants:read.
func (p *Principal) CanReadTenants() bool { return p.tenantsRead }

// CanWriteTenants reports whether p holds tenants:write.
func (p *Principal) CanWriteTenants() bool { return p.tenantsWrite }

// CanDebug reports whether p holds debug (the profiles under
// /debug/pprof/).
func (p *Principal) CanDebug() bool { return p.debug }

// CanAllowPrivate reports whether p may turn a sink's SSRF guard off
// (allow_private: true): an operator's token (tenant:* or tenants:write),
// never one that holds only tenant scopes, whose holder could otherwise
// point a sink at the node's own network.
func (p *Principal) CanAllowPrivate() bool { return p.allTenants || p.tenantsWrite }

// OnlyTenants reports whether p sees tenants only through tenant scopes:
// neither tenants:read nor tenant:*.
func (p *Principal) OnlyTenants() bool { return !p.tenantsRead && !p.allTenants }

// credential is one configured token.
type credential struct {
	digest    [sha256.Size]byte
	principal Principal
}

// Auth checks bearer tokens against the configured digests. It is
// immutable after NewAuth and safe for concurrent use.
type Auth struct {
	creds []credential
	// erasing, when set, refuses the writes under /v1/tenants/{tenant}/
	// of a tenant being erased (refuseErasing).
	erasing func(tenant string) bool
}

// withErasing is a copy of a whose guards refuse, after admitting them,
// the writes under /v1/tenants/{tenant}/ of a tenant erasing reports
// being erased (409 tenant_erasing). The copy shares a's credentials.
func (a *Auth) withErasing(erasing func(tenant string) bool) *Auth {
	c := *a
	c.erasing = erasing
	return &c
}

// NewAuth checks the configured tokens (see ValidateTokens) and returns the
// guard that knows them. With no tokens every request is 401.
func NewAuth(tokens []config.AdminToken) (*Auth, error) {
	if err := ValidateTokens(tokens); err != nil {
		return nil, err
	}
	a := &Auth{creds: make([]credential, len(tokens))}
	for i, t := range tokens {
		c := &a.creds[i]
		if _, err := hex.Decode(c.digest[:], []byte(t.SHA256)); err != nil {
			panic("BUG: a validated sha256 does not decode: " + err.Error())
		}
		c.principal.Name = t.Name
		for _, s := range t.Scopes {
			switch s {
			case ScopeTenantsRead:
				c.principal.tenantsRead = true
			case ScopeTenantsWrite:
				c.principal.tenantsWrite = true
			case ScopeAllTenants:
				c.principal.allTenants = true
			case ScopeDebug:
				c.principal.debug = true
			default:
				c.principal.tenants = append(c.principal.tenants, strings.TrimPrefix(s, ScopeTenantPrefix))
			}
		}
	}
	return a, nil
}

// ValidateTokens returns every problem of the admin.tokens section, each
// naming the token ("admin.tokens[1] (ci): ...") and the field: a name is
// required and unique, sha256 is 64 hex characters (the SHA-256 of the
// token, not the token) and unique, and each scope is one of tenants:read,
// tenants:write, tenant:*, tenant:<t> with t a valid tenant name, and
// debug.
//
// config.Validate checks the sha256 form as well; the rest is checked here,
// because config cannot import this package.
func ValidateTokens(tokens []config.AdminToken) error {
	var errs []error
	bad := func(i int, format string, args ...any) {
		at := fmt.Sprintf("admin.tokens[%d] (%s): ", i, tokens[i].Name)
		errs = append(errs, errors.New(at+fmt.Sprintf(format, args...)))
	}
	names := map[string]int{}
	digests := map[string]int{}
	for i, t := range tokens {
		if t.Name == "" {
			bad(i, "name is required (it is the principal audit rows record)")
		} else if j, dup := names[t.Name]; dup {
			bad(i, "name %q is also admin.tokens[%d]; each token needs its own name", t.Name, j)
		} else {
			names[t.Name] = i
		}
		if len(t.SHA256) != 2*sha256.Size || !isHex(t.SHA256) {
			bad(i, "sha256 must be 64 hex characters, the SHA-256 of the token (for example: printf %%s \"$TOKEN\" | sha256sum)")
		} else if j, dup := digests[strings.ToLower(t.SHA256)]; dup {
			bad(i, "sha256 is also the digest of admin.tokens[%d] (%s); each token must be distinct", j, tokens[j].Name)
		} else {
			digests[strings.ToLower(t.SHA256)] = i
		}
		for _, s := range t.Scopes {
			if err := checkScope(s); err != nil {
				bad(i, "scopes: %v", err)
			}
		}
	}
	return errors.Join(errs...)
}

func checkScope(s string) error {
	switch {
	case s == ScopeTenantsRead, s == ScopeTenantsWrite, s == ScopeAllTenants, s == ScopeDebug:
		return nil
	case strings.HasPrefix(s, ScopeTenantPrefix):
		if !config.ValidName([]byte(s[len(ScopeTenantPrefix):])) {
			return fmt.Errorf("%q names no valid tenant (a tenant name matches %s)", s, config.NameRE)
		}
		return nil
	}
	return fmt.Errorf("%q is not a scope (%s, %s, %s<tenant>, %s, %s)", s, ScopeTenantsRead, ScopeTenantsWrite, ScopeTenantPrefix, ScopeAllTenants, ScopeDebug)
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// compareDigest is subtle.ConstantTimeCompare; tests count its calls.
var compareDigest = subtle.ConstantTimeCompare

// Authenticate returns the principal whose token r carries, or a message
// saying why there is none. It hashes the token and compares the digest with
// every configured one, never stopping early, so the time it takes does not
// depend on which token matched or whether one did.
func (a *Auth) Authenticate(r *http.Request) (*Principal, string) {
	token, ok := bearerToken(r.Header)
	if !ok {
		return nil, "send the header Authorization: Bearer <token>"
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range a.creds {
		eq := compareDigest(sum[:], a.creds[i].digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil, "the bearer token is not one of admin.tokens"
	}
	return &a.creds[found].principal, ""
}

// bearerToken returns the token of the one Authorization header of h, if it
// is "Bearer <token>" (the scheme in any case, RFC 7235).
func bearerToken(h http.Header) (string, bool) {
	vs := h.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", false
	}
	return token, true
}

// Guard serves h to requests whose principal check admits, answering in
// this order: 401 without a known token (WWW-Authenticate: Bearer); 400
// invalid_name when a wildcard of the route's pattern holds a value
// outside its grammar (checkPathValues), before any scope is looked at;
// 403 when check returns what is missing (it returns "" to admit); 409
// tenant_erasing for a write under /v1/tenants/{tenant}/ while the
// tenant is being erased (an Auth made by withErasing). h finds the
// principal in the request's context (PrincipalFrom).
func (a *Auth) Guard(check func(p *Principal, r *http.Request) (missing string), h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := a.authenticate(w, r)
		if !ok {
			return
		}
		if msg := checkPathValues(r); msg != "" {
			writeError(w, http.StatusBadRequest, codeInvalidName, msg)
			return
		}
		if missing := check(p, r); missing != "" {
			writeError(w, http.StatusForbidden, codeForbidden, fmt.Sprintf("token %q lacks the scope %s", p.Name, missing))
			return
		}
		if a.erasing != nil && refuseErasing(w, r, a.erasing) {
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// authenticate returns r's principal, or answers 401.
func (a *Auth) authenticate(w http.ResponseWriter, r *http.Request) (*Principal, bool) {
	p, why := a.Authenticate(r)
	if p == nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeError(w, http.StatusUnauthorized, codeUnauthorized, why)
		return nil, false
	}
	return p, true
}

// TenantGuard guards a handler under /v1/tenants/{tenant}/: it needs
// tenant:<tenant> or tenant:*.
func (a *Auth) TenantGuard(h http.Handler) http.Handler { return a.Guard(needTenant, h) }

// TenantsReadGuard guards a node-wide read: it needs tenants:read.
func (a *Auth) TenantsReadGuard(h http.Handler) http.Handler { return a.Guard(needTenantsRead, h) }

// TenantsWriteGuard guards a change of tenant-level settings: it needs
// tenants:write.
func (a *Auth) TenantsWriteGuard(h http.Handler) http.Handler { return a.Guard(needTenantsWrite, h) }

// DebugGuard guards the profiles: it needs debug.
func (a *Auth) DebugGuard(h http.Handler) http.Handler { return a.Guard(needDebug, h) }

// The checks of the guards above, for Guard.
func needTenant(p *Principal, r *http.Request) string {
	if t := r.PathValue("tenant"); !p.CanTenant(t) {
		return ScopeTenantPrefix + t + " (or " + ScopeAllTenants + ")"
	}
	return ""
}

func needTenantsRead(p *Principal, _ *http.Request) string {
	if !p.CanReadTenants() {
		return ScopeTenantsRead
	}
	return ""
}

func needTenantsWrite(p *Principal, _ *http.Request) string {
	if !p.CanWriteTenants() {
		return ScopeTenantsWrite
	}
	return ""
}

func needDebug(p *Principal, _ *http.Request) string {
	if !p.CanDebug() {
		return ScopeDebug
	}
	return ""
}

type principalKey struct{}

// PrincipalFrom returns the principal a guard admitted, or nil outside one.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
