package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// Backlog is what a source write asks dispatch: how many undelivered
// hooks a source (or some of its sinks) has on this node, and to
// dead-letter them. *dispatch.Dispatcher is one, as it is.
type Backlog interface {
	SourceBacklog(source string, sinks []string) (int64, error)
	DeadLetterSource(source string, sinks []string, audit meta.AuditRow) (int64, error)
}

// Error codes of the source and route endpoints, beside source.Code*.
const (
	codeHasDeliveries = "source_has_deliveries"
	codeInvalidSource = source.CodeInvalid
)

// sourceHandlers serves /v1/tenants/{tenant}/sources[/{name}].
type sourceHandlers struct {
	store    source.Store
	backlog  Backlog // nil: the node holds no deliveries (wal.type: none)
	resolver config.RouteResolver
	log      *zap.Logger
}

func registerSources(mux router, auth *Auth, h *sourceHandlers) {
	route := func(pattern string, f http.HandlerFunc) { mux.Handle(pattern, auth.TenantGuard(f)) }
	route("GET /v1/tenants/{tenant}/sources", h.list)
	route("POST /v1/tenants/{tenant}/sources", h.create)
	route("GET /v1/tenants/{tenant}/sources/{name}", h.get)
	route("PUT /v1/tenants/{tenant}/sources/{name}", h.update)
	route("DELETE /v1/tenants/{tenant}/sources/{name}", h.remove)
}

// sourceJSON is a source as the API shows it: its name, the keys of its
// spec (no secret: secrets_set names those that hold one), and what the
// store knows of it. The fields after the spec's are read-only.
func (h *sourceHandlers) sourceJSON(src *source.Source) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	b.Write(mustJSON(src.Name))
	spec := config.EncodeSource(&src.Spec, false)
	if len(spec) > 2 {
		b.WriteByte(',')
		b.Write(spec[1 : len(spec)-1])
	}
	fmt.Fprintf(&b, `,"secrets_set":%s,"from_config":%t`, mustJSON(source.SecretsSet(&src.Spec)), src.FromConfig)
	if !src.Created.IsZero() {
		fmt.Fprintf(&b, `,"created_at":%s,"updated_at":%s`, mustJSON(src.Created.Format(time.RFC3339Nano)), mustJSON(src.Updated.Format(time.RFC3339Nano)))
	}
	if p := urlPath(h.resolver, src); p != "" {
		fmt.Fprintf(&b, `,"url_path":%s`, mustJSON(p))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// readOnlySourceKeys are the keys of an answer a write may not give.
var readOnlySourceKeys = []string{"secrets_set", "from_config", "created_at", "updated_at", "url_path"}

// urlPath is the catch URL path a source answers on under the node's
// resolver ("{tenant}" where the request names the tenant); "" when it
// answers only through routes (token) or a resolver of the program's.
func urlPath(r config.RouteResolver, src *source.Source) string {
	prefix := ""
	for _, p := range r.Prefix {
		prefix += "/" + p
	}
	tenant := src.TenantID
	if src.Shared {
		tenant = "{tenant}"
	}
	switch r.Type {
	case "path":
		return prefix + "/" + src.Name
	case "tenantpath":
		return prefix + "/" + tenant + "/" + src.Name
	case "host":
		return prefix + "/" + src.Name
	}
	return ""
}

func (h *sourceHandlers) list(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	cursor, limit, ok := pageQuery(w, r)
	if !ok {
		return
	}
	list, next := h.store.Snapshot().Sources(tenant, cursor, limit)
	writePage(w, "sources", list, h.sourceJSON, next)
}

// writePage answers one page of a listing: {"<field>": [...],
// "next_cursor": "..."} (no next_cursor on the last page).
func writePage[T any](w http.ResponseWriter, field string, items []T, show func(T) json.RawMessage, next string) {
	shown := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		shown = append(shown, show(it))
	}
	out := map[string]any{field: shown}
	if next != "" {
		out["next_cursor"] = next
	}
	writeJSON(w, http.StatusOK, append(mustJSON(out), '\n'))
}

