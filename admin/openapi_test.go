package admin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
)

// The OpenAPI document (openapi.json) against the routes admin registers
// and the answers its handlers give. OpenAPI 3.1 schemas are JSON Schema
// 2020-12, which github.com/santhosh-tekuri/jsonschema/v6 validates.

// docURL is where the compiler finds the document: a "#/..." $ref in a
// schema resolves against it.
const docURL = "https://ankusa.invalid/openapi.json"

// apiDoc is the parsed document and a compiler over it.
type apiDoc struct {
	raw      map[string]any
	ops      []docOp
	mux      *http.ServeMux // routes a request to its docOp
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// docOp is one operation of the document: its method and path, the mux
// pattern that serves it (x-ankusa-pattern of its path item, else
// "METHOD path") and the operation object.
type docOp struct {
	method, path, pattern string
	op                    map[string]any
}

func (o *docOp) key() string { return o.method + " " + o.path }

func loadDoc(t *testing.T) *apiDoc {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal(openAPIDoc, &raw); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if raw["openapi"] != "3.1.0" {
		t.Fatalf("openapi: %v, want 3.1.0", raw["openapi"])
	}
	d := &apiDoc{raw: raw, mux: http.NewServeMux(), compiler: jsonschema.NewCompiler(), compiled: map[string]*jsonschema.Schema{}}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIDoc))
	if err != nil {
		t.Fatal(err)
	}
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := d.compiler.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	for path, item := range raw["paths"].(map[string]any) {
		item := item.(map[string]any)
		for method, op := range item {
			if strings.HasPrefix(method, "x-") {
				continue
			}
			o := docOp{method: strings.ToUpper(method), path: path, op: op.(map[string]any)}
			o.pattern = o.method + " " + path
			if p, ok := item["x-ankusa-pattern"].(string); ok {
				o.pattern = p
			}
			d.ops = append(d.ops, o)
		}
	}
	sort.Slice(d.ops, func(i, j int) bool { return d.ops[i].key() < d.ops[j].key() })
	for i := range d.ops {
		d.mux.Handle(d.ops[i].key(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Op", strconv.Itoa(i)) }))
	}
	return d
}

// opOf is the operation the document says serves method target, or nil.
func (d *apiDoc) opOf(method, target string) *docOp {
	r := httptest.NewRequest(method, target, nil)
	w := httptest.NewRecorder()
	if _, pattern := d.mux.Handler(r); pattern == "" {
		return nil
	}
	d.mux.ServeHTTP(w, r)
	i, err := strconv.Atoi(w.Header().Get("X-Op"))
	if err != nil {
		return nil
	}
	return &d.ops[i]
}

// ptr escapes a JSON pointer token.
func ptr(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }

// response is the response object of op for status (its $ref followed)
// and the JSON pointer it sits at; nil when the document has none.
func (d *apiDoc) response(op *docOp, status int) (map[string]any, string) {
	rs := op.op["responses"].(map[string]any)
	at := "/paths/" + ptr(op.path) + "/" + strings.ToLower(op.method) + "/responses/"
	code := strconv.Itoa(status)
	r, ok := rs[code].(map[string]any)
	if !ok {
		if r, ok = rs["default"].(map[string]any); !ok {
			return nil, ""
		}
		code = "default"
	}
	at += ptr(code)
	if ref, ok := r["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/responses/")
		r = d.raw["components"].(map[string]any)["responses"].(map[string]any)[name].(map[string]any)
		at = "/components/responses/" + ptr(name)
	}
	return r, at
}

// schema compiles the schema at the JSON pointer at of the document.
func (d *apiDoc) schema(t *testing.T, at string) *jsonschema.Schema {
	t.Helper()
	if s, ok := d.compiled[at]; ok {
		return s
	}
	s, err := d.compiler.Compile(docURL + "#" + at)
	if err != nil {
		t.Fatalf("cannot compile the schema at %s: %v", at, err)
	}
	d.compiled[at] = s
	return s
}

