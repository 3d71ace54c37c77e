package edge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// prefixConfig serves the path resolver under a two-segment prefix.
const prefixConfig = `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [a, b]}
sources:
  demo: {verify: {type: none}}
`

// hookCase is one request and the answer the router order of DESIGN.md
// §2.1 and the seed's binding rules give it.
type hookCase struct {
	name   string
	req    []byte
	status int
	code   string // the JSON error code; empty for a 201
	// For a 201: where the hook must be stored.
	tenant, source string
}

// runHookCases sends every case on its own connection and checks the answer
// and, for a 201, the stored envelope (read back from the WAL); a refusal
// must commit nothing and close the connection.
func runHookCases(t *testing.T, n *node, cases []hookCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(n.stored(t))
			r := roundTrip(t, n.addr, exchange{req: tc.req})
			wantAnswer(t, tc.name, r, tc.status, tc.code)
			after := n.stored(t)
			if tc.status != 201 {
				wantClose(t, tc.name, r)
				if len(after) != before {
					t.Errorf("a %d committed %d records", tc.status, len(after)-before)
				}
				return
			}
			if r.connClose {
				t.Errorf("a 201 must keep the connection open: %s", r)
			}
			e := findStored(t, after, r.body)
			if e.TenantID != tc.tenant || e.SourceID != tc.source {
				t.Errorf("stored under tenant %q source %q, want %q %q", e.TenantID, e.SourceID, tc.tenant, tc.source)
			}
			if _, body := splitReq(tc.req); !bytes.Equal(e.Body, body) {
				t.Errorf("stored body %q, want %q", trim(e.Body, 80), trim(body, 80))
			}
		})
	}
}

// findStored returns the stored envelope whose id a 201 body names.
func findStored(t testing.TB, stored []envelope.Envelope, body []byte) envelope.Envelope {
	t.Helper()
	var created struct{ ID string }
	if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
		t.Fatalf("201 body %q is not {\"id\": ...}: %v", body, err)
	}
	for _, e := range stored {
		if e.ID.String() == created.ID {
			return e
		}
	}
	t.Fatalf("201 answered id %s, but the WAL does not hold it (%d records)", created.ID, len(stored))
	return envelope.Envelope{}
}

// splitReq returns the header block and the body of a request with a
// Content-Length body.
func splitReq(req []byte) (head, body []byte) {
	i := bytes.Index(req, []byte("\r\n\r\n"))
	return req[:i+4], req[i+4:]
}

// withHeaderBlock is a POST whose header block (what follows the request
// line, the blank line included) is exactly size bytes.
func withHeaderBlock(path, body string, size int) []byte {
	host := "Host: hooks.test\r\n"
	cl := fmt.Sprintf("Content-Length: %d\r\n", len(body))
	pad := size - len(host) - len(cl) - len("X-Pad: \r\n") - len("\r\n")
	if pad < 0 {
		panic("header block too small")
	}
	return []byte("POST " + path + " HTTP/1.1\r\n" + host + "X-Pad: " + strings.Repeat("p", pad) + "\r\n" + cl + "\r\n" + body)
}

// withFields is a POST with exactly n header fields (Host and
// Content-Length included).
func withFields(path, body string, n int) []byte {
	return post(path, body, manyHeaders(n-2, 4)...)
}

