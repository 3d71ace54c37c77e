package edge_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// rgServe starts the real listener on loopback for a config and returns its
// address and the WAL directory.
func rgServe(t *testing.T, yaml string) (string, string) {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), config.ValidateOptions{ResolverKnown: edge.ResolverKnown})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	dir := t.TempDir()
	w, err := wal.Open(wal.Options{FS: vfs.Default, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	r := edge.NewRouter(edge.Options{Resolver: res, Sources: source.NewStatic(cfg), WAL: w, Limits: cfg.Limits, RoutesEnabled: cfg.Routes.Enabled})
	srv := edge.NewServer(r, cfg.Limits, zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Shutdown()
		w.Close()
	})
	return ln.Addr().String(), dir
}

// rgStoredTenant returns the tenant of the hook with the given id.
func rgStoredTenant(t *testing.T, dir, id string) string {
	t.Helper()
	var tenant string
	err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope && r.ID.String() == id {
			var e envelope.Envelope
			if _, err := envelope.Decode(r.Payload, &e); err != nil {
				return err
			}
			tenant = e.TenantID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tenant
}

// TestRouteTable is the seed's route table, row by row, against the real
// listener: a route owned by a tenant is held against the resolver and the
// source, and every disagreement is the 404 of an unknown source.
func TestRouteTable(t *testing.T) {
	const sources = `
sources:
  shared: {verify: {type: none}, trust_url_tenant: true}
  acme-stripe: {tenant_id: acme, verify: {type: none}}
  globex-stripe: {tenant_id: globex, verify: {type: none}}
  acme.billing: {tenant_id: acme, verify: {type: none}}
`
	tenantPath := `
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits: {default: {rate: 100, burst: 100}}
routes:
  enabled: true
  table:
    - {id: acme-any, tenant_id: acme, path: "/webhooks/:t/:s"}
` + sources
	pathRoutes := `
route_resolver: {type: path, prefix: [hooks]}
routes:
  enabled: true
  table:
    - {id: acme-only, tenant_id: acme, path: "/hooks/:s"}
    - {id: billing, tenant_id: acme, source_id: acme.billing, path: "/bill/:s"}
    - {id: open, path: "/open/:s"}
` + sources
	// The route for /bill and /open must also satisfy the path resolver:
	// the resolver works on the same URL.
	pathBill := strings.Replace(pathRoutes, "prefix: [hooks]", "prefix: [bill]", 1)
	pathOpen := strings.Replace(pathRoutes, "prefix: [hooks]", "prefix: [open]", 1)
	cases := []struct {
		name, cfg, url string
		status         int
		tenant         string
	}{
		{"route acme, source owned by globex", pathRoutes, "/hooks/globex-stripe", 404, ""},
		{"route acme, tenantpath names globex", tenantPath, "/webhooks/globex/shared", 404, ""},
		{"route acme, shared source, no tenant in URL", pathRoutes, "/hooks/shared", 201, "acme"},
		{"route acme, source owned by acme", pathRoutes, "/hooks/acme-stripe", 201, "acme"},
		{"route acme, tenantpath names acme, shared source", tenantPath, "/webhooks/acme/shared", 201, "acme"},
		{"route source acme.billing, resolves to another source", pathBill, "/bill/acme-stripe", 404, ""},
		{"route source acme.billing, resolves to it", pathBill, "/bill/acme.billing", 201, "acme"},
		{"route default, no source: shared source", pathOpen, "/open/shared", 201, "default"},
		{"route default, no source: source owned by globex", pathOpen, "/open/globex-stripe", 201, "globex"},
		{"no route matches", pathRoutes, "/elsewhere/shared", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr, dir := rgServe(t, c.cfg)
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Post("http://"+addr+c.url, "application/json", strings.NewReader(`{"n":1}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct{ ID, Error string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("POST %s: status %d (%+v), want %d", c.url, resp.StatusCode, body, c.status)
			}
			if c.status == 404 && body.Error != "not_found" {
				t.Fatalf("error %q, want not_found", body.Error)
			}
			if c.status == 201 {
				if got := rgStoredTenant(t, dir, body.ID); got != c.tenant {
					t.Fatalf("stored under tenant %q, want %q", got, c.tenant)
				}
			}
		})
	}
}

// TestRouteParamsAndHost checks that a route's :params reach the envelope
// and that a route with a host matches only that host.
func TestRouteParamsAndHost(t *testing.T) {
	addr, dir := rgServe(t, `
route_resolver: {type: path, prefix: [catch, a1]}
routes:
  enabled: true
  table:
    - {id: r1, tenant_id: acme, host: hooks.example.com, path: "/catch/:app_id/:source"}
sources:
  shared: {verify: {type: none}}
`)
	send := func(host string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+addr+"/catch/a1/shared", strings.NewReader("x"))
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.ID
	}
	if code, _ := send("other.example.com"); code != 404 {
		t.Fatalf("other host: %d, want 404", code)
	}
	code, id := send("hooks.example.com:8080")
	if code != 201 {
		t.Fatalf("route host: %d, want 201", code)
	}
	var got []envelope.Param
	wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope && r.ID.String() == id {
			var e envelope.Envelope
			envelope.Decode(r.Payload, &e)
			got = e.RouteParams
		}
		return nil
	})
	want := fmt.Sprint([]envelope.Param{{Key: "app_id", Value: "a1"}, {Key: "source", Value: "shared"}})
	if fmt.Sprint(got) != want {
		t.Fatalf("route params %v, want %v", got, want)
	}
}
