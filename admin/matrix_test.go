package admin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The endpoint × scope matrix (issue 15, acceptance 1): every operation of
// the OpenAPI document, with every token kind, against the real listener.
// The tenant a is acme, b is globex (the fixtures' tenants), and "others"
// is initech, a tenant the node does not know. What each request should
// get is decided here from the scope rules of auth.go and doc.go, not
// from the document (whose x-ankusa-scope must agree with them).

// tokenKind is one kind of bearer and what it holds.
type tokenKind struct {
	kind, bearer string
	tenants      []string // tenant:<t>; "*" for tenant:*
	read, write  bool     // tenants:read, tenants:write
	debug        bool
}

var matrixKinds = []tokenKind{
	{kind: "none"},
	{kind: "unknown", bearer: "tok-nobody"},
	{kind: "tenant:a", bearer: "tok-a", tenants: []string{"acme"}},
	{kind: "tenant:b", bearer: "tok-b", tenants: []string{"globex"}},
	{kind: "tenant:*", bearer: "tok-all", tenants: []string{"*"}},
	{kind: "tenants:read", bearer: "tok-reader", read: true},
	{kind: "tenants:write", bearer: "tok-writer", write: true},
	{kind: "debug", bearer: "tok-prof", debug: true},
	{kind: "tenants:write+tenant:*", bearer: "tok-eraser", tenants: []string{"*"}, write: true},
}

func (k tokenKind) known() bool { return k.bearer != "" && k.bearer != "tok-nobody" }

func (k tokenKind) holdsTenant(t string) bool {
	for _, h := range k.tenants {
		if h == "*" || h == t {
			return true
		}
	}
	return false
}

// scopeRule is the scope a route needs, by the rules of auth.go and
// doc.go: open, tenant, tenants:read, tenants:write, debug, audit
// (tenants:read, or the tenant's scope with ?tenant=: the audit log and
// the lifecycle replay), or erase (tenants:write and tenant:*, together).
func scopeRule(t *testing.T, method, path string) string {
	switch {
	case path == "/metrics" || path == "/healthz" || path == "/readyz" || path == "/v1/openapi.json":
		return "open"
	case strings.HasPrefix(path, "/debug/pprof/"):
		return "debug"
	case path == "/v1/tenants":
		return "tenants:read"
	case path == "/v1/audit" || path == "/v1/events":
		return "audit"
	case path == "/v1/tenants/{tenant}/rate_limit" && method != "GET":
		return "tenants:write"
	case path == "/v1/tenants/{tenant}" && method == "DELETE":
		return "erase"
	case path == "/v1/tenants/{tenant}" || strings.HasPrefix(path, "/v1/tenants/{tenant}/"):
		return "tenant"
	}
	t.Fatalf("no scope rule for %s %s: add one to scopeRule (and to auth.go's guards)", method, path)
	return ""
}

// allowed reports whether k may make a request needing scope, for the
// path's tenant (or the audit query's).
func (k tokenKind) allowed(scope, tenant string) bool {
	switch scope {
	case "open":
		return true
	case "tenant":
		return k.holdsTenant(tenant)
	case "tenants:read":
		return k.read
	case "tenants:write":
		return k.write
	case "debug":
		return k.debug
	case "audit":
		return k.read || tenant != "" && k.holdsTenant(tenant)
	case "erase":
		return k.write && slices.Contains(k.tenants, "*")
	}
	panic("BUG: scope " + scope)
}

// entities are the path values of each tenant's existing entities (the
// sources and routes newFullNode creates, the fakes' hooks and sinks);
// initech has none.
var entities = map[string]map[string]string{
	"acme":    {"name": "acme-api", "id": "acme-route", "event_id": goodID.String(), "sink": "http-acme", "profile": "heap", "ref": claimRef("acme", "packs", "p.pack")},
	"globex":  {"name": "globex-api", "id": "globex-route", "event_id": globexID.String(), "sink": "http-globex", "profile": "heap", "ref": claimRef("globex", "packs", "p.pack")},
	"initech": {"name": "initech-api", "id": "initech-route", "event_id": unknownID.String(), "sink": "http-initech", "profile": "heap", "ref": claimRef("initech", "packs", "p.pack")},
}

// matrixRequest is one request of the matrix and the answer it must get.
type matrixRequest struct {
	op                   *docOp
	method, target, body string
	kind                 tokenKind
	scope                string
	allowed              bool
	cross                bool // the path's tenant is permitted, the entity another tenant's: the one 404
}

// fill substitutes the path's wildcards: {tenant} with tenant, the others
// with owner's entities.
func fill(path, tenant, owner string) string {
	out := strings.ReplaceAll(path, "{tenant}", tenant)
	for k, v := range entities[owner] {
		out = strings.ReplaceAll(out, "{"+k+"}", v)
	}
	return out
}