// checkAnswer validates one answer to method target against the
// document: the operation exists, declares the status, the media type
// and, for JSON, a schema the body passes. It returns the operation.
func (d *apiDoc) checkAnswer(t *testing.T, method, target string, a answer) *docOp {
	t.Helper()
	op := d.opOf(method, target)
	if op == nil {
		t.Errorf("%s %s: no operation of the document serves it", method, target)
		return nil
	}
	resp, at := d.response(op, a.code)
	if resp == nil {
		t.Errorf("%s %s (%s): status %d is not in the document: %s", method, target, op.key(), a.code, a.body)
		return op
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if a.body != "" {
			t.Errorf("%s %s: %d has a body the document does not declare: %q", method, target, a.code, a.body)
		}
		return op
	}
	mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type"))
	if err != nil || content[mt] == nil {
		t.Errorf("%s %s: %d answered %q; the document declares %v", method, target, a.code, a.header.Get("Content-Type"), keys(content))
		return op
	}
	if mt == mediaNDJSON {
		d.checkLines(t, method, target, a, at+"/content/"+ptr(mt))
		return op
	}
	if mt != "application/json" {
		return op
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(a.body))
	if err != nil {
		t.Errorf("%s %s: %d body is not JSON: %v: %q", method, target, a.code, err, a.body)
		return op
	}
	if err := d.schema(t, at+"/content/"+ptr(mt)+"/schema").Validate(v); err != nil {
		t.Errorf("%s %s: the %d body does not match the document: %v\nbody: %s", method, target, a.code, err, a.body)
	}
	return op
}

// checkLines validates each line of an NDJSON answer against the
// x-ankusa-line-schema of its media type object (at).
func (d *apiDoc) checkLines(t *testing.T, method, target string, a answer, at string) {
	t.Helper()
	if a.body != "" && !strings.HasSuffix(a.body, "\n") {
		t.Errorf("%s %s: an NDJSON body whose last line has no newline: %q", method, target, a.body)
	}
	for _, line := range strings.Split(strings.TrimSuffix(a.body, "\n"), "\n") {
		if line == "" && a.body == "" {
			break
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Errorf("%s %s: an NDJSON line is not JSON: %v: %q", method, target, err, line)
			continue
		}
		if err := d.schema(t, at+"/x-ankusa-line-schema").Validate(v); err != nil {
			t.Errorf("%s %s: an NDJSON line does not match the document: %v\nline: %s", method, target, err, line)
		}
	}
}

