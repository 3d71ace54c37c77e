package meta

// TenantScope says how a family's keys belong to a tenant, which is how
// the tenant's keys are found (TenantRanges).
type TenantScope uint8

const (
	// NotPerTenant: the family is the node's, not a tenant's; Family.Why
	// says why an erase leaves it.
	NotPerTenant TenantScope = iota
	// ByOrdinal: keys are prefix | ord u32 | ...; a tenant's keys are one
	// range.
	ByOrdinal
	// ByName: the key is prefix | tenant name; one key per tenant.
	ByName
	// ByNameEntity: keys are prefix | tenant | 0x00 | entity; a tenant's
	// keys are one range.
	ByNameEntity
	// ByDayOrdinal: keys are prefix | day u32 | ord u32 | ...; a tenant's
	// keys are one range per day that holds keys.
	ByDayOrdinal
)

// Family is one kind of key of the store (keys.go draws each).
type Family struct {
	Name string
	// Prefix starts every key of the family; with Exact it is the whole
	// key (a family of one key).
	Prefix string
	Exact  bool
	Scope  TenantScope
	// Why a family that is not per tenant is not.
	Why string
}

// families is the registry: every key the store holds belongs to exactly
// one of them. TestFamiliesRegistered holds it against keys.go's
// constants, and TestTenantRanges against a store holding one record of
// each family for two tenants.
var families = []Family{
	{Name: "node", Prefix: keyNode, Exact: true, Why: "the node's identity"},
	{Name: "wal-checkpoint", Prefix: keyWALCheckpoint, Exact: true, Why: "the node's numbering floor"},
	{Name: "wal-closed", Prefix: keyWALClosed, Exact: true, Why: "how far the log was acknowledged at its last clean close"},
	{Name: "dispatch-checkpoint", Prefix: keyDispatchCheckpoint, Exact: true, Why: "one seq for every tenant's rows"},
	{Name: "catalogue", Prefix: prefixSegSeq, Why: "segments are multi-tenant (DESIGN.md §2.5); an erased tenant's hooks answer gone"},
	{Name: "catalogue-id", Prefix: prefixSegID, Why: "the catalogue's event-id index"},
	{Name: "catalogue-gap", Prefix: prefixSegGap, Why: "seqs the log lost, of every tenant"},
	{Name: "bootstrap-token", Prefix: keyBootstrapToken, Exact: true, Why: "the node's own admin token"},
	{Name: "audit", Prefix: prefixAudit, Why: "kept after an erase by design (seed: \"What stays: the audit rows\")"},
	{Name: "event-order", Prefix: prefixEventSeq, Why: "the node's order of lifecycle events; a tenant's entries go with its events (Store.DeleteTenantEvents, Store.FinishErase)"},
	{Name: "event-floor", Prefix: keyEventLast, Exact: true, Why: "the node's lifecycle event numbering"},
	{Name: "event-published", Prefix: keyEventPublished, Exact: true, Why: "the publisher's checkpoint, one for every tenant"},
	{Name: "events", Prefix: prefixEvent, Why: "deleted once the publisher has passed them, keeping the final tenant.deleted event (Store.DeleteTenantEvents, Store.FinishErase), not with the tenant's other keys"},

	{Name: "rows", Prefix: prefixRow, Scope: ByOrdinal},
	{Name: "due", Prefix: prefixDue, Scope: ByOrdinal},
	{Name: "dead", Prefix: prefixDead, Scope: ByOrdinal},
	{Name: "attempts", Prefix: prefixAttempt, Scope: ByOrdinal},
	{Name: "pen", Prefix: prefixPen, Scope: ByOrdinal},
	{Name: "tenant-counts", Prefix: prefixTenantCount, Scope: ByOrdinal},

	{Name: "tenant", Prefix: prefixTenant, Scope: ByName},
	{Name: "rate-limit", Prefix: prefixRateLimit, Scope: ByName},

	{Name: "source", Prefix: prefixSource, Scope: ByNameEntity},
	{Name: "route", Prefix: prefixRoute, Scope: ByNameEntity},

	{Name: "dedupe", Prefix: prefixDedupe, Scope: ByDayOrdinal},

	{Name: "mirror-source", Prefix: prefixMirrorSource, Scope: ByNameEntity},
	{Name: "mirror-route", Prefix: prefixMirrorRoute, Scope: ByNameEntity},
	{Name: "mirror-state", Prefix: keyMirrorState, Exact: true, Why: "the node's position in the shared source store, one for every tenant"},
	{Name: "erase", Prefix: prefixErase, Why: "the erase job's own progress row: the final batch deletes it"},
	{Name: "erased", Prefix: prefixErased, Why: "the tombstone, which stays (seed: the tombstone m:erased:<tenant>)"},
	{Name: "pending-change", Prefix: prefixPendingChange, Why: "a change on its way to the shared source store; it becomes an audit row (kept after an erase) or nothing"},
}

// familyOf is the family key belongs to, or nil.
func familyOf(key []byte) *Family {
	for i := range families {
		f := &families[i]
		if f.Exact && string(key) == f.Prefix || !f.Exact && len(key) >= len(f.Prefix) && string(key[:len(f.Prefix)]) == f.Prefix {
			return f
		}
	}
	return nil
}

// Census counts the store's keys by family name; "" counts the keys of
// no family (there should be none). It reads the whole store: it is for
// tests, inspection and diagnostics, never for a hot path.
func (s *Store) Census() (map[string]int, error) {
	out := map[string]int{}
	err := s.scan("the meta store", nil, nil, func(k, _ []byte) (bool, error) {
		name := ""
		if f := familyOf(k); f != nil {
			name = f.Name
		}
		out[name]++
		return false, nil
	})
	return out, err
}