// pageQuery reads cursor and limit (pageParams) and refuses any other
// parameter, answering 400 invalid_query naming it.
func pageQuery(w http.ResponseWriter, r *http.Request) (cursor string, limit int, ok bool) {
	_, msg := queryParams(r, "cursor", "limit")
	cursor, limit, err := pageParams(r)
	if msg == "" && err != nil {
		msg = err.Error()
	}
	if msg == "" && cursor != "" && !config.ValidName([]byte(cursor)) {
		msg = fmt.Sprintf("cursor: %q is not a cursor this listing gave", cursor)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return "", 0, false
	}
	return cursor, limit, true
}

// pathSource returns the source {name} of the path's tenant, or answers
// the one 404 (unknown, or another tenant's).
func (h *sourceHandlers) pathSource(w http.ResponseWriter, r *http.Request) (string, *source.Source, bool) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return "", nil, false
	}
	name := r.PathValue("name")
	src := h.store.Snapshot().Lookup([]byte(name))
	if src == nil || src.TenantID != tenant {
		writeError(w, http.StatusNotFound, codeNotFound, "no source named "+strconv.Quote(name))
		return "", nil, false
	}
	return tenant, src, true
}

func (h *sourceHandlers) get(w http.ResponseWriter, r *http.Request) {
	if _, src, ok := h.pathSource(w, r); ok {
		writeJSON(w, http.StatusOK, append(h.sourceJSON(src), '\n'))
	}
}

func (h *sourceHandlers) create(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	if _, ok := queryOnly(w, r); !ok {
		return
	}
	doc, ok := h.readDoc(w, r)
	if !ok || !privateSinksAllowed(w, r, &doc.Spec, nil) {
		return
	}
	src, err := h.writer().PutSource(source.SourceWrite{Tenant: tenant, Create: true, Doc: doc, Audit: auditOf(r, "source.create")})
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, append(h.sourceJSON(src), '\n'))
}

func (h *sourceHandlers) update(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	deadLetter, ok := queryOnly(w, r, "deliveries")
	if !ok {
		return
	}
	doc, ok := h.readDoc(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if doc.HasName && doc.Name != name {
		writeError(w, http.StatusBadRequest, codeInvalidSource, fmt.Sprintf("name: %q, but the path names source %q; a source cannot be renamed", doc.Name, name))
		return
	}
	doc.Name, doc.HasName = name, true
	var prev *config.Source
	if old := h.store.Snapshot().Lookup([]byte(name)); old != nil && old.TenantID == tenant {
		prev = &old.Spec
	}
	if !privateSinksAllowed(w, r, &doc.Spec, prev) {
		return
	}
	var removed []string
	var moved int64
	check := func(old *source.Source, next *config.Source) error {
		removed = removedSinks(&old.Spec, next)
		return h.checkBacklog(old, removed, deadLetter)
	}
	after := func(src *source.Source) { moved = h.deadLetter(r, src, removed, deadLetter) }
	src, err := h.writer().PutSource(source.SourceWrite{Tenant: tenant, Doc: doc, Audit: auditOf(r, "source.update"), Check: check, After: after})
	if err != nil {
		h.fail(w, err)
		return
	}
	if moved > 0 {
		w.Header().Set("X-Ankusa-Dead-Lettered", strconv.FormatInt(moved, 10))
	}
	writeJSON(w, http.StatusOK, append(h.sourceJSON(src), '\n'))
}

func (h *sourceHandlers) remove(w http.ResponseWriter, r *http.Request) {
	tenant, ok := pathTenant(w, r)
	if !ok {
		return
	}
	deadLetter, ok := queryOnly(w, r, "deliveries")
	if !ok {
		return
	}
	var moved int64
	_, err := h.writer().DeleteSource(source.SourceDelete{
		Tenant: tenant, Name: r.PathValue("name"), Audit: auditOf(r, "source.delete"),
		Check: func(old *source.Source) error { return h.checkBacklog(old, nil, deadLetter) },
		After: func(old *source.Source) { moved = h.deadLetter(r, old, nil, deadLetter) },
	})
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, append(mustJSON(map[string]any{"deleted": r.PathValue("name"), "dead_lettered": moved}), '\n'))
}

