package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// routeHandlers serves /v1/tenants/{tenant}/routes[/{id}].
type routeHandlers struct {
	*sourceHandlers
}

func registerRoutes(mux router, auth *Auth, h routeHandlers) {
	route := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, auth.TenantGuard(f)) }
	route("GET /v1/tenants/{tenant}/routes", h.list)
	route("POST /v1/tenants/{tenant}/routes", h.create)
	route("GET /v1/tenants/{tenant}/routes/{id}", h.get)
	route("PUT /v1/tenants/{tenant}/routes/{id}", h.update)
	route("DELETE /v1/tenants/{tenant}/routes/{id}", h.remove)
}

// routeBody is a route write: POST and PUT take the same fields. Token
// "auto" mints a token; Tokens, on a PUT, are the ids of the tokens to
// keep (the others are revoked).
type routeBody struct {
	ID       string    `json:"id"`
	TenantID string    `json:"tenant_id"`
	SourceID string    `json:"source_id"`
	Host     string    `json:"host"`
	Path     string    `json:"path"`
	Token    string    `json:"token"`
	Tokens   *[]string `json:"tokens"`
}

// routeJSON is a route's answer: source.RouteJSON, the token minted by
// this write (shown once), and the URL path the token answers on.
func (h routeHandlers) routeJSON(rt *source.Route, minted []string) []byte {
	b := source.RouteJSON(rt)
	var extra bytes.Buffer
	fmt.Fprintf(&extra, `,"from_config":%t`, rt.FromConfig)
	if len(minted) > 0 {
		fmt.Fprintf(&extra, `,"token":%s`, mustJSON(minted[0]))
		if p := tokenPath(h.resolver, minted[0]); p != "" {
			fmt.Fprintf(&extra, `,"url_path":%s`, mustJSON(p))
		}
	}
	return append(append(b[:len(b)-1:len(b)-1], extra.Bytes()...), '}')
}

// tokenPath is the URL path a token answers on under the token resolver
// (other :params of its path left as they are); "" under another.
func tokenPath(r config.RouteResolver, token string) string {
	if r.Type != "token" {
		return ""
	}
	return strings.Replace(r.Path, ":token", token, 1)
}

func (h routeHandlers) list(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	cursor, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	list, next := h.store.Snapshot().Routes(tenant, cursor, limit)
	writePage(w, "routes", list, func(rt *source.Route) json.RawMessage { return h.routeJSON(rt, nil) }, next)
}

func (h routeHandlers) pathRoute(w http.ResponseWriter, r *http.Request) (string, *source.Route, bool) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return "", nil, false
	}
	id := r.PathValue("id")
	rt := h.store.Snapshot().Route(tenant, id)
	if rt == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "no route "+strconv.Quote(id))
		return "", nil, false
	}
	return tenant, rt, true
}

func (h routeHandlers) get(w http.ResponseWriter, r *http.Request) {
	if _, rt, ok := h.pathRoute(w, r); ok {
		writeJSON(w, http.StatusOK, append(h.routeJSON(rt, nil), '\n'))
	}
}

func (h routeHandlers) create(w http.ResponseWriter, r *http.Request) {
	h.write(w, r, true, "")
}

func (h routeHandlers) update(w http.ResponseWriter, r *http.Request) {
	h.write(w, r, false, r.PathValue("id"))
}

func (h routeHandlers) write(w http.ResponseWriter, r *http.Request, create bool, id string) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	if _, ok := queryOnly(w, r); !ok {
		return
	}
	var body routeBody
	if !decodeJSONAs(w, r, &body, source.CodeInvalidRoute) {
		return
	}
	msg := ""
	switch {
	case body.TenantID != "" && body.TenantID != tenant:
		msg = fmt.Sprintf("tenant_id: %q, but the path names tenant %q; a route belongs to the tenant of its path", body.TenantID, tenant)
	case !create && body.ID != "" && body.ID != id:
		msg = fmt.Sprintf("id: %q, but the path names route %q; a route cannot be renamed", body.ID, id)
	case create && body.Tokens != nil:
		msg = "tokens: only an update keeps or revokes tokens; a new route takes token"
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, source.CodeInvalidRoute, msg)
		return
	}
	if create {
		id = body.ID
	}
	rw := source.RouteWrite{Tenant: tenant, Create: create, ID: id, SourceID: body.SourceID, Host: body.Host, Path: body.Path, Token: body.Token, Audit: auditOf(r, "route.update")}
	if create {
		rw.Audit.Action = "route.create"
	}
	if body.Tokens != nil {
		rw.KeepTokens = append([]string{}, *body.Tokens...)
	}
	rt, minted, err := h.writer().PutRoute(rw)
	if err != nil {
		h.fail(w, err)
		return
	}
	status := http.StatusOK
	if create {
		status = http.StatusCreated
	}
	writeJSON(w, status, append(h.routeJSON(rt, minted), '\n'))
}

func (h routeHandlers) remove(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	if _, ok := queryOnly(w, r); !ok {
		return
	}
	if _, err := h.writer().DeleteRoute(source.RouteDelete{Tenant: tenant, ID: r.PathValue("id"), Audit: auditOf(r, "route.delete")}); err != nil {
		h.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
