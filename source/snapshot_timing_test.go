package source

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
)

// scaleSizes are the snapshot sizes of the scale benchmarks: a write and a
// lookup must cost about the same at each (O(log n), no copy of the whole).
var scaleSizes = []int{1_000, 10_000, 100_000}

// scaled is a snapshot of n stored sources over n/10 tenants, each with a
// route holding one token, and the lookup keys.
type scaled struct {
	snap   *Snapshot
	names  [][]byte // every source's name
	tokens [][]byte // every route's token
}

var (
	scaledMu    sync.Mutex
	scaledCache = map[int]*scaled{}
)

// scaledSnapshot builds (once per n) what a node with n API-written
// sources and routes serves from.
func scaledSnapshot(n int) *scaled {
	scaledMu.Lock()
	defer scaledMu.Unlock()
	if s, ok := scaledCache[n]; ok {
		return s
	}
	s := &scaled{snap: emptySnapshot()}
	st, ot, rt, tt := s.snap.sources.Txn(), s.snap.owned.Txn(), s.snap.routes.Txn(), s.snap.tokens.Txn()
	now := time.Now()
	for i := range n {
		name, tenant := fmt.Sprintf("s%06d", i), fmt.Sprintf("t%05d", i%max(1, n/10))
		src := Build(name, config.Source{TenantID: tenant, Verify: config.Verify{Type: "hmac", Header: "X-Sig", Secret: config.Secret{Value: "k"}}, OnVerifyFailure: "reject"}, 1<<20, false)
		st.Insert([]byte(name), src)
		ot.Insert(ownedKey(tenant, name), src)
		text := mintText("")
		r := &Route{ID: "r" + name, TenantID: tenant, SourceID: name, Tokens: []Token{newToken(text, now)}}
		rt.Insert(ownedKey(tenant, r.ID), r)
		tt.Insert(r.Tokens[0].Digest[:], r)
		s.names, s.tokens = append(s.names, []byte(name)), append(s.tokens, []byte(text))
	}
	s.snap.sources, s.snap.owned, s.snap.routes, s.snap.tokens = st.Commit(), ot.Commit(), rt.Commit(), tt.Commit()
	scaledCache[n] = s
	return s
}

// BenchmarkSnapshotLookup is the request path's lookups (a source by
// name, a route by token) in snapshots of 1k to 100k sources and routes,
// over every key in turn.
func BenchmarkSnapshotLookup(b *testing.B) {
	for _, n := range scaleSizes {
		s := scaledSnapshot(n)
		b.Run(fmt.Sprintf("Lookup/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if s.snap.Lookup(s.names[i]) == nil {
					b.Fatal("lost")
				}
				if i++; i == len(s.names) {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("RouteByToken/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if s.snap.RouteByToken(s.tokens[i]) == nil {
					b.Fatal("lost")
				}
				if i++; i == len(s.tokens) {
					i = 0
				}
			}
		})
	}
}

// TestSnapshotLookupsDoNotAllocateAt100k is the allocation guard of the
// request path's lookups at a SaaS's scale: 100k sources and routes.
func TestSnapshotLookupsDoNotAllocateAt100k(t *testing.T) {
	s := scaledSnapshot(100_000)
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		if s.snap.Lookup(s.names[i]) == nil || s.snap.RouteByToken(s.tokens[i]) == nil {
			panic("lost")
		}
		i = (i + 7919) % len(s.names)
	}); n != 0 {
		t.Fatalf("%.2f allocations per lookup at 100k sources", n)
	}
}

// nopBackend keeps nothing: what is left of a write is the store's own
// work (validation, the record, the snapshot update).
type nopBackend struct{}

func (nopBackend) Sources(func(string, string, []byte) error) error { return nil }
func (nopBackend) Routes(func(string, string, []byte) error) error  { return nil }
func (nopBackend) Commit([]Op, meta.AuditRow) (uint64, error)       { return 0, nil }

// BenchmarkPutSource is one more create into a snapshot of n sources
// through Persistent over a backend that keeps nothing: each create goes
// into the same n-source snapshot (reset after each), so the figure is
// the cost of a create at n, which must not grow with n.
func BenchmarkPutSource(b *testing.B) {
	cfg, err := config.Load([]byte("route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 10, burst: 10}}\nsource_store: {type: persistent}\n"), config.ValidateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d, probs := config.ParseSourceDoc([]byte(`{"name": "new-one", "verify": {"type": "hmac", "header": "X-Sig", "secret": "k"}, "sinks": [{"type": "http", "url": "http://127.0.0.1:9/in", "allow_private": true}]}`))
	if len(probs) > 0 {
		b.Fatal(probs)
	}
	for _, n := range scaleSizes {
		base := scaledSnapshot(n).snap
		p, _, err := OpenPersistent(PersistentOptions{Config: cfg, Backend: nopBackend{},
			Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope}})
		if err != nil {
			b.Fatal(err)
		}
		w := SourceWrite{Tenant: "t00001", Create: true, Doc: d}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.snap.Store(base)
				if _, err := p.PutSource(w); err != nil {
					b.Fatal(err)
				}
			}
			if p.Snapshot().Len() != n+1 {
				b.Fatalf("%d sources after the create, want %d", p.Snapshot().Len(), n+1)
			}
		})
	}
}

// BenchmarkSnapshotWithSource is the snapshot update of a create alone:
// a new snapshot with one more source, sharing the rest of the n-source
// one.
func BenchmarkSnapshotWithSource(b *testing.B) {
	for _, n := range scaleSizes {
		base := scaledSnapshot(n).snap
		src := Build("new-one", config.Source{TenantID: "t00001", Verify: config.Verify{Type: "none"}, OnVerifyFailure: "reject"}, 1<<20, false)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if base.withSource(src).Len() != n+1 {
					b.Fatal("lost")
				}
			}
		})
	}
}
