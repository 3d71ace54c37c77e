package source

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// MaxRouteTokens is how many tokens a route holds at once: one, or two
// during a rotation.
const MaxRouteTokens = 2

// TokenAuto asks the store to mint a token.
const TokenAuto = "auto"

// RouteWrite creates (Create) or updates a route of Tenant.
type RouteWrite struct {
	Tenant string
	Create bool
	// ID is the route's id; empty on a create: one is minted.
	ID       string
	SourceID string
	Host     string
	Path     string
	// Token adds a token: TokenAuto mints one (≥ 128 random bits), any
	// other value is taken as the token; empty adds none.
	Token string
	// KeepTokens, on an update, lists the ids of the tokens to keep (the
	// others are revoked); nil keeps them all.
	KeepTokens []string
	Audit      meta.AuditRow
}

// RouteDelete removes a route of Tenant, revoking its tokens.
type RouteDelete struct {
	Tenant, ID string
	Audit      meta.AuditRow
}

// Route token bounds: a token given rather than minted must be as hard to
// guess as a minted one is long.
const (
	minTokenLen = 22
	maxTokenLen = 63
)

// PutRoute creates or updates a route; it returns the route and the text
// of a token it added (shown once: the store keeps only its digest). The
// route holds from the next request on.
func (p *Persistent) PutRoute(w RouteWrite) (*Route, []string, error) {
	r, minted, err := p.putRoute(w)
	return r, minted, counted("route", err)
}

func (p *Persistent) putRoute(w RouteWrite) (*Route, []string, error) {
	if w.ID == "" {
		if !w.Create {
			return nil, nil, refuse(CodeInvalidRoute, "id: required")
		}
		w.ID = mintText("rt-")
	}
	var minted []string
	var tok *Token
	if w.Token != "" {
		text := w.Token
		if text == TokenAuto {
			text = mintText("")
		} else if len(text) < minTokenLen || len(text) > maxTokenLen || !config.NameRE.MatchString(text) {
			return nil, nil, refuse(CodeInvalidRoute, "token: a token given must be %d to %d characters of [a-z0-9._-] (or \"auto\" to mint one)", minTokenLen, maxTokenLen)
		}
		t := newToken(text, p.o.Now().UTC())
		tok, minted = &t, []string{text}
	}
	if err := p.beforeWrite(); err != nil {
		return nil, nil, err
	}
	keys := []string{"route:" + w.Tenant + "/" + w.ID}
	if tok != nil {
		keys = append(keys, "token:"+hex.EncodeToString(tok.Digest[:]))
	}
	release := p.reserve(keys...)
	r, err := p.putRouteReserved(w, tok)
	if err != nil {
		release(nil, nil)
		return nil, nil, err
	}
	release(p.ifNewer(r.Version, func(s *Snapshot) *Snapshot { return s.withRoute(r) }), nil)
	return r, minted, nil
}