// privateSinksAllowed refuses (403 forbidden, naming the key) a write by
// a token that holds only tenant scopes which turns a sink's SSRF guard
// off: allow_private: true on a sink whose URL the source's current spec
// (prev, nil on a create) does not already allow. An operator may set it
// for a tenant; the tenant may then keep it in its own edits, but not
// point another URL past the guard.
func privateSinksAllowed(w http.ResponseWriter, r *http.Request, next, prev *config.Source) bool {
	p := PrincipalFrom(r.Context())
	if p == nil || p.CanAllowPrivate() {
		return true
	}
	for i, sk := range next.Sinks {
		if !sk.AllowPrivate {
			continue
		}
		if prev != nil && slices.ContainsFunc(prev.Sinks, func(o config.Sink) bool { return o.AllowPrivate && o.URL == sk.URL }) {
			continue
		}
		writeError(w, http.StatusForbidden, codeForbidden, fmt.Sprintf("sinks[%d].allow_private: turning the SSRF guard off needs a token with tenant:* or tenants:write; %q holds only tenant scopes", i, p.Name))
		return false
	}
	return true
}

// checkBacklog applies the rule for a write that removes a source (sinks
// nil) or some of its sinks: their undelivered hooks on this node refuse
// it (409 source_has_deliveries with the count) unless
// ?deliveries=dead_letter.
func (h *sourceHandlers) checkBacklog(old *source.Source, sinks []string, deadLetter bool) error {
	if h.backlog == nil || deadLetter || sinks != nil && len(sinks) == 0 {
		return nil
	}
	n, err := h.backlog.SourceBacklog(old.Name, sinks)
	if err != nil || n == 0 {
		return err
	}
	what := "source"
	if sinks != nil {
		what = fmt.Sprintf("sinks %v of source", sinks)
	}
	return &hasDeliveries{count: n, msg: fmt.Sprintf("the %s %q have %d undelivered hooks on this node; add ?deliveries=dead_letter to dead-letter them first", what, old.Name, n)}
}

// deadLetter is ?deliveries=dead_letter: once the write that removed the
// source or its sinks is published (no new hook gets their rows), and
// before the name can be written again, their undelivered hooks are
// dead-lettered; it returns how many. A failure is logged: the rows left
// are dead-lettered by dispatch when it reaches them (their source or
// sink is gone).
func (h *sourceHandlers) deadLetter(r *http.Request, old *source.Source, sinks []string, deadLetter bool) int64 {
	if h.backlog == nil || !deadLetter || sinks != nil && len(sinks) == 0 {
		return 0
	}
	audit := auditOf(r, "source.dead_letter")
	audit.At, audit.Tenant, audit.Entity, audit.Outcome = time.Now().UTC(), old.TenantID, "source/"+old.Name, "ok"
	data := map[string]any{"source": old.Name}
	if sinks != nil {
		audit.Detail = fmt.Sprintf("sinks %v", sinks)
		data["sinks"] = sinks
	}
	audit.Event = changeEvent("source", "dead_lettered", old.Name, data)
	n, err := h.backlog.DeadLetterSource(old.Name, sinks, audit)
	if err != nil {
		h.log.Warn("cannot dead-letter every undelivered hook of a removed source; dispatch dead-letters the rest as it reaches them",
			zap.String("source", old.Name), zap.Strings("sinks", sinks), zap.Int64("dead_lettered", n), zap.Error(err))
	}
	return n
}

type hasDeliveries struct {
	count int64
	msg   string
}

func (e *hasDeliveries) Error() string { return e.msg }

// removedSinks are the ids of old's sinks that next does not have.
func removedSinks(old, next *config.Source) []string {
	out := []string{}
	for _, o := range old.Sinks {
		if !slices.ContainsFunc(next.Sinks, func(s config.Sink) bool { return s.ID == o.ID }) {
			out = append(out, o.ID)
		}
	}
	return out
}

// queryOnly allows only the parameter deliveries (given in allowed), whose
// one value is dead_letter; it reports whether it was given.
func queryOnly(w http.ResponseWriter, r *http.Request, allowed ...string) (deadLetter, ok bool) {
	vs, msg := queryParams(r, allowed...)
	if v, given := vs["deliveries"]; given && msg == "" {
		if v != "dead_letter" {
			msg = fmt.Sprintf("deliveries: %q; the one value is dead_letter (dead-letter the undelivered hooks first)", v)
		}
		deadLetter = true
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return false, false
	}
	return deadLetter, true
}

