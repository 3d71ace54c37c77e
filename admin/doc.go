// Package admin is the admin HTTP API (DESIGN.md §2.10): bearer tokens and
// their scopes, and the handlers under /v1, served by net/http on the admin
// listener, apart from the public fasthttp edge.
//
// It owns token checking (auth.go), the JSON error bodies (errors.go), and
// the policy of the operator's changes: a quarantined hook's release
// verifies it again with its source's current secrets (package verify over
// source.Store), and every change to the pen carries the audit row admin
// builds (time, principal, action, tenant, entity, detail, spec_sha256,
// outcome; never a body or a secret). The data it
// serves and changes belongs to the stages, which it is given as they are
// (*segment.Store, *dispatch.Dispatcher) behind small interfaces of their
// own method sets, testing their own errors (segment.ErrNotFound,
// dispatch.ErrNoDelivery, ...); dispatch writes each audit row in the same
// synced batch as its change.
//
// It also owns admin.bootstrap_token's rule (bootstrap.go): when the node
// mints its own admin token again, and the order of its writes (the token
// file, through pebble's vfs.FS and synced with its directory by
// internal/vfsutil, before the digest's record in meta) that keeps a
// crash from leaving a record no file holds.
//
// Besides config, console (the files it serves) and envelope, admin imports the stages it serves
// (dispatch, segment, source, verify), meta for the audit rows it builds
// and the bootstrap token's record, lifecycle for the replay's query and
// cursor error, and internal/vfsutil for the token file. It must never import cli (only programs import the wiring);
// dispatch never imports admin (ARCHITECTURE.md holds both).
//
// # Authentication
//
// Every /v1 request carries "Authorization: Bearer <token>". The config
// (admin.tokens) holds only the hex SHA-256 of each token; a request's token
// is hashed and compared, in constant time, with every configured digest.
// Scopes:
//
//	tenants:read    the list of tenants, every tenant's audit rows and lifecycle events
//	tenants:write   tenant-level settings: rate-limit overrides; with tenant:*, a tenant's erase
//	tenant:<t>      everything under /v1/tenants/<t>/ (reads of its rate limit)
//	tenant:*        everything under /v1/tenants/<any>/
//	debug           the profiles under /debug/pprof/
//
// /metrics, /healthz, /readyz and GET /v1/openapi.json (the OpenAPI 3.1
// document of this API, openapi.json beside this file: it holds no data)
// need no token, nor do the operator's console's static files under
// /console/ (package console: the page calls this API with the operator's
// token, so it can do nothing the token cannot; it is no route of the
// API document). A guarded request is
// answered in this order: 401 without a known token; 400 invalid_name when
// the path is not plain (a percent-encoded byte, a backslash, an empty or
// a dot segment: refused before the mux could decode or redirect it) or a
// wildcard holds a value outside its grammar ({tenant} and every other
// name per config.NameRE, lower case; {event_id} letters, digits and
// ._- in either case); 403 naming the missing scope; 409 tenant_erasing
// for a write (any method but GET) under /v1/tenants/<t>/ while t is being
// erased; then the handler, whose 404 for another tenant's entity is the one of an unknown entity.
// A path the mux does not know is 404 not_found, a method it does not
// serve 405 method_not_allowed with Allow, both JSON.
//
// # The listener
//
// admin.read_timeout bounds a whole request, body included (a body too
// slow for it is 408 request_timeout), admin.read_header_timeout its
// header and a new connection's silence, admin.write_timeout an answer
// (a profile's ?seconds= must end inside it, else 400), and
// admin.idle_timeout a keep-alive connection between requests. Past
// admin.max_connections a connection is answered 503 overloaded and
// closed; a body past admin.max_body_bytes is 413 payload_too_large,
// whether sent with a length or chunked.
//
// # Request bodies and pages
//
// A body is one JSON value (no Content-Type needed), decoded strictly: an
// unknown field, a wrong type, trailing data or an empty body is 400
// invalid_json naming the field. A listing takes ?cursor= (opaque, the
// next_cursor of the page before) and ?limit= (1 to 1000, 100 when
// absent); a bad one, or any other query parameter that is wrong, is 400
// invalid_query naming it.
//
// # Tenants, rate limits and audit
//
//	GET    /v1/tenants[?cursor=C][&limit=N]        tenants:read
//	         200 {"tenants":[{"tenant","ordinal","first_seen","hooks","bytes","rate_limit"}],"next_cursor":"..."}
//	GET    /v1/tenants/<t>                         tenant scope; 404 for a tenant the node does not know
//	GET    /v1/tenants/<t>/rate_limit              tenant scope
//	         200 {"tenant","effective":{"rate","burst","max_queue","max_queue_bytes","limited"},"override":{...}|null}
//	PUT    /v1/tenants/<t>/rate_limit              tenants:write; body {"rate","burst","max_queue","max_queue_bytes"}, all required
//	DELETE /v1/tenants/<t>/rate_limit              tenants:write; 204, 404 without an override
//	DELETE /v1/tenants/<t>?confirm=<t>             tenants:write and tenant:*; 202 (started) or 200 (running), the status
//	GET    /v1/tenants/<t>/erase                   tenant scope; 200 the status, 404 with no erase of t on this node
//	         {"tenant","state":"running"|"erased","stage","started_at","removed":{"<stage>":n},"erased_at","seq_at_close","ordinals":[...]}
//	GET    /v1/audit[?tenant=T][&since=T][&until=T][&cursor=C][&limit=N]
//	         200 {"audit":[{"at","principal","action","tenant","entity","detail","spec_sha256","outcome"}],"next_cursor":"..."}
//
// Tenants are listed in name order from the meta store's mirror of the
// WAL's tenant records. first_seen is when this node first mirrored the
// tenant (null when an older node did, which did not record it); hooks
// and bytes are the dispatcher's live counts of what the tenant has
// committed (every hook whose delivery rows are written: ahead of the
// counts the meta store persists with the dispatch checkpoint), null on a
// node without a dispatch stage; rate_limit is the runtime override or
// null. A rate is hooks per second or "inf" (no limit); 0 for max_queue
// and max_queue_bytes is no cap. A PUT or DELETE writes the override and
// its audit row (tenant.rate_limit.set / .clear, entity rate_limit,
// spec_sha256 the hash of the stored override JSON) in one synced batch,
// then the policy the router reads: the next request sees it.
//
// An erase (Options.Erase, DESIGN.md §2.11) is a background job that
// removes everything the node holds for the tenant, stage by stage; the
// DELETE answers once its progress row is synced. confirm is the tenant
// typed again (without it, or with another name: 400 invalid_query, and
// nothing happens); default and a tenant that a configured source or
// route names are 409 tenant_from_config. A token for one tenant cannot
// erase even its own. While the job runs every write under
// /v1/tenants/<t>/ is 409 tenant_erasing (the guard answers it, after
// the scope); reads are served. The status's stage is the last one done;
// erased_at is null while it runs, seq_at_close before the tenant is
// closed, started_at once only the tombstone is left. A stored hook of
// the tenant under an erased ordinal is 410 gone, read from a local
// segment or from the archive; the same name sending again is a new
// tenant under a new ordinal, whose hooks are served.
//
// The audit log is listed oldest first (so a cursor follows it as it
// grows); since is inclusive, until exclusive. tenants:read sees every
// row; a token with only tenant scopes must name one of its tenants as
// ?tenant= (else 403) and sees only that tenant's rows. A page may end
// short of limit with a next_cursor when the tenant filter skipped many
// rows.
//
// # Lifecycle events
//
// The replay of the lifecycle outbox (Options.Events, package lifecycle):
// every change of this API leaves one CloudEvents 1.0 event, written in
// the change's synced batch, which the node keeps with or without a
// lifecycle sink.
//
//	GET    /v1/events[?tenant=T][&type=X][&since=T][&after=ID][&limit=N][&format=json|ndjson]
//	         200 {"events":[<CloudEvent>...],"next_cursor":"evt_..."}       X-Next-Cursor: evt_...
//	         200 application/x-ndjson: one CloudEvent a line               X-Next-Cursor: evt_...
//	CloudEvent {"specversion":"1.0","id":"evt_...","source":"ankusa://<node.name>",
//	            "type":"io.ankusa.<entity>.<verb>","subject","time","tenant",
//	            "datacontenttype":"application/json","data":{...}}
//
// Events come oldest first, in the order their changes committed; ids
// grow with that order, never change and are never reused. The scopes are
// the audit log's: tenants:read sees every tenant's events; a token with
// only tenant scopes must name one of its tenants as ?tenant= (else 403
// naming the scope) and sees only that tenant's. type is an event type
// (io.ankusa.source.created) or a prefix of one ending in .*
// (io.ankusa.source.*); since (inclusive, RFC 3339) is by the event's
// time; limit is 1 to 1000, 100 when absent. The form is a JSON page,
// or NDJSON with Accept: application/x-ndjson or ?format=ndjson (format
// wins over Accept). The cursor is the id of the last event the page
// looked at: next_cursor in the JSON page, and the X-Next-Cursor header in
// both forms (the NDJSON form's only place for it); give it as ?after= to
// read on. A replay so followed gives every event once, in order, across
// restarts of the node. A page may end short of limit with a cursor (the
// filters skipped many events, or the page reached 8 MiB). At the end the
// cursor is absent; keep the last event's id as after= to read what is
// written next. Events older than lifecycle.retain are swept once
// published. The publisher delivers at least once: consumers dedupe by
// id. An after that is not a lifecycle event id (a hook's id, a typo) is
// 400 invalid_query naming after, as is any bad or unknown parameter.
//
// # Errors
//
// Every error is a JSON object with a stable code and a message for people:
//
//	{"error":"invalid_name","message":"..."}        400, a path or a name in it outside the grammar
//	{"error":"invalid_json","message":"..."}        400, naming the field
//	{"error":"invalid_query","message":"..."}       400, naming the parameter
//	{"error":"unauthorized","message":"..."}        401, with WWW-Authenticate: Bearer
//	{"error":"forbidden","message":"..."}           403, naming the scope
//	{"error":"not_found","message":"..."}           404
//	{"error":"tenant_erasing","message":"..."}      409, a write while the tenant is being erased
//	{"error":"tenant_from_config","message":"..."}  409, a tenant that cannot be erased
//	{"error":"method_not_allowed","message":"..."}  405, with Allow
//	{"error":"request_timeout","message":"..."}     408
//	{"error":"gone","message":"..."}                410
//	{"error":"payload_too_large","message":"..."}   413
//	{"error":"internal","message":"..."}            500, the cause is in the node's log
//	{"error":"overloaded","message":"..."}          503, Retry-After: 1
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
//	POST   hooks/<event_id>/sinks/<sink>/redeliver             200 {"redelivered":1}
//
// Every change carries an audit row naming the token, written in the
// change's synced batch: deliveries.retry and .drop (entity: the event
// id, detail: "sink S"), .retry_all and .drop_all (one row per batch of at
// most 1000, detail: "n dead letters[, source S]"), hooks.redeliver (as
// deliveries.retry). A redelivery sends the hook to the sink again
// whatever became of its last delivery (a dead letter is retried); 409
// delivery_pending, source_gone, filtered or was_quarantined, 404 for a
// sink the source lacks, 503 unavailable while the checkpoint catches up.
//
// state is required and only dead is listed; limit is 1 to 1000, 100 when
// absent; since (inclusive) and until (exclusive) are RFC 3339 times and
// select by when the node received the hook; next_cursor is absent on the
// last page. A drop needs at least one filter or all=true. Times in answers
// are RFC 3339 in UTC with nine fractional digits. Besides the errors above:
//
//	{"error":"invalid_query","message":"limit: ..."}    400, naming the parameter
//	{"error":"delivery_not_dead","message":"..."}       409, the row is pending or in flight
//
// An unknown, malformed or other tenant's event id or sink is the same 404
// as an unknown hook.
//
// # Claims
//
// A body delivered by reference (a sink's claim: {store, over_bytes}) is
// read back from the node's claim stores (Options.Claims), with the tenant
// scopes:
//
//	GET    claims/<ref>     200 the body (application/octet-stream), checked against the claim's sha256
//
// ref is the claim's JSON form ({"store","key","offset","length","sha256"},
// as the envelope's body_claim and the raw format's x-ankusa-body-claim
// header carry it) in base64url without padding. A claim of another
// tenant (its key not under claims/tenant=<t>/), of an unknown store or
// whose pack is gone is the one 404; a ref outside base64url is 400
// invalid_name, one that does not decode to a claim 400
// invalid_claim_ref; bytes that do not match the sha256 are 500 corrupt
// (naming the key); a store that fails is 502 claim_store_unavailable.
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
// batch of at most 1000, detail: "n hooks[, source S]"). Besides the
// errors above:
//
//	{"error":"signature_invalid","message":"... (reason: mismatch) ..."}  409, it stays held
//	{"error":"source_gone","message":"..."}                              409, drop it
//	{"error":"unavailable","message":"..."}                              503, Retry-After: 1
package admin