// checkRequestBody validates a body a request sent (and the handler took)
// against the operation's request schema.
func (d *apiDoc) checkRequestBody(t *testing.T, op *docOp, body string) {
	t.Helper()
	if op.op["requestBody"] == nil {
		t.Errorf("%s took a body the document does not declare", op.key())
		return
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	at := "/paths/" + ptr(op.path) + "/" + strings.ToLower(op.method) + "/requestBody/content/application~1json/schema"
	if err := d.schema(t, at).Validate(v); err != nil {
		t.Errorf("%s: a body the handler took does not match the document's request schema: %v\nbody: %s", op.key(), err, body)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// matrixTokens are the token kinds of the matrix (the tenant a is acme,
// the tenant b globex: the fixtures' tenants). Each bearer is
// "tok-" + name.
func matrixTokens() []config.AdminToken {
	return []config.AdminToken{
		{Name: "a", SHA256: digest("tok-a"), Scopes: []string{"tenant:acme"}},
		{Name: "b", SHA256: digest("tok-b"), Scopes: []string{"tenant:globex"}},
		{Name: "all", SHA256: digest("tok-all"), Scopes: []string{"tenant:*"}},
		{Name: "reader", SHA256: digest("tok-reader"), Scopes: []string{"tenants:read"}},
		{Name: "writer", SHA256: digest("tok-writer"), Scopes: []string{"tenants:write"}},
		{Name: "prof", SHA256: digest("tok-prof"), Scopes: []string{"debug"}},
		{Name: "eraser", SHA256: digest("tok-eraser"), Scopes: []string{"tenants:write", "tenant:*"}},
	}
}

// fullNode is an admin listener serving every route: the persistent
// source store over a meta store on disk (which also holds the tenants,
// the overrides and the audit log), the tenant policy, and the fakes of
// the other tests for hooks, dead letters and the quarantine pen.
type fullNode struct {
	srv     *Server
	addr    string
	meta    *meta.Store
	backlog *fakeBacklog
	health  *failFlag
	eraser  *fakeEraser
}

// matrixMaxBody is fullNode's admin.max_body_bytes: a body past it fits
// the socket buffers, so its 413 is read whole.
const matrixMaxBody = 16 << 10

func newFullNode(t *testing.T) *fullNode {
	t.Helper()
	cfg, err := config.Load([]byte(`
route_resolver: {type: token, path: /webhooks/catch/:token}
routes: {enabled: true}
rate_limits: {default: {rate: 10, burst: 10}}
source_store: {type: persistent}
sources:
  stripe: {tenant_id: acme, verify: {type: stripe, secret: `+penSecret+`}}
  gh: {tenant_id: acme, verify: {type: github, secret: `+penSecret+`}}
  globex-cfg: {tenant_id: globex, verify: {type: hmac, header: X-Sig, secret: s3cret}}
`), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Close() })
	lc, err := lifecycle.New(lifecycle.Options{Store: ms, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: ms},
		Context: config.SourceContext{Resolver: "token", WALType: "disk", DedupeScope: "node"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"acme", "globex"} {
		if err := ms.SetTenant(name, uint32(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	policy := tenant.NewPolicy(config.RateLimits{Default: &config.RateLimit{Rate: 50, Burst: 100, MaxQueue: 1000}})
	if err := policy.LoadOverrides(ms); err != nil {
		t.Fatal(err)
	}
	n := &fullNode{meta: ms, backlog: &fakeBacklog{counts: map[string]int64{}}, health: &failFlag{}, eraser: newFakeEraser()}
	n.srv = startServer(t, Options{
		Tokens: matrixTokens(), Hooks: &fakeFetcher{}, Deliveries: &fakeDeliveries{}, Quarantine: &fakePen{},
		Sources: store, Backlog: n.backlog, Resolver: cfg.RouteResolver, Health: n.health, Logger: zap.NewNop(),
		Tenants: ms, Counts: fakeCounts{}, Limits: policy, Overrides: ms, Audit: ms, Events: lc, Claims: fakeClaims{},
		Erase: n.eraser, Listener: ListenerOptions{MaxBodyBytes: matrixMaxBody},
	})
	n.addr = n.srv.Addr().String()
	// The API's own entities of each tenant: a source and a route.
	for _, tn := range []string{"acme", "globex"} {
		src := fmt.Sprintf(`{"name": "%s-api", "verify": {"type": "hmac", "header": "X-Sig", "secret": "k"}, "sinks": [{"id": "out", "type": "http", "url": "https://example.com/%s"}]}`, tn, tn)
		if a := n.do(t, "POST", "/v1/tenants/"+tn+"/sources", "tok-all", src); a.code != 201 {
			t.Fatalf("create %s-api: %d %s", tn, a.code, a.body)
		}
		rt := fmt.Sprintf(`{"id": "%s-route", "source_id": "%s-api", "token": "auto"}`, tn, tn)
		if a := n.do(t, "POST", "/v1/tenants/"+tn+"/routes", "tok-all", rt); a.code != 201 {
			t.Fatalf("create %s-route: %d %s", tn, a.code, a.body)
		}
	}
	return n
}

// do sends one request on a connection of its own, the target exactly as
// given; a connection closed without an answer is status 0.
func (n *fullNode) do(t *testing.T, method, target, bearer, body string) answer {
	t.Helper()
	c, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n"
	if bearer != "" {
		req += "Authorization: Bearer " + bearer + "\r\n"
	}
	if body != "" || method == "PUT" || method == "POST" {
		req += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	// Written while the answer is read: a body refused early (413) is
	// answered before it is all sent.
	go func() { _, _ = io.WriteString(c, req+"\r\n"+body) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// TestOpenAPIRoutes: every registered pattern is in the document and
// every operation of the document is registered. A path maps to the
// pattern of the same text ({tenant} to {tenant}); the one exception is
// /debug/pprof/{profile}, whose x-ankusa-pattern names the subtree pattern
// "GET /debug/pprof/" that serves it (and that /debug/pprof/, the index,
// documents as well). Each operation's path, with sample values, must
// also reach its pattern in the listener's mux.
func TestOpenAPIRoutes(t *testing.T) {
	d := loadDoc(t)
	o := fullOptions(t)
	pats, err := Patterns(o)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, op := range d.ops {
		documented[op.pattern] = true
	}
	registered := map[string]bool{}
	for _, p := range pats {
		if registered[p] {
			t.Errorf("pattern %q registered twice", p)
		}
		registered[p] = true
		if !documented[p] {
			t.Errorf("the route %q is not in openapi.json", p)
		}
	}
	mux := http.NewServeMux()
	auth, _ := NewAuth(o.Tokens)
	if err := register(mux, auth, o); err != nil {
		t.Fatal(err)
	}
	(&Server{}).registerOpen(mux, auth)
	for _, op := range d.ops {
		if !registered[op.pattern] {
			t.Errorf("openapi.json documents %s, which no route serves (pattern %q)", op.key(), op.pattern)
			continue
		}
		target := strings.NewReplacer("{tenant}", "acme", "{name}", "stripe", "{id}", "r1", "{event_id}", goodID.String(),
			"{sink}", "out", "{profile}", "heap", "{ref}", claimRef("acme", "packs", "p.pack")).Replace(op.path)
		if _, got := mux.Handler(httptest.NewRequest(op.method, target, nil)); got != op.pattern {
			t.Errorf("%s %s reaches the pattern %q, want %q", op.method, target, got, op.pattern)
		}
	}
}

// fullOptions serve every route (nothing is called: Patterns and the mux
// only register).
func fullOptions(t *testing.T) Options {
	t.Helper()
	return Options{Tokens: matrixTokens(), Hooks: &fakeFetcher{}, Deliveries: &fakeDeliveries{}, Quarantine: &fakePen{},
		Sources: penSources(), Backlog: &fakeBacklog{}, Tenants: &meta.Store{}, Limits: tenant.NewPolicy(config.RateLimits{}),
		Overrides: &meta.Store{}, Audit: &meta.Store{}, Events: &lifecycle.Lifecycle{}, Claims: fakeClaims{},
		Erase: newFakeEraser()}
}

// TestOpenAPISchemasClosed: an answer's object is closed (every object
// schema says what else it may hold: additionalProperties false, or the
// schema of a map's values), so a field the handlers add is a failure
// until the document describes it.
func TestOpenAPISchemasClosed(t *testing.T) {
	d := loadDoc(t)
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "object" {
				if _, ok := v["additionalProperties"]; !ok {
					t.Errorf("%s: an object schema without additionalProperties (false, or the schema of a map's values)", at)
				}
			}
			for k, c := range v {
				walk(at+"/"+ptr(k), c)
			}
		case []any:
			for i, c := range v {
				walk(at+"/"+strconv.Itoa(i), c)
			}
		}
	}
	walk("/components/schemas", d.raw["components"].(map[string]any)["schemas"])
	// Every JSON answer has a schema that is not empty.
	for _, op := range d.ops {
		for code := range op.op["responses"].(map[string]any) {
			n, _ := strconv.Atoi(code)
			r, _ := d.response(&op, n)
			for mt, c := range mapOf(r["content"]) {
				if s := mapOf(mapOf(c)["schema"]); mt == "application/json" && len(s) == 0 {
					t.Errorf("%s %s: an empty schema", op.key(), code)
				}
			}
		}
		if op.op["x-ankusa-scope"] == nil {
			t.Errorf("%s: no x-ankusa-scope", op.key())
		}
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// answerCase is one request whose answer is recorded and validated.
type answerCase struct {
	method, target, bearer, body string
	status                       int
}

// TestOpenAPIAnswers drives every endpoint of the real listener, a success
// and at least one error each, and validates every answer against the
// document's schema for its status; a body a handler took is validated
// against the request schema too.
func TestOpenAPIAnswers(t *testing.T) {
	d := loadDoc(t)
	n := newFullNode(t)
	seen := map[string]map[bool]bool{} // op key: success, error
	run := func(cs []answerCase) {
		t.Helper()
		for _, c := range cs {
			a := n.do(t, c.method, c.target, c.bearer, c.body)
			if a.code != c.status {
				t.Errorf("%s %s (%s): %d, want %d: %s", c.method, c.target, c.bearer, a.code, c.status, a.body)
				continue
			}
			op := d.checkAnswer(t, c.method, c.target, a)
			if op == nil {
				continue
			}
			if seen[op.key()] == nil {
				seen[op.key()] = map[bool]bool{}
			}
			seen[op.key()][a.code < 300] = true
			if c.body != "" && a.code < 300 {
				d.checkRequestBody(t, op, c.body)
			}
		}
	}
	run(answerCases(n))
	// healthz and readyz change with the node's state.
	n.health.Store(true)
	run([]answerCase{{"GET", "/healthz", "", "", 503}, {"GET", "/readyz", "", "", 503}})
	n.health.Store(false)
	n.srv.SetReady(true)
	run([]answerCase{{"GET", "/readyz", "", "", 200}})
	for _, op := range d.ops {
		open := op.op["x-ankusa-scope"] == "open" && op.path != "/healthz" && op.path != "/readyz"
		if s := seen[op.key()]; !s[true] || !s[false] && !open {
			t.Errorf("%s: recorded success %v, error %v; record both", op.key(), s[true], s[false])
		}
	}
}

// answerCases are the recorded requests, in an order that leaves each
// entity there for the next (a delete comes after the reads and updates).
// It is one table, longer than a function should be, read row by row.
func answerCases(n *fullNode) []answerCase {
	const T = "/v1/tenants/acme"
	hook := func(id fmt.Stringer) string { return T + "/hooks/" + id.String() }
	dl := func(id fmt.Stringer, sink string) string { return T + "/deliveries/" + id.String() + "/" + sink }
	pen := func(id fmt.Stringer) string { return T + "/quarantine/" + id.String() }
	newSrc := `{"name": "acme-new", "verify": {"type": "github", "secret": "gh"}, "on_verify_failure": "quarantine", "dedupe": {"key": "{{header \"X-Id\"}}", "ttl": "1h"}, "quarantine": {"rate": 1, "burst": 2}, "max_body_bytes": "1MiB", "sinks": [{"id": "main", "type": "http", "url": "https://example.com/in", "secret": "out", "headers": {"X-A": "1"}, "timeout": "5s", "max_attempts": 3}, {"id": "spare", "type": "http", "url": "https://example.com/spare"}]}`
	big := `{"name": "x", "verify": {"type": "none"}, "max_body_bytes": "` + strings.Repeat("9", matrixMaxBody) + `"}`
	rl := `{"rate": 5, "burst": 10, "max_queue": 100, "max_queue_bytes": 1048576}`
	cs := []answerCase{
		{"GET", hook(goodID), "tok-a", "", 200},
		{"GET", hook(globexID), "tok-a", "", 404},
		{"GET", hook(goneID), "tok-a", "", 410},
		{"GET", hook(brokenID), "tok-a", "", 500},
		{"GET", hook(goodID), "", "", 401},
		{"GET", hook(goodID), "tok-b", "", 403},
		{"GET", T + "/hooks/-bad", "tok-a", "", 400},
		{"GET", T + "/claims/" + claimRef("acme", "packs", "p.pack"), "tok-a", "", 200},
		{"GET", T + "/claims/" + claimRef("globex", "packs", "p.pack"), "tok-a", "", 404},
		{"GET", T + "/claims/e30", "tok-a", "", 400},
		{"GET", T + "/claims/a.b", "tok-a", "", 400},
		{"GET", T + "/claims/" + claimRef("acme", "packs", "corrupt.pack"), "tok-a", "", 500},
		{"GET", T + "/claims/" + claimRef("acme", "down", "p.pack"), "tok-a", "", 502},
		{"GET", T + "/claims/" + claimRef("acme", "packs", "p.pack"), "", "", 401},
		{"GET", T + "/claims/" + claimRef("acme", "packs", "p.pack"), "tok-b", "", 403},
		{"GET", hook(goodID) + "/attempts", "tok-a", "", 200},
		{"GET", hook(noTriesID) + "/attempts", "tok-a", "", 200},
		{"GET", hook(unknownID) + "/attempts", "tok-a", "", 404},
		{"GET", hook(brokenID) + "/attempts", "tok-all", "", 500},
		{"GET", T + "/deliveries?state=dead", "tok-a", "", 200},
		{"GET", T + "/deliveries?state=dead&limit=1", "tok-a", "", 200},
		{"GET", T + "/deliveries", "tok-a", "", 400},
		{"GET", T + "/deliveries?state=dead&source=broken", "tok-a", "", 500},
		{"POST", T + "/deliveries/retry?source=stripe", "tok-a", "", 200},
		{"POST", T + "/deliveries/retry?since=yesterday", "tok-a", "", 400},
		{"POST", T + "/deliveries/retry?source=broken", "tok-a", "", 500},
		{"POST", T + "/deliveries/drop?all=true", "tok-a", "", 200},
		{"POST", T + "/deliveries/drop", "tok-a", "", 400},
		{"POST", T + "/deliveries/drop?source=broken", "tok-a", "", 500},
		{"POST", dl(goodID, "http-acme") + "/retry", "tok-a", "", 200},
		{"POST", dl(pendingID, "http-acme") + "/retry", "tok-a", "", 409},
		{"POST", dl(unknownID, "http-acme") + "/retry", "tok-a", "", 404},
		{"POST", dl(brokenID, "http-acme") + "/retry", "tok-a", "", 500},
		{"POST", dl(goodID, "HTTP") + "/retry", "tok-a", "", 400},
		{"POST", hook(goodID) + "/sinks/http-acme/redeliver", "tok-a", "", 200},
		{"POST", hook(pendingID) + "/sinks/http-acme/redeliver", "tok-a", "", 409},
		{"POST", hook(goodID) + "/sinks/nope/redeliver", "tok-a", "", 404},
		{"POST", hook(brokenID) + "/sinks/http-acme/redeliver", "tok-a", "", 500},
		{"DELETE", dl(goodID, "http-acme"), "tok-a", "", 204},
		{"DELETE", dl(pendingID, "http-acme"), "tok-a", "", 409},
		{"DELETE", dl(globexID, "http-globex"), "tok-a", "", 404},
		{"DELETE", dl(brokenID, "http-acme"), "tok-a", "", 500},
		{"GET", T + "/quarantine", "tok-a", "", 200},
		{"GET", T + "/quarantine?limit=2", "tok-a", "", 200},
		{"GET", T + "/quarantine?limit=0", "tok-a", "", 400},
		{"GET", T + "/quarantine?source=broken", "tok-a", "", 500},
		{"POST", T + "/quarantine/drop?source=gh", "tok-a", "", 200},
		{"POST", T + "/quarantine/drop", "tok-a", "", 400},
		{"POST", T + "/quarantine/drop?source=broken", "tok-a", "", 500},
		{"POST", pen(goodID) + "/release", "tok-a", "", 200},
		{"POST", pen(goodID) + "/release?force=true", "tok-a", "", 200},
		{"POST", pen(goodID) + "/release?force=maybe", "tok-a", "", 400},
		{"POST", pen(penStillID) + "/release", "tok-a", "", 409},
		{"POST", pen(penSrcGone) + "/release?force=true", "tok-a", "", 409},
		{"POST", pen(penBusyID) + "/release", "tok-a", "", 503},
		{"POST", pen(globexID) + "/release", "tok-a", "", 404},
		{"POST", pen(penRemovedID) + "/release", "tok-a", "", 500},
		{"DELETE", pen(goodID), "tok-a", "", 204},
		{"DELETE", pen(penSrcGone), "tok-a", "", 409},
		{"DELETE", pen(penBusyID), "tok-a", "", 503},
		{"DELETE", pen(unknownID), "tok-a", "", 404},
		{"DELETE", pen(brokenID), "tok-a", "", 500},
		// Sources.
		{"GET", T + "/sources", "tok-a", "", 200},
		{"GET", T + "/sources?limit=1", "tok-a", "", 200},
		{"GET", T + "/sources?limit=x", "tok-a", "", 400},
		{"POST", T + "/sources", "tok-a", newSrc, 201},
		{"POST", T + "/sources", "tok-a", `{"verify": {"type": "hmac", "secret": "k"}}`, 201},
		{"POST", T + "/sources", "tok-a", newSrc, 409},
		{"POST", T + "/sources", "tok-a", `{"name": "x", "verify": {"type": "none", "secrett": "k"}}`, 400},
		{"POST", T + "/sources?force=1", "tok-a", `{}`, 400},
		{"POST", T + "/sources", "tok-a", big, 413},
		{"GET", T + "/sources/stripe", "tok-a", "", 200},
		{"GET", T + "/sources/acme-new", "tok-a", "", 200},
		{"GET", T + "/sources/globex-api", "tok-a", "", 404},
		{"PUT", T + "/sources/acme-new", "tok-a", `{"verify": {"type": "github"}, "sinks": [{"id": "main", "type": "http", "url": "https://example.com/v2"}, {"id": "spare", "type": "http", "url": "https://example.com/spare"}]}`, 200},
		{"PUT", T + "/sources/stripe", "tok-a", `{"verify": {"type": "stripe"}}`, 409},
		{"PUT", T + "/sources/nope", "tok-a", `{"verify": {"type": "none"}}`, 404},
		{"PUT", T + "/sources/acme-new", "tok-a", `{"verify": {"type": "github"}, "tenant_id": "globex"}`, 400},
		{"PUT", T + "/sources/acme-new?deliveries=all", "tok-a", `{"verify": {"type": "github"}}`, 400},
		{"DELETE", T + "/sources/stripe", "tok-a", "", 409},
		{"DELETE", T + "/sources/nope", "tok-a", "", 404},
		{"DELETE", T + "/sources/acme-new?x=1", "tok-a", "", 400},
		// Routes.
		{"GET", T + "/routes", "tok-a", "", 200},
		{"GET", T + "/routes?limit=0", "tok-a", "", 400},
		{"POST", T + "/routes", "tok-a", `{"id": "r2", "source_id": "stripe", "token": "auto"}`, 201},
		{"POST", T + "/routes", "tok-a", `{"id": "r3", "source_id": "stripe", "path": "/webhooks/acme/stripe"}`, 201},
		{"POST", T + "/routes", "tok-a", `{"id": "r2", "source_id": "stripe", "token": "auto"}`, 409},
		{"POST", T + "/routes", "tok-a", `{"source_id": 5}`, 400},
		{"GET", T + "/routes/r2", "tok-a", "", 200},
		{"GET", T + "/routes/globex-route", "tok-a", "", 404},
		{"PUT", T + "/routes/r2", "tok-a", `{"source_id": "stripe", "token": "auto"}`, 200},
		{"PUT", T + "/routes/nope", "tok-a", `{"source_id": "stripe", "token": "auto"}`, 404},
		{"PUT", T + "/routes/r2", "tok-a", `{"id": "r9", "source_id": "stripe"}`, 400},
		{"DELETE", T + "/routes/r2", "tok-a", "", 204},
		{"DELETE", T + "/routes/r2", "tok-a", "", 404},
		// Tenants, rate limits, audit.
		{"GET", "/v1/tenants", "tok-reader", "", 200},
		{"GET", "/v1/tenants?limit=1", "tok-reader", "", 200},
		{"GET", "/v1/tenants?limit=0", "tok-reader", "", 400},
		{"GET", "/v1/tenants", "tok-a", "", 403},
		{"GET", "/v1/tenants", "tok-nobody", "", 401},
		{"GET", T, "tok-a", "", 200},
		{"GET", "/v1/tenants/initech", "tok-all", "", 404},
		{"GET", "/v1/tenants/ACME", "tok-all", "", 400},
		{"GET", T + "/rate_limit", "tok-a", "", 200},
		{"GET", T + "/rate_limit", "tok-b", "", 403},
		{"PUT", T + "/rate_limit", "tok-writer", rl, 200},
		{"PUT", "/v1/tenants/free/rate_limit", "tok-writer", `{"rate": "inf", "burst": 0, "max_queue": 0, "max_queue_bytes": 0}`, 200},
		{"GET", T + "/rate_limit", "tok-a", "", 200},
		{"GET", T, "tok-a", "", 200},
		{"GET", "/v1/tenants", "tok-reader", "", 200},
		{"PUT", T + "/rate_limit", "tok-writer", `{"rate": 5}`, 400},
		{"PUT", T + "/rate_limit", "tok-a", rl, 403},
		{"DELETE", T + "/rate_limit", "tok-writer", "", 204},
		{"DELETE", T + "/rate_limit", "tok-writer", "", 404},
		{"GET", "/v1/audit", "tok-reader", "", 200},
		{"GET", "/v1/audit?tenant=acme&limit=2", "tok-a", "", 200},
		{"GET", "/v1/audit?since=yesterday", "tok-reader", "", 400},
		{"GET", "/v1/audit", "tok-a", "", 403},
		{"GET", "/v1/events", "tok-reader", "", 200},
		{"GET", "/v1/events?tenant=acme&limit=1", "tok-a", "", 200},
		{"GET", "/v1/events?tenant=acme&type=io.ankusa.route.*&format=ndjson", "tok-a", "", 200},
		{"GET", "/v1/events?tenant=initech&format=ndjson", "tok-reader", "", 200},
		{"GET", "/v1/events?after=" + goodID.String(), "tok-reader", "", 400},
		{"GET", "/v1/events?type=source", "tok-reader", "", 400},
		{"GET", "/v1/events", "tok-a", "", 403},
		// Erase (a tenant of its own, so acme's entities stay).
		{"GET", "/v1/tenants/umbrella/erase", "tok-all", "", 404},
		{"DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-eraser", "", 202},
		{"DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-eraser", "", 200},
		{"DELETE", "/v1/tenants/umbrella", "tok-eraser", "", 400},
		{"DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-all", "", 403},
		{"DELETE", "/v1/tenants/default?confirm=default", "tok-eraser", "", 409},
		{"DELETE", "/v1/tenants/broken?confirm=broken", "tok-eraser", "", 500},
		{"GET", "/v1/tenants/umbrella/erase", "tok-all", "", 200},
		{"GET", "/v1/tenants/hooli/erase", "tok-all", "", 200},
		{"GET", "/v1/tenants/hooli/erase?x=1", "tok-all", "", 400},
		{"PUT", "/v1/tenants/umbrella/rate_limit", "tok-writer", rl, 409},
		{"POST", "/v1/tenants/umbrella/sources", "tok-all", `{"name": "umbrella-api", "verify": {"type": "none"}}`, 409},
		// Open, and the profiles.
		{"GET", "/v1/openapi.json", "", "", 200},
		{"GET", "/metrics", "", "", 200},
		{"GET", "/healthz", "", "", 200},
		{"GET", "/readyz", "", "", 503},
		{"GET", "/debug/pprof/", "tok-prof", "", 200},
		{"GET", "/debug/pprof/", "tok-all", "", 403},
		{"GET", "/debug/pprof/heap", "tok-prof", "", 200},
		{"GET", "/debug/pprof/goroutine?debug=1", "tok-prof", "", 200},
		{"GET", "/debug/pprof/nope", "tok-prof", "", 404},
		{"GET", "/debug/pprof/heap", "", "", 401},
		{"GET", "/debug/pprof/profile?seconds=1", "tok-prof", "", 200},
		{"GET", "/debug/pprof/profile?seconds=x", "tok-prof", "", 400},
		{"GET", "/debug/pprof/symbol", "tok-prof", "", 200},
		{"GET", "/debug/pprof/symbol", "tok-reader", "", 403},
		{"GET", "/debug/pprof/trace?seconds=0.2", "tok-prof", "", 200},
		{"GET", "/debug/pprof/trace?seconds=600", "tok-prof", "", 400},
	}
	// A source whose sinks have undelivered hooks: 409 with the count.
	n.backlog.mu.Lock()
	n.backlog.counts["acme-api"] = 3
	n.backlog.mu.Unlock()
	cs = append(cs,
		answerCase{"PUT", T + "/sources/acme-api", "tok-a", `{"verify": {"type": "hmac", "header": "X-Sig"}}`, 409},
		answerCase{"DELETE", T + "/sources/acme-api", "tok-a", "", 409},
		answerCase{"DELETE", T + "/sources/acme-api?deliveries=dead_letter", "tok-a", "", 200},
	)
	return slices.Clip(cs)
}
