package admin

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// fakeBacklog holds undelivered counts by source.
type fakeBacklog struct {
	mu     sync.Mutex
	counts map[string]int64
	moved  []meta.AuditRow
}

func (f *fakeBacklog) SourceBacklog(src string, sinks []string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[src], nil
}

func (f *fakeBacklog) DeadLetterSource(src string, sinks []string, audit meta.AuditRow) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if audit.Action == "" || audit.At.IsZero() || audit.Principal == "" {
		return 0, fmt.Errorf("an audit row without its action, time or principal: %+v", audit) // as dispatch refuses it
	}
	n := f.counts[src]
	delete(f.counts, src)
	f.moved = append(f.moved, audit)
	return n, nil
}

// sourceMux serves the admin API over a store of storeType; resolver is
// the route_resolver section (and more top-level keys), tenantpath when
// not given.
func sourceMux(t *testing.T, storeType string, resolver ...string) (*http.ServeMux, *fakeBacklog, *meta.Store) {
	t.Helper()
	section := "route_resolver: {type: tenantpath}"
	if len(resolver) > 0 {
		section = resolver[0]
	}
	cfg, err := config.Load([]byte(section+`
rate_limits: {default: {rate: 10, burst: 10}}
source_store: {type: `+storeType+`}
sources:
  seeded: {verify: {type: hmac, header: X-Sig, secret: s3cret}}
`), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := meta.Open(meta.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var store source.Store = source.NewStatic(cfg)
	if storeType == "persistent" {
		p, _, err := source.OpenPersistent(source.PersistentOptions{Config: cfg, Backend: source.MetaBackend{Store: m},
			Context: config.SourceContext{Resolver: cfg.RouteResolver.Type, WALType: "disk", DedupeScope: "node"}})
		if err != nil {
			t.Fatal(err)
		}
		store = p
	}
	bl := &fakeBacklog{counts: map[string]int64{}}
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Sources: store, Backlog: bl, Resolver: cfg.RouteResolver, Logger: zap.NewNop()}); err != nil {
		t.Fatal(err)
	}
	return mux, bl, m
}

func call(mux http.Handler, method, path, token, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer tok-"+token)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

func wantAnswer(t *testing.T, w *httptest.ResponseRecorder, status int, contains ...string) map[string]any {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	for _, c := range contains {
		if !strings.Contains(w.Body.String(), c) {
			t.Fatalf("answer %s does not contain %q", w.Body, c)
		}
	}
	var m map[string]any
	if w.Body.Len() > 0 {
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("answer %q is not JSON: %v", w.Body, err)
		}
	}
	return m
}

