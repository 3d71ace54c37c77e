package edge_test

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// openPersistent is the persistent store of cfg (source_store:
// persistent) over a meta store in a temp directory: its sources and
// routes are the config's seeds plus what the test writes, as the admin
// API writes them. The meta store closes when the test ends, after the
// nodes started later.
func openPersistent(t testing.TB, cfg *config.Config) *source.Persistent {
	t.Helper()
	m, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("meta.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("meta close: %v", err)
		}
	})
	p, warn, err := source.OpenPersistent(source.PersistentOptions{
		Config:  cfg,
		Backend: source.MetaBackend{Store: m},
		Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: cfg.WAL.Type, DedupeScope: cfg.Dedupe.Scope},
	})
	if err != nil || len(warn) > 0 {
		t.Fatalf("OpenPersistent: %v %q", err, warn)
	}
	return p
}

// withStore serves the node from store rather than the config's static one.
func withStore(store source.Store) nodeOption {
	return func(o *edge.Options) { o.Sources = store }
}

// putRoute writes a route as the admin API does and returns it with the
// text of the token it minted ("" when it minted none).
func putRoute(t testing.TB, p *source.Persistent, w source.RouteWrite) (*source.Route, string) {
	t.Helper()
	r, minted, err := p.PutRoute(w)
	if err != nil {
		t.Fatalf("PutRoute(%+v): %v", w, err)
	}
	if len(minted) == 1 {
		return r, minted[0]
	}
	return r, ""
}

// deleteRoute removes a route as the admin API does.
func deleteRoute(t testing.TB, p *source.Persistent, tenant, id string) {
	t.Helper()
	if _, err := p.DeleteRoute(source.RouteDelete{Tenant: tenant, ID: id}); err != nil {
		t.Fatalf("DeleteRoute(%s, %s): %v", tenant, id, err)
	}
}
