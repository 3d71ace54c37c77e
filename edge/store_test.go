package edge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
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

// hookAnswer is a POST's answer: status, the event id of a 201 and the
// error code of a refusal.
type hookAnswer struct {
	status    int
	id, error string
}

// postHook posts a small JSON hook to path with the given Host ("": the
// address's).
func postHook(t testing.TB, addr, host, path string) hookAnswer {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var body struct{ ID, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("POST %s: answer does not decode: %v", path, err)
	}
	return hookAnswer{status: resp.StatusCode, id: body.ID, error: body.Error}
}

// hook returns the envelope the node committed under event id.
func (n *node) hook(t testing.TB, id string) *envelope.Envelope {
	t.Helper()
	var found *envelope.Envelope
	err := wal.ReadDir(vfs.Default, n.walDir, func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope && r.ID.String() == id {
			found = new(envelope.Envelope)
			if _, err := envelope.Decode(r.Payload, found); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || found == nil {
		t.Fatalf("hook %s: %v (found: %v)", id, err, found != nil)
	}
	return found
}

// wantStored checks a 201 and the tenant and source its hook is stored
// under.
func (n *node) wantStored(t testing.TB, what string, a hookAnswer, tenant, src string) *envelope.Envelope {
	t.Helper()
	if a.status != 201 {
		t.Fatalf("%s: status %d (%s), want 201", what, a.status, a.error)
	}
	e := n.hook(t, a.id)
	if e.TenantID != tenant || e.SourceID != src {
		t.Fatalf("%s: stored under tenant %q source %q, want %q %q", what, e.TenantID, e.SourceID, tenant, src)
	}
	return e
}

// wantNotFound checks the one 404.
func wantNotFound(t testing.TB, what string, a hookAnswer) {
	t.Helper()
	if a.status != 404 || a.error != "not_found" {
		t.Fatalf("%s: status %d (%s), want 404 not_found", what, a.status, a.error)
	}
}