func TestSourceEndpoints(t *testing.T) {
	mux, bl, m := sourceMux(t, "persistent")
	body := `{"name": "acme-gh", "verify": {"type": "github", "secret": "ghsecret"}, "sinks": [{"type": "http", "url": "https://example.com/in", "secret": "outsecret"}]}`
	a := wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", body), 201, `"name":"acme-gh"`, `"url_path":"/webhooks/acme/acme-gh"`, `"secrets_set":["verify.secret","sinks[0].secret"]`)
	if strings.Contains(a["verify"].(map[string]any)["type"].(string), "secret") {
		t.Fatal(a)
	}
	got := call(mux, "GET", "/v1/tenants/acme/sources/acme-gh", "acme", "")
	wantAnswer(t, got, 200, `"tenant_id":"acme"`)
	if strings.Contains(got.Body.String(), "ghsecret") || strings.Contains(got.Body.String(), "outsecret") {
		t.Fatalf("a secret in the answer: %s", got.Body)
	}
	// Another tenant's token, or another tenant's path: the one 404.
	wantAnswer(t, call(mux, "GET", "/v1/tenants/globex/sources/acme-gh", "globex", ""), 404)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/sources/acme-gh", "globex", ""), 403)
	// The refusals.
	wantAnswer(t, call(mux, "POST", "/v1/tenants/globex/sources", "globex", `{"name": "acme-gh", "verify": {"type": "none"}, "trust_url_tenant": true}`), 409, `"source_exists"`)
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/default/sources/seeded", "root", `{"verify": {"type": "none"}, "trust_url_tenant": true}`), 409, `"source_from_config"`)
	wantAnswer(t, call(mux, "POST", "/v1/tenants/default/sources", "root", `{"name": "open", "verify": {"type": "none"}}`), 400, `"invalid_source"`, "trust_url_tenant: true")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "x", "tenant_id": "globex", "verify": {"type": "none"}}`), 400, "tenant_id")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "x", "verify": {"type": "none", "secrett": "k"}}`), 400, "verify.secrett: unknown key")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "x", "verify": {"type": "none"}, "created_at": "now"}`), 400, "created_at: read-only")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "Bad Name", "verify": {"type": "none"}}`), 400, "source name must match")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": 1}`), 400, "name: must be a string")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "x", "verify": {"type": "none"}, "max_body_bytes": "`+strings.Repeat("9", 2<<20)+`"}`), 413, "payload_too_large")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources?force=1", "acme", `{}`), 400, "force")
	// Update keeps the secrets; the sink keeps its id.
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/acme/sources/acme-gh", "acme", `{"verify": {"type": "github"}, "sinks": [{"type": "http", "url": "https://example.com/new"}]}`), 200, `"secrets_set":["verify.secret","sinks[0].secret"]`, "example.com/new")
	// Minted names.
	a = wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"verify": {"type": "hmac", "secret": "k"}}`), 201)
	minted := a["name"].(string)
	if !strings.HasPrefix(minted, "src-") || len(minted) < 30 {
		t.Fatalf("minted %q", minted)
	}
	list := wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/sources?limit=1", "acme", ""), 200, `"next_cursor":"acme-gh"`)
	if len(list["sources"].([]any)) != 1 {
		t.Fatal(list)
	}
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/sources?limit=1&cursor=acme-gh", "acme", ""), 200, minted)
	// A delete with undelivered hooks: 409 with the count, or dead-lettered first.
	bl.counts["acme-gh"] = 7
	wantAnswer(t, call(mux, "DELETE", "/v1/tenants/acme/sources/acme-gh", "acme", ""), 409, `"source_has_deliveries"`, `"count":7`)
	wantAnswer(t, call(mux, "DELETE", "/v1/tenants/acme/sources/acme-gh?deliveries=dead_letter", "acme", ""), 200, `"dead_lettered":7`)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/sources/acme-gh", "acme", ""), 404)
	if len(bl.moved) != 1 || bl.moved[0].Principal != "acme" || bl.moved[0].Entity != "source/acme-gh" {
		t.Fatalf("%+v", bl.moved)
	}
	if ev := bl.moved[0].Event; ev.Type != "io.ankusa.source.dead_lettered" || ev.Subject != "acme-gh" || string(ev.Data) != `{"source":"acme-gh"}` {
		t.Fatalf("the dead-lettering's event: %s %s %s", ev.Type, ev.Subject, ev.Data)
	}
	rows, err := m.Audit(time.Time{}, 100)
	if err != nil || len(rows) != 4 {
		t.Fatalf("%v %+v", err, rows)
	}
	for _, r := range rows {
		if r.Principal != "acme" || r.Tenant != "acme" || r.Outcome != "ok" {
			t.Fatalf("audit row %+v", r)
		}
	}
	// The rows' events, in order, every secret in their data redacted.
	var evs []string
	err = m.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		if d := string(ev.Data); strings.Count(d, `"secret":"`) != strings.Count(d, `"secret":"redacted"`) {
			t.Errorf("event %s %s carries a secret: %s", ev.Type, ev.Subject, d)
		}
		evs = append(evs, ev.Tenant+" "+ev.Type+" "+ev.Subject)
		return false, nil
	})
	want := "acme io.ankusa.source.created acme-gh;acme io.ankusa.source.updated acme-gh;acme io.ankusa.source.created " + minted + ";acme io.ankusa.source.deleted acme-gh"
	if got := strings.Join(evs, ";"); err != nil || got != want {
		t.Fatalf("events %s, %v; want %s", got, err, want)
	}
}