// exampleQuery is the query of every parameter of op the document gives an
// example (state=dead, all=true, seconds=1, ...).
func exampleQuery(d *apiDoc, op *docOp) url.Values {
	q := url.Values{}
	for _, p := range op.op["parameters"].([]any) {
		pm := p.(map[string]any)
		if r, ok := pm["$ref"].(string); ok {
			pm = mapOf(mapOf(d.raw["components"].(map[string]any)["parameters"])[strings.TrimPrefix(r, "#/components/parameters/")])
		}
		if ex, ok := pm["example"]; ok && pm["in"] == "query" {
			q.Set(pm["name"].(string), fmt.Sprint(ex))
		}
	}
	return q
}

// exampleBody is the example of op's request body, or "".
func exampleBody(op *docOp) string {
	ex := mapOf(mapOf(mapOf(mapOf(op.op["requestBody"])["content"])["application/json"]))["example"]
	if ex == nil {
		return ""
	}
	b, _ := json.Marshal(ex)
	return string(b)
}

// matrixRequests are every operation × token kind × tenant variant.
func matrixRequests(t *testing.T, d *apiDoc) []matrixRequest {
	var out []matrixRequest
	for i := range d.ops {
		op := &d.ops[i]
		scope := scopeRule(t, op.method, op.path)
		if got := op.op["x-ankusa-scope"]; got != scope {
			t.Errorf("%s: the document's x-ankusa-scope is %v; the scope rules say %s", op.key(), got, scope)
		}
		if _, hasParams := op.op["parameters"]; !hasParams {
			op.op["parameters"] = []any{}
		}
		q := exampleQuery(d, op)
		body := exampleBody(op)
		type variant struct {
			tenant, owner string
			cross         bool
		}
		variants := []variant{{"acme", "acme", false}}
		if strings.Contains(op.path, "{tenant}") {
			variants = append(variants, variant{"globex", "globex", false}, variant{"initech", "initech", false})
			if strings.Count(op.path, "{") > 1 {
				variants = append(variants, variant{"acme", "globex", true}, variant{"globex", "acme", true})
			}
		}
		for _, v := range variants {
			queries := []url.Values{q}
			if scope == "audit" {
				queries = []url.Values{{}, {"tenant": {"acme"}}, {"tenant": {"globex"}}, {"tenant": {"initech"}}}
			}
			for _, qv := range queries {
				target := fill(op.path, v.tenant, v.owner)
				if len(qv) > 0 {
					target += "?" + qv.Encode()
				}
				tenant := v.tenant
				if scope == "audit" {
					tenant = qv.Get("tenant")
				}
				for _, k := range matrixKinds {
					out = append(out, matrixRequest{op: op, method: op.method, target: target, body: body, kind: k, scope: scope,
						allowed: k.allowed(scope, tenant), cross: v.cross})
				}
			}
		}
	}
	return out
}

