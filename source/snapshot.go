package source

import (
	"crypto/sha256"

	iradix "github.com/hashicorp/go-immutable-radix/v2"

	"github.com/ankusa/ankusa/config"
)

// Snapshot is one consistent view of every source and route. The edge
// loads it through an atomic pointer per request: no lock, no I/O. It is
// immutable: a write makes a new one that shares every part it did not
// change (radix trees), so a write costs O(log n) however many sources
// the node has.
type Snapshot struct {
	sources *iradix.Tree[*Source] // by name (names are global)
	owned   *iradix.Tree[*Source] // by tenant | 0x00 | name, for listing
	routes  *iradix.Tree[*Route]  // by tenant | 0x00 | id
	tokens  *iradix.Tree[*Route]  // by SHA-256 of a token
	retired *iradix.Tree[*Source] // sources removed lately (LookupForDelivery)
	guard   routeTable            // the routes with a path, for the route guard
	dedupe  int                   // sources with a dedupe key
}

// NewSnapshot builds a snapshot of the config's sources and routes;
// globalMax caps bodies.
func NewSnapshot(specs map[string]config.Source, routes []config.Route, globalMax int64) *Snapshot {
	s := emptySnapshot()
	st, ot := s.sources.Txn(), s.owned.Txn()
	for name, spec := range specs {
		src := Build(name, spec, globalMax, true)
		st.Insert([]byte(name), src)
		ot.Insert(ownedKey(src.TenantID, name), src)
		if src.Dedupe != nil {
			s.dedupe++
		}
	}
	s.sources, s.owned = st.Commit(), ot.Commit()
	rt := s.routes.Txn()
	for _, cr := range routes {
		if r := compileRoute(cr); r != nil {
			r.FromConfig = true
			rt.Insert(ownedKey(r.TenantID, r.ID), r)
			s.guard = s.guard.with(r)
		}
	}
	s.routes = rt.Commit()
	return s
}

func emptySnapshot() *Snapshot {
	return &Snapshot{
		sources: iradix.New[*Source](), owned: iradix.New[*Source](),
		routes: iradix.New[*Route](), tokens: iradix.New[*Route](),
		retired: iradix.New[*Source](),
	}
}

func ownedKey(tenant, name string) []byte {
	k := make([]byte, 0, len(tenant)+1+len(name))
	k = append(k, tenant...)
	k = append(k, 0)
	return append(k, name...)
}

// Lookup returns the source named name, or nil. It does not allocate.
func (s *Snapshot) Lookup(name []byte) *Source {
	src, _ := s.sources.Get(name)
	return src
}

// LookupForDelivery is Lookup, or a source removed lately (kept
// RetiredFor after its removal): a hook the edge admitted before the
// removal and committed after it still gets its delivery rows, which
// dispatch then dead-letters (their source is gone) rather than leave
// the hook with none. It does not allocate.
func (s *Snapshot) LookupForDelivery(name []byte) *Source {
	if src, ok := s.sources.Get(name); ok {
		return src
	}
	src, _ := s.retired.Get(name)
	return src
}

// Len is the number of sources.
func (s *Snapshot) Len() int { return s.sources.Len() }

// Dedupes reports whether any source has a dedupe key.
func (s *Snapshot) Dedupes() bool { return s.dedupe > 0 }

// Sources lists the sources of tenant in name order, after the name after
// ("" from the first), at most limit; next is the last name listed when
// more may follow ("" on the last page).
func (s *Snapshot) Sources(tenant, after string, limit int) (out []*Source, next string) {
	return page(s.owned, tenant, after, limit, func(src *Source) string { return src.Name })
}

// page lists the entries of tree under tenant's prefix after the entry
// after, at most limit, and the cursor of the next page.
func page[T any](tree *iradix.Tree[T], tenant, after string, limit int, name func(T) string) (out []T, next string) {
	it := tree.Root().Iterator()
	prefix := ownedKey(tenant, "")
	it.SeekLowerBound(seekAfter(prefix, after))
	for {
		k, v, ok := it.Next()
		if !ok || len(k) < len(prefix) || string(k[:len(prefix)]) != string(prefix) {
			return out, ""
		}
		if len(out) == limit {
			return out, name(out[len(out)-1])
		}
		out = append(out, v)
	}
}

