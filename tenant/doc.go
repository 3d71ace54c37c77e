// Package tenant holds what limits a tenant's (and a source's) traffic
// (DESIGN.md §2.8): token buckets refilled lazily from a monotonic clock,
// with no timer and no goroutine per bucket (bucket.go); the node's
// per-tenant buckets with idle eviction, so memory stays bounded however
// many tenant names arrive in URLs (limiter.go); the fleet's buckets in
// Redis, one round trip of GCRA, falling back to the local bucket when
// Redis does not answer (fleet.go); the per-tenant queue caps of router
// step 8 (queues.go); and the policy that says each tenant's limits: a
// runtime override, else the config's entry, else rate_limits.default
// (policy.go).
//
// It also runs the tenant erase (erase.go, DESIGN.md §2.11): Eraser
// knows the seed's stages, their order and their record in the job's
// progress row, and resumes an erase a kill interrupted; the node's
// stages do the work through EraseSteps (cli wires them). Closed is the
// set of tenants being erased that the router answers 503
// tenant_erasing (router step 6).
//
// It owns no storage of its own: overrides are kept durable by an
// OverrideStore (the meta store), erase progress rows by an
// EraseProgress (the meta store too). It imports config only, and never a
// storage stage (wal, segment, dispatch, meta), the edge or the admin API:
// those call it.
package tenant
