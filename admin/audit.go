package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// AuditLog is the node's audit rows: *meta.Store is one, as it is.
type AuditLog interface {
	AuditPage(q meta.AuditQuery) (rows []meta.AuditRow, next string, err error)
}

// needAuditScope admits tenants:read to every row, and a tenant scope to
// its tenant's rows when ?tenant= names it.
func needAuditScope(p *Principal, r *http.Request) string {
	if p.CanReadTenants() {
		return ""
	}
	if t := r.URL.Query().Get("tenant"); t != "" && p.CanTenant(t) {
		return ""
	}
	return ScopeTenantsRead + " (or the tenant's scope, with ?tenant=<tenant>)"
}

// auditJSON is one row of GET /v1/audit.
type auditJSON struct {
	At         string `json:"at"`
	Principal  string `json:"principal"`
	Action     string `json:"action"`
	Tenant     string `json:"tenant,omitempty"`
	Entity     string `json:"entity,omitempty"`
	Detail     string `json:"detail,omitempty"`
	SpecSHA256 string `json:"spec_sha256,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
}

type auditList struct {
	Audit      []auditJSON `json:"audit"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// listAudit serves GET /v1/audit?tenant=&since=&until=&cursor=&limit=,
// oldest first (a cursor follows the log as it grows).
func (h *tenantHandlers) listAudit(w http.ResponseWriter, r *http.Request) {
	vs, msg := queryParams(r, "tenant", "since", "until", "cursor", "limit")
	var q meta.AuditQuery
	if msg == "" {
		f, m := parseFilter(vs) // since and until; vs holds no source
		q.Since, q.Until, msg = f.Since, f.Until, m
	}
	if t, ok := vs["tenant"]; ok && msg == "" && !config.ValidName([]byte(t)) {
		msg = fmt.Sprintf("tenant: %q is not a tenant name (it must match %s)", t, config.NameRE)
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeInvalidQuery, msg)
		return
	}
	cursor, limit, err := pageParams(r)
	if err != nil {
		writeQueryError(w, err)
		return
	}
	q.Tenant, q.Cursor, q.Limit = vs["tenant"], cursor, limit
	rows, next, err := h.audit.AuditPage(q)
	switch {
	case errors.Is(err, meta.ErrBadAuditCursor):
		writeError(w, http.StatusBadRequest, codeInvalidQuery, "cursor: not a next_cursor this listing returned; start again without cursor")
		return
	case err != nil:
		h.fail(w, "cannot read the audit log", err)
		return
	}
	out := auditList{Audit: make([]auditJSON, 0, len(rows)), NextCursor: next}
	for _, a := range rows {
		out.Audit = append(out.Audit, auditJSON{At: stamp(a.At), Principal: a.Principal, Action: a.Action, Tenant: a.Tenant,
			Entity: a.Entity, Detail: a.Detail, SpecSHA256: a.SpecSHA256, Outcome: a.Outcome})
	}
	writeValue(w, http.StatusOK, out)
}

// changeEvent is the lifecycle event of a change the admin API makes:
// io.ankusa.<entity>.<verb> about subject, data encoded as JSON (it holds
// no secret: ids, names, counts, filters).
func changeEvent(entity, verb, subject string, data any) meta.Event {
	return meta.Event{Type: meta.EventType(entity, verb), Subject: subject, Data: mustJSON(data)}
}
