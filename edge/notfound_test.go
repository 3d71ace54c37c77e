package edge_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/source"
)

// TestNotFoundIdentical checks DESIGN.md §2.1: every 404 is byte-for-byte
// the same response, whatever the reason, so a probe learns nothing about
// which URL shapes, sources or tenants exist. The full bytes the server
// sends (status line, headers, body, up to its close) are compared.
func TestNotFoundIdentical(t *testing.T) {
	path := startNode(t, loadConfig(t, pathConfig))
	tenant := startNode(t, loadConfig(t, tenantPathConfig))
	host := startNode(t, loadConfig(t, hostConfig))
	tokenCfg := loadConfig(t, tokenConfig)
	store := openPersistent(t, tokenCfg)
	token := startNode(t, tokenCfg, withStore(store))
	revoked, tokRevoked := putRoute(t, store, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "acme-stripe", Token: source.TokenAuto})
	deleteRoute(t, store, "acme", revoked.ID)
	_, tok := putRoute(t, store, source.RouteWrite{Tenant: "acme", Create: true, SourceID: "acme-stripe", Token: source.TokenAuto})
	hostReq := func(h string) []byte {
		return rawReq("POST /webhooks/shared HTTP/1.1", []string{"Host: " + h, "Content-Length: 1"}, "x")
	}
	long := "/webhooks/" + strings.Repeat("a", 8000)
	deep := strings.Repeat("/webhooks", 40) + "/demo"
	cases := []struct {
		name string
		addr string
		req  []byte
	}{
		{"unknown source", path.addr, post("/webhooks/nope", `{"a":1}`)},
		{"unknown source, empty body", path.addr, post("/webhooks/nope", "")},
		{"unknown source, query", path.addr, post("/webhooks/nope?x=1", "x")},
		{"unknown source, HTTP/1.0", path.addr, rawReq("POST /webhooks/nope HTTP/1.0", []string{"Content-Length: 1"}, "x")},
		{"unknown source, keep-alive asked", path.addr, post("/webhooks/nope", "x", "Connection: keep-alive")},
		{"unknown source, close asked", path.addr, post("/webhooks/nope", "x", "Connection: close")},
		{"unknown source, chunked", path.addr, rawReq("POST /webhooks/nope HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, chunked([]byte("hello"), 2, true))},
		{"unknown source, expect 100-continue", path.addr, rawReq("POST /webhooks/nope HTTP/1.1", []string{"Host: h", "Expect: 100-continue", "Content-Length: 5"}, "")},
		{"unknown source, header block past the limit", path.addr, withHeaderBlock("/webhooks/nope", "x", 6<<10)},
		{"unknown source, fields past the count", path.addr, withFields("/webhooks/nope", "x", 40)},
		{"unknown source, internal verdict header sent", path.addr, post("/webhooks/nope", "x", "X-Ankusa-Internal-Verdict: 1")},
		{"no source segment", path.addr, post("/webhooks", "x")},
		{"root", path.addr, post("/", "x")},
		{"other prefix", path.addr, post("/hooks/demo", "x")},
		{"extra segment", path.addr, post("/webhooks/demo/extra", "x")},
		{"dot segment", path.addr, post("/webhooks/./demo", "x")},
		{"dot-dot segment", path.addr, post("/webhooks/../webhooks/demo", "x")},
		{"trailing dot-dot", path.addr, post("/webhooks/demo/..", "x")},
		{"leading dot segment", path.addr, post("/./webhooks/demo", "x")},
		{"encoded slash", path.addr, post("/webhooks%2Fdemo", "x")},
		{"encoded slash lower", path.addr, post("/webhooks%2fdemo", "x")},
		{"encoded dots", path.addr, post("/webhooks/%2e%2e/webhooks/demo", "x")},
		{"encoded letter", path.addr, post("/webhooks/de%6Do", "x")},
		{"bad percent", path.addr, post("/webhooks/%zz", "x")},
		{"backslash", path.addr, post("/webhooks\\demo", "x")},
		{"double slash", path.addr, post("//webhooks/demo", "x")},
		{"empty segment", path.addr, post("/webhooks//demo", "x")},
		{"trailing slash", path.addr, post("/webhooks/demo/", "x")},
		{"uppercase source", path.addr, post("/webhooks/Demo", "x")},
		{"source starts with -", path.addr, post("/webhooks/-demo", "x")},
		{"source of 64 chars", path.addr, post("/webhooks/"+strings.Repeat("d", 64), "x")},
		{"very long path", path.addr, post(long, "x")},
		{"very deep path", path.addr, post(deep, "x")},
		{"absolute-form target", path.addr, rawReq("POST http://h/webhooks/nope HTTP/1.1", []string{"Host: h", "Content-Length: 1"}, "x")},
		{"tenantpath: bound source, wrong tenant", tenant.addr, post("/webhooks/globex/acme-billing", "x")},
		{"tenantpath: bound source, tenant default", tenant.addr, post("/webhooks/default/acme-billing", "x")},
		{"tenantpath: unknown source", tenant.addr, post("/webhooks/acme/nope", "x")},
		{"tenantpath: no tenant", tenant.addr, post("/webhooks/shared", "x")},
		{"tenantpath: uppercase tenant", tenant.addr, post("/webhooks/ACME/shared", "x")},
		{"tenantpath: tenant of 64 chars", tenant.addr, post("/webhooks/"+strings.Repeat("t", 64)+"/shared", "x")},
		{"tenantpath: tenant starts with -", tenant.addr, post("/webhooks/-t/shared", "x")},
		{"tenantpath: empty tenant", tenant.addr, post("/webhooks//shared", "x")},
		{"host: wrong suffix", host.addr, hostReq("acme.hooks.example.org")},
		{"host: extra labels", host.addr, hostReq("x.acme.hooks.example.com")},
		{"host: bad label", host.addr, hostReq("-acme.hooks.example.com")},
		{"host: upper case", host.addr, hostReq("Acme.hooks.example.com")},
		{"host: suffix alone", host.addr, hostReq("hooks.example.com")},
		{"host: missing", host.addr, rawReq("POST /webhooks/shared HTTP/1.0", []string{"Content-Length: 1"}, "x")},
		{"host: another tenant's source", host.addr, rawReq("POST /webhooks/acme-stripe HTTP/1.1", []string{"Host: globex.hooks.example.com", "Content-Length: 1"}, "x")},
		{"host: absolute form naming another host", host.addr, rawReq("POST http://globex.hooks.example.com/webhooks/shared HTTP/1.1", []string{"Host: acme.hooks.example.com", "Content-Length: 1"}, "x")},
		{"token: unknown", token.addr, post("/webhooks/catch/a/"+strings.Repeat("z", 26), "x")},
		{"token: revoked", token.addr, post("/webhooks/catch/a/"+tokRevoked, "x")},
		{"token: upper case", token.addr, post("/webhooks/catch/a/"+strings.ToUpper(tok), "x")},
		{"token: outside the grammar", token.addr, post("/webhooks/catch/a/_"+tok, "x")},
		{"token: no app id", token.addr, post("/webhooks/catch/"+tok, "x")},
		{"token: extra segment", token.addr, post("/webhooks/catch/a/"+tok+"/x", "x")},
		{"token: encoded", token.addr, post("/webhooks/catch/a/%7A"+tok[1:], "x")},
	}
	var want []byte
	for _, tc := range cases {
		r := roundTrip(t, tc.addr, exchange{req: tc.req, waitClose: true})
		if r.status != 404 || !r.closed {
			t.Errorf("%s: want a 404 and a closed connection, got %s", tc.name, r)
			continue
		}
		if want == nil {
			want = r.raw
			continue
		}
		if !bytes.Equal(r.raw, want) {
			t.Errorf("%s: 404 differs from the first one:\n got %q\nwant %q", tc.name, r.raw, want)
		}
	}
	if !bytes.HasPrefix(want, []byte("HTTP/1.1 404 Not Found\r\n")) || !bytes.HasSuffix(want, []byte(`{"error":"not_found","message":"no webhook endpoint at this URL"}`)) {
		t.Errorf("the 404 is %q", want)
	}
	for _, n := range []*node{path, tenant, host, token} {
		if got := len(n.stored(t)); got != 0 {
			t.Errorf("404s committed %d records", got)
		}
	}
}