// seekAfter is the smallest key above prefix|after (names hold no 0x00),
// or prefix itself when after is empty.
func seekAfter(prefix []byte, after string) []byte {
	k := append(append([]byte(nil), prefix...), after...)
	if after != "" {
		k = append(k, 0)
	}
	return k
}

// Route returns the route id of tenant, or nil.
func (s *Snapshot) Route(tenant, id string) *Route {
	r, _ := s.routes.Get(ownedKey(tenant, id))
	return r
}

// Routes lists the routes of tenant in id order, as Sources does.
func (s *Snapshot) Routes(tenant, after string, limit int) (out []*Route, next string) {
	return page(s.routes, tenant, after, limit, func(r *Route) string { return r.ID })
}

// RouteCount is the number of routes.
func (s *Snapshot) RouteCount() int { return s.routes.Len() }

// RouteByToken returns the route that holds token, or nil. It hashes the
// token (routes keep only tokens' digests) and allocates nothing.
func (s *Snapshot) RouteByToken(token []byte) *Route {
	sum := sha256.Sum256(token)
	r, _ := s.tokens.Get(sum[:])
	return r
}

// withSource is s with src added or replacing the source of its name.
func (s *Snapshot) withSource(src *Source) *Snapshot {
	n := *s
	var old *Source
	n.sources, old, _ = s.sources.Insert([]byte(src.Name), src)
	if old != nil {
		n.owned, _, _ = n.owned.Delete(ownedKey(old.TenantID, old.Name))
		if old.Dedupe != nil {
			n.dedupe--
		}
	}
	n.owned, _, _ = n.owned.Insert(ownedKey(src.TenantID, src.Name), src)
	n.retired, _, _ = n.retired.Delete([]byte(src.Name))
	if src.Dedupe != nil {
		n.dedupe++
	}
	return &n
}

// withoutSource is s less the source named name.
func (s *Snapshot) withoutSource(name string) *Snapshot {
	n := *s
	var old *Source
	n.sources, old, _ = s.sources.Delete([]byte(name))
	if old != nil {
		n.owned, _, _ = n.owned.Delete(ownedKey(old.TenantID, old.Name))
		n.retired, _, _ = n.retired.Insert([]byte(name), old)
		if old.Dedupe != nil {
			n.dedupe--
		}
	}
	return &n
}

// withoutRetired is s less the retired source name, if it is still src.
func (s *Snapshot) withoutRetired(name string, src *Source) *Snapshot {
	if cur, ok := s.retired.Get([]byte(name)); !ok || cur != src {
		return s
	}
	n := *s
	n.retired, _, _ = s.retired.Delete([]byte(name))
	return &n
}

// withRoute is s with r added or replacing the route of its tenant and id.
func (s *Snapshot) withRoute(r *Route) *Snapshot {
	n := s.withoutRoute(r.TenantID, r.ID)
	n.routes, _, _ = n.routes.Insert(ownedKey(r.TenantID, r.ID), r)
	for _, t := range r.Tokens {
		n.tokens, _, _ = n.tokens.Insert(t.Digest[:], r)
	}
	if len(r.segs) > 0 {
		n.guard = n.guard.with(r)
	}
	return n
}

// withoutRoute is s less the route id of tenant, its tokens with it.
func (s *Snapshot) withoutRoute(tenant, id string) *Snapshot {
	n := *s
	var old *Route
	n.routes, old, _ = s.routes.Delete(ownedKey(tenant, id))
	if old != nil {
		for _, t := range old.Tokens {
			n.tokens, _, _ = n.tokens.Delete(t.Digest[:])
		}
		if len(old.segs) > 0 {
			n.guard = n.guard.without(old)
		}
	}
	return &n
}