// TestScopeMatrix: 0 unauthorised successes; every denial is exactly 401
// (no or an unknown token) or 403 (a known token without the scope); an
// allowed request is never 401 or 403, and one naming another tenant's
// entity under a permitted path is the one 404. Denials and cross-tenant
// requests run first, while every entity exists, then the allowed ones
// (which may change or delete them).
func TestScopeMatrix(t *testing.T) {
	d := loadDoc(t)
	n := newFullNode(t)
	n.srv.SetReady(true)
	reqs := matrixRequests(t, d)
	sort.SliceStable(reqs, func(i, j int) bool { return first(reqs[i]) && !first(reqs[j]) })
	var unauthorised, denied, allowed, cross int
	for _, r := range reqs {
		a := n.do(t, r.method, r.target, r.kind.bearer, r.body)
		name := fmt.Sprintf("%s %s as %s", r.method, r.target, r.kind.kind)
		switch {
		case !r.allowed:
			denied++
			want := 403
			if !r.kind.known() {
				want = 401
			}
			if a.code >= 200 && a.code < 400 {
				unauthorised++
				t.Errorf("UNAUTHORISED SUCCESS: %s (needs %s): %d %s", name, r.scope, a.code, a.body)
			} else if a.code != want {
				t.Errorf("%s (needs %s): %d, want %d: %s", name, r.scope, a.code, want, a.body)
			}
		case r.cross:
			cross++
			if a.code != 404 || errCode(a.body) != "not_found" {
				t.Errorf("%s: another tenant's entity: %d, want the one 404: %s", name, a.code, a.body)
			}
		default:
			allowed++
			if a.code == 401 || a.code == 403 || a.code == 0 {
				t.Errorf("%s (holds %s): %d: %s", name, r.scope, a.code, a.body)
			}
			// A token of one tenant reads nothing of the other's.
			if other := otherTenant(r.kind); other != "" && r.scope != "open" && strings.Contains(a.body, other) {
				unauthorised++
				t.Errorf("UNAUTHORISED READ: %s: the answer names %s: %s", name, other, a.body)
			}
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d operations, %d requests: %d denied (0 unauthorised successes), %d cross-tenant 404s, %d allowed",
		len(d.ops), len(reqs), denied, cross, allowed)
	if unauthorised != 0 || denied == 0 || cross == 0 || allowed == 0 {
		t.Fatalf("unauthorised %d, denied %d, cross %d, allowed %d", unauthorised, denied, cross, allowed)
	}
}

// otherTenant is the tenant whose data a one-tenant token must never see
// ("" for the other kinds).
func otherTenant(k tokenKind) string {
	switch k.kind {
	case "tenant:a":
		return "globex"
	case "tenant:b":
		return "acme"
	}
	return ""
}

// first: the requests that must not change anything run before the rest.
func first(r matrixRequest) bool { return !r.allowed || r.cross }

// TestScopeMatrixEntitiesKept: the denied and cross-tenant requests of the
// matrix (every write among them) changed nothing: each tenant's source
// and route are there as before, and no audit row was written.
func TestScopeMatrixEntitiesKept(t *testing.T) {
	d := loadDoc(t)
	n := newFullNode(t)
	before, err := n.meta.Audit(time.Time{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b strings.Builder
		for _, tn := range []string{"acme", "globex"} {
			for _, p := range []string{"/sources/" + tn + "-api", "/routes/" + tn + "-route", "/rate_limit"} {
				a := n.do(t, "GET", "/v1/tenants/"+tn+p, "tok-all", "")
				fmt.Fprintf(&b, "%d %s\n", a.code, a.body)
			}
		}
		return b.String()
	}
	was := snapshot()
	for _, r := range matrixRequests(t, d) {
		if first(r) {
			n.do(t, r.method, r.target, r.kind.bearer, r.body)
		}
	}
	if now := snapshot(); now != was {
		t.Errorf("refused requests changed the entities:\n%s\nwas\n%s", now, was)
	}
	after, err := n.meta.Audit(time.Time{}, 1000)
	if err != nil || len(after) != len(before) {
		t.Errorf("refused requests wrote %d audit rows (%v)", len(after)-len(before), err)
	}
}

// pathTricks rewrite a path aimed at globex (/v1/tenants/globex/...) into
// ones a tenant:acme token might hope reach it.
var pathTricks = []func(p string) string{
	func(p string) string { return strings.Replace(p, "/globex", "/acme/../globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme/./../globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme/%2e%2e/globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme/%2E%2E/globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme/..%2Fglobex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme%2F..%2Fglobex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme%2Fglobex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme%252F..%252Fglobex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme/sources/../../globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme\\..\\globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme;/../globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/acme%00/../globex", 1) },
	func(p string) string { return "/" + p },
	func(p string) string { return strings.Replace(p, "/v1/", "/v1//", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "//globex", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/GLOBEX", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/Globex", 1) },
	func(p string) string { return strings.Replace(p, "/v1/", "/V1/", 1) },
	func(p string) string { return strings.Replace(p, "/tenants/", "/Tenants/", 1) },
	func(p string) string { return strings.Replace(p, "/globex", "/%67lobex", 1) },
	func(p string) string { return p + "/" },
	func(p string) string { return p + "/." },
	func(p string) string { return p + "/.." },
	func(p string) string { return "http://admin" + p },
	func(p string) string { return strings.ToUpper(p) },
}

// TestScopeMatrixPathTricks: for a tenant:acme token, no request aimed at
// globex's data through a dot segment, an encoded slash or dot, a doubled
// slash or another case reaches it: never a 2xx, never a redirect. Every
// operation under /v1/tenants/{tenant} of the document is tried, with
// globex's entities, and the profiles through the open paths.
func TestScopeMatrixPathTricks(t *testing.T) {
	d := loadDoc(t)
	n := newFullNode(t)
	counts := map[int]int{}
	tried := 0
	try := func(method, target, body string) {
		t.Helper()
		tried++
		a := n.do(t, method, target, "tok-a", body)
		counts[a.code]++
		if a.code >= 200 && a.code < 400 {
			t.Errorf("UNAUTHORISED SUCCESS: %s %s as tenant:a: %d (Location %q) %s", method, target, a.code, a.header.Get("Location"), a.body)
		}
	}
	for i := range d.ops {
		op := &d.ops[i]
		if !strings.HasPrefix(op.path, "/v1/tenants/{tenant}") {
			continue
		}
		if _, hasParams := op.op["parameters"]; !hasParams {
			op.op["parameters"] = []any{}
		}
		q := exampleQuery(d, op).Encode()
		if q != "" {
			q = "?" + q
		}
		aimed := fill(op.path, "globex", "globex")
		for _, trick := range pathTricks {
			try(op.method, trick(aimed)+q, exampleBody(op))
		}
		// globex's entity through acme's path, the entity encoded or cased.
		if strings.Count(op.path, "{") > 1 {
			for _, e := range []string{"GLOBEX-API", "..%2F..%2Fglobex%2Fsources%2Fglobex-api", "globex-api%2F"} {
				try(op.method, strings.Replace(fill(op.path, "acme", "globex"), "globex-api", e, 1)+q, exampleBody(op))
			}
		}
	}
	for _, p := range []string{"/metrics/../debug/pprof/heap", "/healthz/%2e%2e/debug/pprof/", "/DEBUG/pprof/heap", "//debug/pprof/heap",
		"/v1/openapi.json/../tenants/globex", "/v1/openapi.json/../../debug/pprof/symbol"} {
		try("GET", p, "")
	}
	t.Logf("%d tricks: answers %v", tried, counts)
}
