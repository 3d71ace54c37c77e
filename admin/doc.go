// Package admin is the admin HTTP API (DESIGN.md §2.10): bearer tokens and
// their scopes, and the handlers under /v1, served by net/http on the admin
// listener, apart from the public fasthttp edge.
//
// It owns token checking (auth.go) and the JSON error bodies (errors.go); the
// data it serves belongs to other stages and reaches it through small
// interfaces (HookFetcher for stored hooks).
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
package admin