func TestSourceWritesOnStaticStore(t *testing.T) {
	mux, _, _ := sourceMux(t, "static")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "x", "verify": {"type": "none"}, "trust_url_tenant": true}`), 409, `"source_store_read_only"`)
	wantAnswer(t, call(mux, "DELETE", "/v1/tenants/default/sources/seeded", "root", ""), 409, `"source_store_read_only"`)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/default/sources/seeded", "root", ""), 200, `"from_config":true`)
}

func TestRouteEndpoints(t *testing.T) {
	mux, _, _ := sourceMux(t, "persistent", "route_resolver: {type: token, path: /webhooks/catch/:token}\nroutes: {enabled: true}")
	a := wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "token": "auto"}`), 201, `"tenant_id":"acme"`, `"token":"`)
	id := a["id"].(string)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/routes/"+id, "acme", ""), 200, `"tokens":[{"id":"tok-`)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/globex/routes/"+id, "globex", ""), 404)
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "token": "auto", "extra": 1}`), 400, "extra: unknown field")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": 5}`), 400, "source_id")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"Source_ID": "seeded", "token": "auto"}`), 400, "Source_ID: unknown field")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "tenant_id": "globex", "token": "auto"}`), 400, "tenant_id")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "nope", "token": "auto"}`), 400, "no source named")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", ``), 400, "needs a JSON body")
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"path": "/a"} {}`), 400, "more than one JSON value")
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/acme/routes/"+id, "acme", `{"source_id": "seeded", "token": "auto"}`), 200, `"token":"`)
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/routes", "acme", ""), 200, id)
	if w := call(mux, "DELETE", "/v1/tenants/acme/routes/"+id, "acme", ""); w.Code != 204 {
		t.Fatal(w.Code, w.Body)
	}
	wantAnswer(t, call(mux, "DELETE", "/v1/tenants/acme/routes/"+id, "acme", ""), 404)
}

// A route field the node's config leaves without effect is refused,
// naming it: a token no resolver looks up, a path or host with the route
// guard off.
func TestRouteFieldsWithoutEffectRefused(t *testing.T) {
	mux, _, _ := sourceMux(t, "persistent") // tenantpath, routes.enabled false
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "token": "auto"}`), 400, `"invalid_route"`, `token: route_resolver.type is \"tenantpath\"`)
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "path": "/webhooks/acme/seeded"}`), 400, "path: routes.enabled is false")
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/routes", "acme", ""), 200, `"routes":[]`)
	tok, _, _ := sourceMux(t, "persistent", "route_resolver: {type: token, path: /webhooks/catch/:token}")
	wantAnswer(t, call(tok, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "host": "a.example.com"}`), 400, "host: routes.enabled is false")
	wantAnswer(t, call(tok, "POST", "/v1/tenants/acme/routes", "acme", `{"source_id": "seeded", "host": "a.example.com", "token": "auto"}`), 201, `"host":"a.example.com"`)
}

// A token with only tenant scopes cannot turn a sink's SSRF guard off: on
// a create, or on an update that points an allowed sink at another URL;
// an operator's token can, and the tenant may keep what the operator set.
func TestSourceAllowPrivateNeedsOperator(t *testing.T) {
	mux, _, _ := sourceMux(t, "persistent")
	priv := func(url string) string {
		return `{"name": "inner", "verify": {"type": "none"}, "sinks": [{"type": "http", "url": "` + url + `", "allow_private": true}]}`
	}
	w := call(mux, "POST", "/v1/tenants/acme/sources", "acme", priv("http://10.0.0.5/in"))
	wantAnswer(t, w, 403, `"error":"forbidden"`, "sinks[0].allow_private", "tenant:*")
	wantAnswer(t, call(mux, "GET", "/v1/tenants/acme/sources/inner", "acme", ""), 404)

	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "root", priv("http://10.0.0.5/in")), 201, `"allow_private":true`)
	// The tenant edits its source and keeps the operator's choice.
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/acme/sources/inner", "acme", priv("http://10.0.0.5/in")), 200)
	// It cannot point the unguarded sink elsewhere.
	wantAnswer(t, call(mux, "PUT", "/v1/tenants/acme/sources/inner", "acme", priv("http://169.254.169.254/latest")), 403, "sinks[0].allow_private")
	// Without allow_private any tenant token writes sinks as before.
	wantAnswer(t, call(mux, "POST", "/v1/tenants/acme/sources", "acme", `{"name": "outer", "verify": {"type": "none"}, "sinks": [{"type": "http", "url": "https://example.com/in"}]}`), 201)
}
