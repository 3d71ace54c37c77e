package main

// tenants.max on the real listener: a new tenant past it is 403
// tenant_limit; hooks refused by verification create no tenant; ordinals
// are kept across restarts; known tenants go on.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/internal/rabbittest"
)

// tenantLimitYAML: %[1]s data_dir, %[2]s listen, %[3]s admin, %[4]s the
// wal and the source's sinks.
const tenantLimitYAML = `node: {name: edge-tenants, data_dir: %[1]s}
listen: %[2]s
admin: {listen: %[3]s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
tenants: {max: 3}
log: {level: warn, format: json}
%[4]s
`

const tenantLimitDisk = `wal: {type: disk, max_file_bytes: 4MiB}
sources:
  strict:
    verify: {type: stripe, secret: "` + stripeSecretOld + `"}`

func TestTenantLimit(t *testing.T) {
	testTenantLimit(t, func(*testing.T) string { return tenantLimitDisk })
}

// With wal.type: none the same allocator numbers tenants (wal.Numbers),
// so tenants.max holds the same way: the source publishes to RabbitMQ.
func TestTenantLimitWALNone(t *testing.T) {
	testTenantLimit(t, func(t *testing.T) string {
		b := rabbittest.New(t)
		x := b.Exchange("direct")
		b.Queue(nil, x, "ankusa.strict")
		return fmt.Sprintf(`wal: {type: none}
sources:
  strict:
    verify: {type: stripe, secret: "`+stripeSecretOld+`"}
    sinks: [{type: rabbitmq, url: %q, exchange: %q}]`, rabbittest.URL(), x)
	})
}

func testTenantLimit(t *testing.T, storage func(*testing.T) string) {
	st := storage(t)
	n := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(tenantLimitYAML, n.dataDir, n.listen, n.admin, st)
	})
	p := n.serve(t)
	want := func(tenant, secret string, status int, code string) {
		t.Helper()
		a := postSigned(t, n.listen, tenant, "strict", secret, stripeBody(1))
		if a.status != status || a.code != code {
			t.Fatalf("hook of %s: %d %s, want %d %s", tenant, a.status, a.body, status, code)
		}
	}
	want("a", stripeSecretOld, http.StatusCreated, "")
	want("b", stripeSecretOld, http.StatusCreated, "")
	// Hooks that fail verification are never committed: they create no
	// tenant, however many names a forger invents.
	for i := 0; i < 20; i++ {
		want(fmt.Sprintf("forged%d", i), "whsec_forged", http.StatusUnauthorized, "signature_invalid")
	}
	want("c", stripeSecretOld, http.StatusCreated, "")
	want("d", stripeSecretOld, http.StatusForbidden, "tenant_limit")
	want("a", stripeSecretOld, http.StatusCreated, "") // a known tenant goes on
	// Ordinals are kept across a restart: still three, still full.
	p.stop()
	p = n.serve(t)
	defer p.stop()
	want("d", stripeSecretOld, http.StatusForbidden, "tenant_limit")
	for _, tenant := range []string{"a", "b", "c"} {
		want(tenant, stripeSecretOld, http.StatusCreated, "")
	}
	m := string(newAdminClient(t, n.admin).get("/metrics", "").body)
	if !strings.Contains(m, "ankusa_edge_requests_total{code=\"403\"} 1\n") {
		t.Errorf("metrics do not count the 403")
	}
}