func (p *Persistent) putRouteReserved(w RouteWrite, tok *Token) (*Route, error) {
	snap := p.Snapshot()
	old := snap.Route(w.Tenant, w.ID)
	switch {
	case w.Create && old != nil:
		return nil, refuse(CodeRouteExists, "tenant %q has a route %q", w.Tenant, w.ID)
	case !w.Create && old == nil:
		return nil, refuse(CodeNotFound, "no route %q", w.ID)
	case old != nil && old.FromConfig:
		return nil, refuse(CodeFromConfig, "route %q comes from the config file (routes.table); change it there", w.ID)
	case tok != nil && snap.tokens != nil:
		if _, taken := snap.tokens.Get(tok.Digest[:]); taken {
			return nil, refuse(CodeTokenExists, "this token is taken; mint one with \"auto\"")
		}
	}
	cr := config.Route{ID: w.ID, TenantID: w.Tenant, SourceID: w.SourceID, Host: w.Host, Path: w.Path}
	if err := p.checkRoute(snap, &cr, w); err != nil {
		return nil, err
	}
	r := compileRoute(cr)
	now := p.o.Now().UTC()
	r.Created, r.Updated = now, now
	if old != nil {
		r.Created = old.Created
		for _, t := range old.Tokens {
			if w.KeepTokens == nil || contains(w.KeepTokens, t.ID) {
				r.Tokens = append(r.Tokens, t)
			}
		}
	}
	if tok != nil {
		r.Tokens = append(r.Tokens, *tok)
	}
	if len(r.Tokens) > MaxRouteTokens {
		return nil, refuse(CodeInvalidRoute, "token: the route holds %d tokens already; revoke one (tokens: the ids to keep) before adding another", len(r.Tokens)-1)
	}
	if err := p.checkRouteUse(r); err != nil {
		return nil, err
	}
	if r.Path == "" && len(r.Tokens) == 0 {
		return nil, refuse(CodeInvalidRoute, "path: a route needs a path (for the route guard, routes.enabled) or a token (for the token resolver)")
	}
	if r.SourceID == "" && len(r.Tokens) > 0 {
		return nil, refuse(CodeInvalidRoute, "source_id: a route with a token names the source its hooks go to")
	}
	audit := w.Audit
	audit.At, audit.Tenant, audit.Entity, audit.Outcome = now, w.Tenant, "route/"+w.ID, "ok"
	audit.SpecSHA256 = specDigest(RouteJSON(r))
	audit.Event = meta.Event{Type: meta.EventType("route", verb(w.Create, "created", "updated")), Subject: w.ID, Data: RouteJSON(r)}
	ops := []Op{{Kind: PutRoute, Tenant: w.Tenant, Name: w.ID, Record: encodeRouteRecord(r)}}
	if old != nil {
		ops[0].Expect = old.Version
	}
	ops = append(ops, tokenOps(w.Tenant, w.ID, old, r)...)
	version, err := p.o.Backend.Commit(ops, audit)
	if err != nil {
		return nil, unavailable(err)
	}
	r.Version = version
	return r, nil
}

// checkRoute holds a route to the file's rules (config.ValidateRoute),
// but a path is needed only by the route guard: a route may have a path,
// a token, or both. Its source must be one its tenant may use: shared, or
// its own (another tenant's is the same message as an unknown one).
func (p *Persistent) checkRoute(snap *Snapshot, cr *config.Route, w RouteWrite) error {
	probePath := cr.Path
	if probePath == "" {
		cr.Path = "/x" // ValidateRoute requires one; a route without is checked below
	}
	probs := config.ValidateRoute("route", cr, func(name string) bool {
		src := snap.Lookup([]byte(name))
		return src != nil && (src.Shared || src.TenantID == w.Tenant)
	})
	cr.Path = probePath
	if len(probs) > 0 {
		return refuse(CodeInvalidRoute, "%s", strings.ReplaceAll(probs.Error(), "route.", ""))
	}
	return nil
}

// tokenlessResolvers are the shipped resolvers that find no request by a
// token (a program's own resolver may read RouteByToken).
var tokenlessResolvers = []string{"path", "tenantpath", "host"}

// checkRouteUse refuses a route field the node's config would leave
// without effect: a path or a host the route guard never matches
// (routes.enabled is false; a token route's host is held by the token
// resolver), a token no resolver looks up.
func (p *Persistent) checkRouteUse(r *Route) error {
	cfg := p.o.Config
	switch {
	case len(r.Tokens) > 0 && slices.Contains(tokenlessResolvers, cfg.RouteResolver.Type):
		return refuse(CodeInvalidRoute, "token: route_resolver.type is %q, which finds no request by a token; tokens need route_resolver: {type: token, path: ...}", cfg.RouteResolver.Type)
	case r.Path != "" && !cfg.Routes.Enabled:
		return refuse(CodeInvalidRoute, "path: routes.enabled is false, so no request is matched by a route's path; set routes.enabled: true, or give the route a token instead")
	case len(r.Host) > 0 && !cfg.Routes.Enabled && len(r.Tokens) == 0:
		return refuse(CodeInvalidRoute, "host: routes.enabled is false, so no request is matched by a route's host; set routes.enabled: true, or give the route a token")
	}
	return nil
}

