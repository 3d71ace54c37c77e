// Package dedupe recognises a hook that was already accepted, so a
// provider's retry of a hook we answered 201 to is answered 200
// `{"id": <original>, "duplicate": true}` instead of being stored and
// delivered twice.
//
// A source opts in with `dedupe: {key: SPEC, ttl: D}`. An Extractor
// (extract.go) reads the hook's dedupe key from a header or from a path
// into its JSON body (SPEC `header:NAME`, `json:PATH` or `auto`, the
// scheme's own delivery id); MakeKey turns it into a Key, scoped to the
// tenant and the source and hashed to a fixed size.
//
// Keys are remembered in one of two scopes. Node scope keeps them in the
// node's meta store. Fleet scope (fleet.go) keeps them in Redis so that
// every node behind the load balancer sees them: a key is taken with a
// short pending lease (SET NX PX) before the hook is committed, turned
// into a committed record holding the event id after the fsync, and
// deleted if the commit fails. A request that finds another's pending
// lease waits for its outcome.
//
// Dedupe never drops a hook: whenever the answer is not certain (no key in
// the hook, Redis unreachable, a stored value of the wrong form, a lease
// held too long) the hook goes through as a new one. A duplicate that gets
// through is a lesser harm than a hook that is lost.
//
// dedupe imports envelope, meta (node scope's keys are one of its key
// families) and internal/redisx; never the edge, dispatch or the admin
// API, which call it.
package dedupe

import "crypto/sha256"

// Key identifies one dedupe key of one tenant's source.
type Key struct {
	Tenant, Source string
	Hash           [16]byte // the first 16 bytes of SHA-256 over the raw key
}

// MakeKey is the Key of the raw dedupe key (as Extractor.Key returns it)
// of a hook of tenant's source. It does not allocate.
func MakeKey(tenant, source string, raw []byte) Key {
	sum := sha256.Sum256(raw)
	k := Key{Tenant: tenant, Source: source}
	copy(k.Hash[:], sum[:16])
	return k
}
