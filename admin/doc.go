// Package admin is the admin HTTP API (DESIGN.md §2.10): bearer tokens and
// their scopes, and the handlers under /v1, served by net/http on the admin
// listener, apart from the public fasthttp edge.
//
// It owns token checking (auth.go), the JSON error bodies (errors.go), and
// the policy of the operator's changes: a quarantined hook's release
// verifies it again with its source's current secrets (package verify over
// source.Store), and every change to the pen carries the audit row admin
// builds (time, principal, action, tenant, entity, detail). The data it
// serves and changes belongs to the stages, which it is given as they are
// (*segment.Store, *dispatch.Dispatcher) behind small interfaces of their
// own method sets, testing their own errors (segment.ErrNotFound,
// dispatch.ErrNoDelivery, ...); dispatch writes each audit row in the same
// synced batch as its change.
//
// admin must never import cli (only programs import the wiring); dispatch
// never imports admin (ARCHITECTURE.md holds both).
//
// # Authentication
//
// Every /v1 request carries "Authorization: Bearer <token>". The config
// (admin.tokens) holds only the hex SHA-256 of each token; a request's token
// is hashed and compared, in constant time, with every configured digest.
// Scopes:
//
//	tenants:read    read the list of tenants and node-wide views
//	tenants:write   create and erase tenants
//	tenant:<t>      everything under /v1/tenants/<t>/
//	tenant:*        everything under /v1/tenants/<any>/
//
// # Errors
//
// Every error is a JSON object with a stable code and a message for people:
//
//	{"error":"unauthorized","message":"..."}   401, with WWW-Authenticate: Bearer
//	{"error":"forbidden","message":"..."}      403
//	{"error":"not_found","message":"..."}      404
//	{"error":"gone","message":"..."}           410
//	{"error":"internal","message":"..."}       500, the cause is in the node's log
//
// A resource of another tenant, or an id that does not parse, is the same
// 404 as one that does not exist, so a tenant learns nothing about others.
//
// # Deliveries
//
// Dead letters and attempt logs (Options.Deliveries, DESIGN.md §2.7), under
// /v1/tenants/<t>/ with the tenant scopes; every change is a synced write:
//
//	GET    deliveries?state=dead[&source=S][&since=T][&until=T][&cursor=C][&limit=N]
//	         200 {"deliveries":[...],"next_cursor":"..."}, in (seq, sink) order
//	POST   deliveries/retry[?source=S&since=T&until=T]         200 {"retried":n}
//	POST   deliveries/drop?[source=S&since=T&until=T][all=true] 200 {"dropped":n}
//	POST   deliveries/<event_id>/<sink>/retry                  200 {"retried":1}
//	DELETE deliveries/<event_id>/<sink>                        204
//	GET    hooks/<event_id>/attempts                           200 {"attempts":[...]}
//
// state is required and only dead is listed; limit is 1 to 1000, 100 when
// absent; since (inclusive) and until (exclusive) are RFC 3339 times and
// select by when the node received the hook; next_cursor is absent on the
// last page. A drop needs at least one filter or all=true. Times in answers
// are RFC 3339 in UTC with nine fractional digits. Besides the errors above:
//
//	{"error":"invalid_request","message":"limit: ..."}  400, naming the parameter
//	{"error":"delivery_not_dead","message":"..."}       409, the row is pending or in flight
//
// An unknown, malformed or other tenant's event id or sink is the same 404
// as an unknown hook.
//
// # Quarantine
//
// Hooks held under on_verify_failure: quarantine (Options.Quarantine,
// DESIGN.md §6 item 6), under /v1/tenants/<t>/ with the tenant scopes:
//
//	GET    quarantine[?source=S][&since=T][&until=T][&cursor=C][&limit=N]
//	         200 {"hooks":[...],"next_cursor":"..."}, in seq order
//	POST   quarantine/drop?[source=S&since=T&until=T][all=true]  200 {"dropped":n}
//	POST   quarantine/<event_id>/release[?force=true]
//	         200 {"deliveries":n,"released":1,"verified":b}
//	DELETE quarantine/<event_id>                                 204
//
// A release without force verifies the hook again with its source's
// current secrets at the time it was received; with force it goes
// unverified and is delivered flagged. Every change is a synced write with
// an audit row naming the token: quarantine.release, .release_forced and
// .drop (entity: the event id, detail: "source S"), .drop_all (one row per
// batch of at most 1000, detail: "n hooks[, source S]"). Dead-letter
// changes write none. Besides the errors above:
//
//	{"error":"signature_invalid","message":"... (reason: mismatch) ..."}  409, it stays held
//	{"error":"source_gone","message":"..."}                              409, drop it
//	{"error":"unavailable","message":"..."}                              503, Retry-After: 1
package admin