// readDoc reads a source document from the body, bounded, or answers 413
// or 400 invalid_source naming every problem.
func (h *sourceHandlers) readDoc(w http.ResponseWriter, r *http.Request) (config.SourceDoc, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return config.SourceDoc{}, false
	}
	if !json.Valid(body) {
		writeError(w, http.StatusBadRequest, codeInvalidSource, "body: not a JSON document (a source is the JSON form of its YAML spec)")
		return config.SourceDoc{}, false
	}
	doc, probs := config.ParseSourceDoc(body)
	for _, k := range readOnlySourceKeys {
		if hasTopKey(body, k) {
			probs = append(probs, k+": read-only; it is part of the answer, not of a source")
		}
	}
	probs = slices.DeleteFunc(probs, func(p string) bool {
		return slices.ContainsFunc(readOnlySourceKeys, func(k string) bool { return strings.HasPrefix(p, k+": unknown key") })
	})
	if len(probs) > 0 {
		writeError(w, http.StatusBadRequest, codeInvalidSource, probs.Error())
		return config.SourceDoc{}, false
	}
	return doc, true
}

// hasTopKey reports whether the JSON object body has the key k at its top.
func hasTopKey(body []byte, k string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	_, ok := m[k]
	return ok
}

// readBody reads the whole body within admin.max_body_bytes, or answers
// 413 (408 when it arrives too slowly) as decodeJSON does.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyOf(r)))
	if err != nil {
		status, code, msg := jsonProblem(err, maxBodyOf(r))
		w.Header().Set("Connection", "close")
		writeError(w, status, code, msg)
		return nil, false
	}
	return body, true
}

// writer is the store as a writer; a static store answers 409
// source_store_read_only.
func (h *sourceHandlers) writer() source.Writer {
	if wr, ok := h.store.(source.Writer); ok {
		return wr
	}
	return readOnly{h.store}
}

// readOnly refuses every write of a store that has none.
type readOnly struct{ source.Store }

func (readOnly) PutSource(source.SourceWrite) (*source.Source, error) { return nil, source.ErrReadOnly }
func (readOnly) DeleteSource(source.SourceDelete) (*source.Source, error) {
	return nil, source.ErrReadOnly
}
func (readOnly) PutRoute(source.RouteWrite) (*source.Route, []string, error) {
	return nil, nil, source.ErrReadOnly
}
func (readOnly) DeleteRoute(source.RouteDelete) (*source.Route, error) {
	return nil, source.ErrReadOnly
}

// fail answers a refused or failed write.
func (h *sourceHandlers) fail(w http.ResponseWriter, err error) { failWrite(w, h.log, err) }

func failWrite(w http.ResponseWriter, log *zap.Logger, err error) {
	var se *source.Error
	var hd *hasDeliveries
	switch {
	case errors.As(err, &hd):
		writeJSON(w, http.StatusConflict, append(mustJSON(map[string]any{"error": codeHasDeliveries, "message": hd.msg, "count": hd.count}), '\n'))
	case errors.As(err, &se):
		status := map[string]int{
			source.CodeInvalid: http.StatusBadRequest, source.CodeInvalidRoute: http.StatusBadRequest,
			source.CodeNotFound: http.StatusNotFound, source.CodeUnavailable: http.StatusServiceUnavailable,
		}[se.Code]
		if status == 0 {
			status = http.StatusConflict
		}
		if status == http.StatusServiceUnavailable {
			// The store's own log says when Redis goes and comes back;
			// each refused write is a warning.
			log.Warn("source store write refused: the store cannot write", zap.Error(err))
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, status, se.Code, se.Message)
	default:
		log.Error("source store write failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, codeInternal, "the change could not be made; the node's log says why")
	}
}

// auditOf is the audit row of a write by r's principal.
func auditOf(r *http.Request, action string) meta.AuditRow {
	row := meta.AuditRow{Action: action}
	if p := PrincipalFrom(r.Context()); p != nil {
		row.Principal = p.Name
	}
	return row
}

func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("BUG: admin: cannot encode an answer: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