// TestRouterOrder checks each step of the router order against the one
// before it: the method first, then the resolver, then the declared length
// (so an oversized body to an unknown source is 413), then the source (so
// a bad header to an unknown source is 404), then the header checks.
func TestRouterOrder(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	big := "Content-Length: 2097152"
	cases := []hookCase{
		{name: "stored under the default tenant", req: post("/webhooks/demo", `{"a":1}`), status: 201, tenant: "default", source: "demo"},
		{name: "stored under the source's tenant", req: post("/webhooks/acme-billing", `{"b":2}`), status: 201, tenant: "acme", source: "acme-billing"},
		{name: "query string ignored", req: post("/webhooks/demo?attempt=2", "q"), status: 201, tenant: "default", source: "demo"},
		{name: "empty body", req: post("/webhooks/demo", ""), status: 201, tenant: "default", source: "demo"},

		// step 0: the method, before anything else.
		{name: "GET known source", req: rawReq("GET /webhooks/demo HTTP/1.1", []string{"Host: h"}, ""), status: 405, code: "method_not_allowed"},
		{name: "PUT unknown source", req: rawReq("PUT /webhooks/nope HTTP/1.1", []string{"Host: h", "Content-Length: 2"}, "{}"), status: 405, code: "method_not_allowed"},
		{name: "PUT oversized", req: rawReq("PUT /webhooks/demo HTTP/1.1", []string{"Host: h", big}, "x"), status: 405, code: "method_not_allowed"},
		{name: "DELETE bad shape", req: rawReq("DELETE /x/y/z HTTP/1.1", []string{"Host: h"}, ""), status: 405, code: "method_not_allowed"},

		// step 2: the resolver, before the declared length.
		{name: "bad shape oversized", req: rawReq("POST /webhooks/demo/x HTTP/1.1", []string{"Host: h", big}, "x"), status: 404, code: "not_found"},
		{name: "unknown source", req: post("/webhooks/nope", `{"a":1}`), status: 404, code: "not_found"},

		// step 3: the declared length, before the source lookup.
		{name: "oversized to unknown source", req: rawReq("POST /webhooks/nope HTTP/1.1", []string{"Host: h", big}, "x"), status: 413, code: "payload_too_large"},
		{name: "oversized to known source", req: rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", big}, "x"), status: 413, code: "payload_too_large"},
		{name: "oversized and bad header to unknown", req: rawReq("POST /webhooks/nope HTTP/1.1", append(manyHeaders(30, 2), "Host: h", big), "x"), status: 413, code: "payload_too_large"},
		{name: "one past the node limit", req: rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h", "Content-Length: 1048577"}, "x"), status: 413, code: "payload_too_large"},
		// step 4: the source's own max_body_bytes (100) after the lookup.
		{name: "past the source limit", req: post("/webhooks/small", strings.Repeat("s", 101)), status: 413, code: "payload_too_large"},
		{name: "at the source limit", req: post("/webhooks/small", strings.Repeat("s", 100)), status: 201, tenant: "default", source: "small"},

		// step 5: header checks, only for a source that exists.
		{name: "header block past the limit, known", req: withHeaderBlock("/webhooks/demo", "x", 4097), status: 400, code: "invalid_header"},
		{name: "header block past the limit, unknown", req: withHeaderBlock("/webhooks/nope", "x", 4097), status: 404, code: "not_found"},
		{name: "header block at the limit", req: withHeaderBlock("/webhooks/demo", "x", 4096), status: 201, tenant: "default", source: "demo"},
		{name: "header block 6KiB, known", req: withHeaderBlock("/webhooks/demo", "x", 6<<10), status: 400, code: "invalid_header"},
		{name: "header block 6KiB, unknown", req: withHeaderBlock("/webhooks/nope", "x", 6<<10), status: 404, code: "not_found"},
		{name: "fields past the count, known", req: withFields("/webhooks/demo", "x", 21), status: 400, code: "invalid_header"},
		{name: "fields past the count, unknown", req: withFields("/webhooks/nope", "x", 21), status: 404, code: "not_found"},
		{name: "fields at the count", req: withFields("/webhooks/demo", "x", 20), status: 201, tenant: "default", source: "demo"},
		// fasthttp refuses a control character in a header before the
		// router runs; the answer is still the edge's JSON invalid_header.
		{name: "control character in a value", req: post("/webhooks/demo", "x", "X-Evil: a\x01b"), status: 400, code: "invalid_header"},
		{name: "DEL in a value", req: post("/webhooks/demo", "x", "X-Evil: a\x7fb"), status: 400, code: "invalid_header"},
		{name: "bare CR in a value", req: post("/webhooks/demo", "x", "X-Evil: a\rb"), status: 400, code: "invalid_header"},
		{name: "control character in a name", req: post("/webhooks/demo", "x", "X-E\x01vil: ab"), status: 400, code: "invalid_header"},
	}
	runHookCases(t, n, cases)
}

// TestPathPrefix checks the path resolver with a configured two-segment
// prefix: only /a/b/<source> resolves.
func TestPathPrefix(t *testing.T) {
	n := startNode(t, loadConfig(t, prefixConfig))
	cases := []hookCase{
		{name: "under the prefix", req: post("/a/b/demo", "p"), status: 201, tenant: "default", source: "demo"},
		{name: "default prefix", req: post("/webhooks/demo", "p"), status: 404, code: "not_found"},
		{name: "half the prefix", req: post("/a/demo", "p"), status: 404, code: "not_found"},
		{name: "prefix reversed", req: post("/b/a/demo", "p"), status: 404, code: "not_found"},
		{name: "extra segment", req: post("/a/b/c/demo", "p"), status: 404, code: "not_found"},
		{name: "prefix only", req: post("/a/b", "p"), status: 404, code: "not_found"},
		{name: "prefix trailing slash", req: post("/a/b/", "p"), status: 404, code: "not_found"},
		{name: "prefix case", req: post("/A/b/demo", "p"), status: 404, code: "not_found"},
		{name: "source then extra", req: post("/a/b/demo/x", "p"), status: 404, code: "not_found"},
		{name: "prefix segment encoded", req: post("/%61/b/demo", "p"), status: 404, code: "not_found"},
	}
	runHookCases(t, n, cases)
}

// TestTenantResolution checks the seed's resolution order and binding under
// tenantpath: the URL's tenant wins for a shared source; a tenant's own
// source answers only its tenant's URL; names that are not
// [a-z0-9][a-z0-9._-]{0,62} are 404.
func TestTenantResolution(t *testing.T) {
	long63 := "t" + strings.Repeat("0", 62)
	cfg := loadConfig(t, tenantPathConfig+"  "+long63+": {verify: {type: none}, trust_url_tenant: true}\n")
	n := startNode(t, cfg)
	cases := []hookCase{
		{name: "bound source, its tenant", req: post("/webhooks/acme/acme-billing", "a1"), status: 201, tenant: "acme", source: "acme-billing"},
		{name: "bound source, another tenant", req: post("/webhooks/globex/acme-billing", "a2"), status: 404, code: "not_found"},
		{name: "bound source, tenant default", req: post("/webhooks/default/acme-billing", "a3"), status: 404, code: "not_found"},
		{name: "bound source, tenant prefix of owner", req: post("/webhooks/acm/acme-billing", "a4"), status: 404, code: "not_found"},
		{name: "shared source, globex", req: post("/webhooks/globex/shared", "s1"), status: 201, tenant: "globex", source: "shared"},
		{name: "shared source, acme", req: post("/webhooks/acme/shared", "s2"), status: 201, tenant: "acme", source: "shared"},
		{name: "shared source, tenant default", req: post("/webhooks/default/shared", "s3"), status: 201, tenant: "default", source: "shared"},
		{name: "shared source, name chars", req: post("/webhooks/a.b_c-9/shared", "s4"), status: 201, tenant: "a.b_c-9", source: "shared"},
		{name: "tenant of 63 chars", req: post("/webhooks/"+long63+"/shared", "s5"), status: 201, tenant: long63, source: "shared"},
		{name: "source of 63 chars", req: post("/webhooks/acme/"+long63, "s6"), status: 201, tenant: "acme", source: long63},
		{name: "no tenant segment", req: post("/webhooks/shared", "x"), status: 404, code: "not_found"},
		{name: "unknown source", req: post("/webhooks/acme/nope", "x"), status: 404, code: "not_found"},
		{name: "tenant uppercase", req: post("/webhooks/ACME/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant mixed case", req: post("/webhooks/Acme/shared", "x"), status: 404, code: "not_found"},
		{name: "source uppercase", req: post("/webhooks/acme/SHARED", "x"), status: 404, code: "not_found"},
		{name: "tenant of 64 chars", req: post("/webhooks/"+long63+"0/shared", "x"), status: 404, code: "not_found"},
		{name: "source of 64 chars", req: post("/webhooks/acme/"+long63+"0", "x"), status: 404, code: "not_found"},
		{name: "tenant starts with -", req: post("/webhooks/-acme/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant starts with _", req: post("/webhooks/_acme/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant starts with .", req: post("/webhooks/.acme/shared", "x"), status: 404, code: "not_found"},
		{name: "source starts with -", req: post("/webhooks/acme/-shared", "x"), status: 404, code: "not_found"},
		{name: "tenant with a space", req: post("/webhooks/ac%20me/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant with a colon", req: post("/webhooks/ac:me/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant non-ASCII", req: post("/webhooks/acm\xc3\xa9/shared", "x"), status: 404, code: "not_found"},
		{name: "tenant dot segment", req: post("/webhooks/../shared", "x"), status: 404, code: "not_found"},
		{name: "tenant empty", req: post("/webhooks//shared", "x"), status: 404, code: "not_found"},
	}
	runHookCases(t, n, cases)
}

// TestPathResolverNames checks the name rule under the path resolver,
// where the tenant is never in the URL.
func TestPathResolverNames(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	cases := []hookCase{
		{name: "source uppercase", req: post("/webhooks/DEMO", "x"), status: 404, code: "not_found"},
		{name: "source starts with -", req: post("/webhooks/-demo", "x"), status: 404, code: "not_found"},
		{name: "source of 64 chars", req: post("/webhooks/"+strings.Repeat("d", 64), "x"), status: 404, code: "not_found"},
		{name: "tenant in the URL", req: post("/webhooks/acme/acme-billing", "x"), status: 404, code: "not_found"},
	}
	runHookCases(t, n, cases)
}

// TestKeepAlive checks that a 201 leaves the connection clean for the next
// request: two pipelined hooks are both stored, whole, in order.
func TestKeepAlive(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	req := append(post("/webhooks/demo", "first"), post("/webhooks/acme-billing", "second")...)
	// A POST with neither Content-Length nor Transfer-Encoding has no body:
	// what follows it is the next request, not its body.
	req = append(req, rawReq("POST /webhooks/demo HTTP/1.1", []string{"Host: h"}, "")...)
	req = append(req, post("/webhooks/demo", "fourth")...)
	c := dialRaw(t, n.addr)
	if _, err := c.conn.Write(req); err != nil {
		t.Fatal(err)
	}
	want := []struct{ tenant, body string }{{"default", "first"}, {"acme", "second"}, {"default", ""}, {"default", "fourth"}}
	for i, w := range want {
		r := c.read(t)
		if r.status != 201 {
			t.Fatalf("request %d: %s", i, r)
		}
		e := findStored(t, n.stored(t), r.body)
		if e.TenantID != w.tenant || string(e.Body) != w.body {
			t.Errorf("request %d stored tenant %q body %q, want %q %q", i, e.TenantID, e.Body, w.tenant, w.body)
		}
	}
	// The connection is still usable; a refusal then closes it.
	if _, err := c.conn.Write(post("/webhooks/nope", "x")); err != nil {
		t.Fatal(err)
	}
	r := c.read(t)
	wantAnswer(t, "404 after keep-alive", r, 404, "not_found")
	if !c.closedByServer(t) {
		t.Errorf("404 did not close the connection")
	}
}