// DeleteRoute removes a route; its tokens answer 404 from the next request.
func (p *Persistent) DeleteRoute(w RouteDelete) (*Route, error) {
	r, err := p.deleteRoute(w)
	return r, counted("route", err)
}

func (p *Persistent) deleteRoute(w RouteDelete) (*Route, error) {
	if err := p.beforeWrite(); err != nil {
		return nil, err
	}
	release := p.reserve("route:" + w.Tenant + "/" + w.ID)
	old := p.Snapshot().Route(w.Tenant, w.ID)
	var version uint64
	err := func() error {
		switch {
		case old == nil:
			return refuse(CodeNotFound, "no route %q", w.ID)
		case old.FromConfig:
			return refuse(CodeFromConfig, "route %q comes from the config file (routes.table); remove it there", w.ID)
		}
		audit := w.Audit
		audit.At, audit.Tenant, audit.Entity, audit.Outcome = p.o.Now().UTC(), w.Tenant, "route/"+w.ID, "ok"
		audit.Event = meta.Event{Type: meta.EventType("route", "deleted"), Subject: w.ID, Data: RouteJSON(old)}
		ops := append([]Op{{Kind: DeleteRoute, Tenant: w.Tenant, Name: w.ID, Expect: old.Version}}, tokenOps(w.Tenant, w.ID, old, nil)...)
		v, err := p.o.Backend.Commit(ops, audit)
		if err != nil {
			return unavailable(err)
		}
		version = v
		return nil
	}()
	if err != nil {
		release(nil, nil)
		return nil, err
	}
	release(p.ifNewer(version, func(s *Snapshot) *Snapshot { return s.withoutRoute(w.Tenant, w.ID) }), nil)
	return old, nil
}

// tokenOps are the token claims and releases of a route write: the tokens
// next holds that old did not are claimed, those old held that next does
// not are freed (next nil: a removal).
func tokenOps(tenant, id string, old, next *Route) []Op {
	held := func(r *Route, d [32]byte) bool {
		if r == nil {
			return false
		}
		for _, t := range r.Tokens {
			if t.Digest == d {
				return true
			}
		}
		return false
	}
	owner := []byte(tenant + "/" + id)
	var ops []Op
	if next != nil {
		for _, t := range next.Tokens {
			if !held(old, t.Digest) {
				ops = append(ops, Op{Kind: ClaimToken, Tenant: tenant, Name: hex.EncodeToString(t.Digest[:]), Record: owner})
			}
		}
	}
	if old != nil {
		for _, t := range old.Tokens {
			if !held(next, t.Digest) {
				ops = append(ops, Op{Kind: FreeToken, Tenant: tenant, Name: hex.EncodeToString(t.Digest[:]), Record: owner})
			}
		}
	}
	return ops
}

// RouteJSON is a route's JSON form as the admin API shows it: its tokens
// by id, never their digests.
func RouteJSON(r *Route) []byte {
	type tokenJSON struct {
		ID      string `json:"id"`
		Created string `json:"created_at"`
	}
	out := struct {
		ID       string      `json:"id"`
		Tenant   string      `json:"tenant_id"`
		SourceID string      `json:"source_id,omitempty"`
		Host     string      `json:"host,omitempty"`
		Path     string      `json:"path,omitempty"`
		Tokens   []tokenJSON `json:"tokens"`
	}{ID: r.ID, Tenant: r.TenantID, SourceID: r.SourceID, Host: string(r.Host), Path: r.Path, Tokens: []tokenJSON{}}
	for _, t := range r.Tokens {
		out.Tokens = append(out.Tokens, tokenJSON{ID: t.ID, Created: t.Created.Format("2006-01-02T15:04:05.000Z07:00")})
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic("BUG: source: cannot encode a route: " + err.Error())
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