// # Sources and routes
//
// The source store's sources and routes (Options.Sources, DESIGN.md §2.9),
// under /v1/tenants/<t>/ with the tenant scopes; a shared source is one of
// the tenant default (/v1/tenants/default/sources). Every write is one
// synced record of the store with its audit row (source.create, .update,
// .delete, .dead_letter; route.create, .update, .delete) and serves from
// the next request on:
//
//	GET    sources[?cursor=C][&limit=N]   200 {"sources":[...],"next_cursor":"..."}, by name
//	POST   sources                        201 the source; no "name" mints one (src-..., 128 random bits)
//	GET    sources/<name>                 200 the source
//	PUT    sources/<name>[?deliveries=dead_letter]     200 the source
//	DELETE sources/<name>[?deliveries=dead_letter]     200 {"deleted":name,"dead_lettered":n}
//	GET    routes[?cursor=C][&limit=N]    200 {"routes":[...],"next_cursor":"..."}, by id
//	POST   routes                         201 the route, with "token" and "url_path" when it minted one
//	GET    routes/<id>                    200 the route
//	PUT    routes/<id>                    200 the route
//	DELETE routes/<id>                    204
//
// A source's body is the JSON form of its YAML spec (the same keys, read by
// the same schema walk and validated by config.ValidateSource, so the
// messages are check-config's) plus "name"; its tenant is the path's. A
// secret is the value itself (env: and file: are the config file's), is
// never shown ("secrets_set" names the secret fields that hold one; a sink
// URL's password is shown as "redacted", and a URL given back with that
// password keeps the stored one), and an update that omits it keeps the
// stored one; a sink given without an id
// keeps the id of the stored sink at its place when the types match (its
// pending hooks stay its own). The answer adds the read-only "secrets_set",
// "from_config", "created_at", "updated_at" and "url_path" (the catch URL
// path under the node's resolver; "{tenant}" for a shared source under a
// resolver that takes the tenant from the request).
//
// A route is {id, tenant_id, source_id, host, path, token}: a path for the
// route guard (routes.enabled), a token for the token resolver, or both; a
// host narrows either. A field the node's config would leave without effect
// is 400 invalid_route naming it: a token under a shipped resolver other
// than token, a path (or a host without a token) while routes.enabled is
// false.
// "token": "auto" mints one (128 random bits; a token given must be 22 to
// 63 characters of the name grammar); the answer shows it once, the store
// keeps its SHA-256. A PUT with a token adds it (two at most, for a
// rotation); "tokens": [ids] keeps those and revokes the others. Besides
// the errors above:
//
//	{"error":"source_store_read_only"}  409, source_store: static
//	{"error":"source_from_config"}      409, the source or route is the config file's
//	{"error":"source_exists"}           409, source names are global
//	{"error":"route_exists"}            409, token_exists 409
//	{"error":"invalid_source"}          400, the file's rules and messages
//	{"error":"invalid_route"}           400, naming the field
//	{"error":"source_has_deliveries","count":n}  409, undelivered hooks of a removed
//	                                    source or sink; ?deliveries=dead_letter moves them
//	                                    to the dead letters first
//	{"error":"source_store_unavailable"}  503, Retry-After: 1, the redis store's Redis does not answer
//	{"error":"conflict"}                409, source_store: redis: another node changed the
//	                                    source or route since this write was checked
//	                                    against it (check-and-set); read it and retry
