package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// goneHook is a hook of acme under ordinal 9, which fakeEraser says was
// erased; acmeHook (ordinal 0) is of the same name under another ordinal.
var goneHook = &envelope.Envelope{Seq: 44, ID: goneID, TenantID: "acme", TenantOrdinal: 9, SourceID: "stripe", Body: []byte(`{}`)}

// eraseStart is the StartedAt of every erase fakeEraser starts.
var eraseStart = time.Date(2026, 12, 5, 17, 0, 0, 123456789, time.UTC)

// fakeEraser is a TenantEraser over maps: default and acme-cfg are
// refused, broken fails, hooli is erased (ordinals 4 and 7), acme's
// ordinal 9 is gone. An erase it starts stays running.
type fakeEraser struct {
	mu      sync.Mutex
	running map[string]EraseStatus
	erased  map[string]EraseStatus
	calls   []string // "tenant principal"
}

func newFakeEraser() *fakeEraser {
	return &fakeEraser{running: map[string]EraseStatus{}, erased: map[string]EraseStatus{
		"hooli": {Tenant: "hooli", Stage: "archived", Removed: map[string]int64{"sources": 2, "deliveries": 40},
			ErasedAt: eraseStart.Add(time.Minute), HasSeqAtClose: true, SeqAtClose: 1234, Ordinals: []uint32{4, 7}},
		"acme": {Tenant: "acme", Stage: "archived", HasSeqAtClose: true, SeqAtClose: 44, ErasedAt: eraseStart, Ordinals: []uint32{9}},
	}}
}

func (f *fakeEraser) Erase(tenant, principal string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, tenant+" "+principal)
	switch tenant {
	case "default":
		return false, &EraseRefusedError{Reason: "default holds the shared sources"}
	case "acme-cfg":
		return false, &EraseRefusedError{Reason: "the source stripe of the config file names it"}
	case "broken":
		return false, errors.New("meta: pebble: disk on fire")
	}
	if _, ok := f.running[tenant]; ok {
		return false, nil
	}
	f.running[tenant] = EraseStatus{Tenant: tenant, Running: true, Stage: "started", StartedAt: eraseStart}
	return true, nil
}

func (f *fakeEraser) EraseStatus(tenant string) (EraseStatus, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.running[tenant]; ok {
		return st, true, nil
	}
	st, ok := f.erased[tenant]
	return st, ok, nil
}

func (f *fakeEraser) Erasing(tenant string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.running[tenant]
	return ok
}

func (f *fakeEraser) HookGone(tenant string, ord uint32) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.erased[tenant]
	return ok && slices.Contains(st.Ordinals, ord), nil
}

// advance moves tenant's running erase past the close, as the job would.
func (f *fakeEraser) advance(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.running[tenant]
	st.Stage, st.HasSeqAtClose, st.SeqAtClose, st.Ordinals = "sources", true, 77, []uint32{3}
	st.Removed = map[string]int64{"sources": 3}
	f.running[tenant] = st
}

func (f *fakeEraser) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// decodeErase decodes a status answer into a map, failing on anything
// else.
func decodeErase(t *testing.T, a answer) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatalf("status body %q: %v", a.body, err)
	}
	return m
}

// TestEraseStart: 202 with the running status, then 200 while it runs,
// the principal passed to the eraser; a token holding only one of the two
// scopes, or a tenant's own scope, is 403 and starts nothing.
func TestEraseStart(t *testing.T) {
	n := newFullNode(t)
	for _, c := range []struct{ bearer, missing string }{
		{"tok-a", "tenants:write and tenant:*"}, // its own tenant
		{"tok-writer", "tenant:*"},
		{"tok-all", "tenants:write"},
	} {
		a := n.do(t, "DELETE", "/v1/tenants/acme?confirm=acme", c.bearer, "")
		if a.code != 403 || errCode(a.body) != "forbidden" || !strings.Contains(a.body, "lacks the scope "+c.missing) {
			t.Errorf("%s: %d %s, want 403 naming %s", c.bearer, a.code, a.body, c.missing)
		}
	}
	if calls := n.eraser.callList(); len(calls) != 0 {
		t.Fatalf("refused requests called the eraser: %q", calls)
	}
	a := n.do(t, "DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-eraser", "")
	if a.code != 202 {
		t.Fatalf("erase: %d %s, want 202", a.code, a.body)
	}
	want := map[string]any{"tenant": "umbrella", "state": "running", "stage": "started", "started_at": "2026-12-05T17:00:00.123456789Z",
		"removed": map[string]any{}, "erased_at": nil, "seq_at_close": nil, "ordinals": []any{}}
	if got := decodeErase(t, a); !reflect.DeepEqual(got, want) {
		t.Fatalf("202 status %v, want %v", got, want)
	}
	a = n.do(t, "DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-eraser", "")
	if a.code != 200 || decodeErase(t, a)["state"] != "running" {
		t.Fatalf("again while running: %d %s, want 200 running", a.code, a.body)
	}
	if calls := n.eraser.callList(); !slices.Equal(calls, []string{"umbrella eraser", "umbrella eraser"}) {
		t.Fatalf("eraser calls %q", calls)
	}
}

// TestEraseRefusals: the tenant typed again or nothing happens (400), an
// unknown parameter is 400, a name outside the grammar 400 invalid_name,
// a tenant the eraser refuses 409 tenant_from_config with its reason, an
// eraser failure 500.
func TestEraseRefusals(t *testing.T) {
	n := newFullNode(t)
	for _, c := range []struct {
		target     string
		code       int
		errCode    string
		msgSnippet string
	}{
		{"/v1/tenants/umbrella", 400, "invalid_query", "pass ?confirm=umbrella, the tenant typed again"},
		{"/v1/tenants/umbrella?confirm=", 400, "invalid_query", `"" is not the path's tenant "umbrella"`},
		{"/v1/tenants/umbrella?confirm=acme", 400, "invalid_query", `"acme" is not the path's tenant "umbrella"; pass ?confirm=umbrella`},
		{"/v1/tenants/umbrella?confirm=UMBRELLA", 400, "invalid_query", "pass ?confirm=umbrella"},
		{"/v1/tenants/umbrella?confirm=umbrella&confirm=umbrella", 400, "invalid_query", "confirm: given 2 times"},
		{"/v1/tenants/umbrella?confirm=umbrella&force=true", 400, "invalid_query", "force: not a parameter here"},
		{"/v1/tenants/Umbrella?confirm=Umbrella", 400, "invalid_name", "tenant:"},
		{"/v1/tenants/default?confirm=default", 409, "tenant_from_config", "tenant default cannot be erased: default holds the shared sources"},
		{"/v1/tenants/acme-cfg?confirm=acme-cfg", 409, "tenant_from_config", "the source stripe of the config file names it"},
		{"/v1/tenants/broken?confirm=broken", 500, "internal", "its log says why"},
	} {
		a := n.do(t, "DELETE", c.target, "tok-eraser", "")
		var e errorBody
		_ = json.Unmarshal([]byte(a.body), &e)
		if a.code != c.code || e.Error != c.errCode || !strings.Contains(e.Message, c.msgSnippet) {
			t.Errorf("DELETE %s: %d %s, want %d %s containing %q", c.target, a.code, a.body, c.code, c.errCode, c.msgSnippet)
		}
	}
	if calls := n.eraser.callList(); !slices.Equal(calls, []string{"default eraser", "acme-cfg eraser", "broken eraser"}) {
		t.Fatalf("eraser calls %q: a request without a matching confirm reached it", calls)
	}
	if n.eraser.Erasing("umbrella") {
		t.Fatal("a refused request started an erase")
	}
}

// TestEraseStatus: GET .../erase reports a running erase (with a tenant's
// own scope), a finished one from its tombstone, and 404 for a tenant
// with neither.
func TestEraseStatus(t *testing.T) {
	n := newFullNode(t)
	if a := n.do(t, "GET", "/v1/tenants/umbrella/erase", "tok-all", ""); a.code != 404 || errCode(a.body) != "not_found" {
		t.Fatalf("before: %d %s, want 404 not_found", a.code, a.body)
	}
	if a := n.do(t, "DELETE", "/v1/tenants/umbrella?confirm=umbrella", "tok-eraser", ""); a.code != 202 {
		t.Fatalf("erase: %d %s", a.code, a.body)
	}
	n.eraser.advance("umbrella")
	a := n.do(t, "GET", "/v1/tenants/umbrella/erase", "tok-all", "")
	want := map[string]any{"tenant": "umbrella", "state": "running", "stage": "sources", "started_at": "2026-12-05T17:00:00.123456789Z",
		"removed": map[string]any{"sources": 3.0}, "erased_at": nil, "seq_at_close": 77.0, "ordinals": []any{3.0}}
	if got := decodeErase(t, a); a.code != 200 || !reflect.DeepEqual(got, want) {
		t.Fatalf("running: %d %v, want 200 %v", a.code, got, want)
	}
	a = n.do(t, "GET", "/v1/tenants/hooli/erase", "tok-all", "")
	want = map[string]any{"tenant": "hooli", "state": "erased", "stage": "archived", "started_at": nil,
		"removed": map[string]any{"sources": 2.0, "deliveries": 40.0}, "erased_at": "2026-12-05T17:01:00.123456789Z",
		"seq_at_close": 1234.0, "ordinals": []any{4.0, 7.0}}
	if got := decodeErase(t, a); a.code != 200 || !reflect.DeepEqual(got, want) {
		t.Fatalf("erased: %d %v, want 200 %v", a.code, got, want)
	}
	// A tenant's own scope reads its status; another tenant's does not.
	if a := n.do(t, "GET", "/v1/tenants/acme/erase", "tok-a", ""); a.code != 200 {
		t.Fatalf("tenant:acme reads acme's: %d %s", a.code, a.body)
	}
	if a := n.do(t, "GET", "/v1/tenants/acme/erase", "tok-b", ""); a.code != 403 {
		t.Fatalf("tenant:globex reads acme's: %d %s, want 403", a.code, a.body)
	}
	if a := n.do(t, "GET", "/v1/tenants/hooli/erase?x=1", "tok-all", ""); a.code != 400 || errCode(a.body) != "invalid_query" {
		t.Fatalf("unknown parameter: %d %s, want 400 invalid_query", a.code, a.body)
	}
}

// TestEraseRefusesWrites: while a tenant is being erased, its writes
// (a source create, a rate_limit PUT) are 409 tenant_erasing and change
// nothing; its reads are served, and another tenant's writes go on.
func TestEraseRefusesWrites(t *testing.T) {
	n := newFullNode(t)
	src := `{"name": "acme-late", "verify": {"type": "none"}}`
	rl := `{"rate": 5, "burst": 10, "max_queue": 100, "max_queue_bytes": 0}`
	if a := n.do(t, "DELETE", "/v1/tenants/acme?confirm=acme", "tok-eraser", ""); a.code != 202 {
		t.Fatalf("erase: %d %s", a.code, a.body)
	}
	const msg = `{"error":"tenant_erasing","message":"tenant acme is being erased; GET /v1/tenants/acme/erase reports it"}` + "\n"
	for _, c := range []struct{ method, target, bearer, body string }{
		{"POST", "/v1/tenants/acme/sources", "tok-a", src},
		{"PUT", "/v1/tenants/acme/rate_limit", "tok-writer", rl},
		{"DELETE", "/v1/tenants/acme/routes/acme-route", "tok-all", ""},
		{"POST", "/v1/tenants/acme/quarantine/" + goodID.String() + "/release", "tok-a", ""},
	} {
		if a := n.do(t, c.method, c.target, c.bearer, c.body); a.code != 409 || a.body != msg {
			t.Errorf("%s %s while erasing: %d %s, want 409 tenant_erasing", c.method, c.target, a.code, a.body)
		}
	}
	// Nothing changed, reads go on.
	if a := n.do(t, "GET", "/v1/tenants/acme/sources/acme-late", "tok-a", ""); a.code != 404 {
		t.Errorf("the refused source exists: %d %s", a.code, a.body)
	}
	if a := n.do(t, "GET", "/v1/tenants/acme/routes/acme-route", "tok-a", ""); a.code != 200 {
		t.Errorf("the route is gone: %d %s", a.code, a.body)
	}
	if a := n.do(t, "GET", "/v1/tenants/acme/rate_limit", "tok-a", ""); a.code != 200 || !strings.Contains(a.body, `"override":null`) {
		t.Errorf("rate_limit: %d %s, want 200 without an override", a.code, a.body)
	}
	// The scope still comes first: no token learns of the erase.
	if a := n.do(t, "POST", "/v1/tenants/acme/sources", "tok-b", src); a.code != 403 {
		t.Errorf("another tenant's token: %d %s, want 403", a.code, a.body)
	}
	// Another tenant is untouched.
	if a := n.do(t, "PUT", "/v1/tenants/globex/rate_limit", "tok-writer", rl); a.code != 200 {
		t.Errorf("globex's rate_limit: %d %s, want 200", a.code, a.body)
	}
	if a := n.do(t, "POST", "/v1/tenants/globex/sources", "tok-b", `{"name": "globex-late", "verify": {"type": "none"}}`); a.code != 201 {
		t.Errorf("globex's source: %d %s, want 201", a.code, a.body)
	}
}

// TestHookGoneByOrdinal: a hook whose tenant was erased under its ordinal
// is 410, one of the same name under another ordinal (the tenant that
// sent again) is served, and an eraser is not asked about another
// tenant's hook (the one 404 first).
func TestHookGoneByOrdinal(t *testing.T) {
	er := newFakeEraser()
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Erase: er}); err != nil {
		t.Fatal(err)
	}
	if w := get(mux, "/v1/tenants/acme/hooks/"+goneID.String(), "Bearer tok-acme"); w.Code != 410 ||
		w.Body.String() != `{"error":"gone","message":"this hook's tenant was erased"}`+"\n" {
		t.Fatalf("ordinal 9: %d %s, want 410", w.Code, w.Body)
	}
	if w := get(mux, "/v1/tenants/acme/hooks/"+goodID.String(), "Bearer tok-acme"); w.Code != 200 {
		t.Fatalf("ordinal 0 of the same name: %d %s, want 200", w.Code, w.Body)
	}
	if w := get(mux, "/v1/tenants/globex/hooks/"+goneID.String(), "Bearer tok-globex"); w.Code != 404 {
		t.Fatalf("acme's gone hook under globex: %d %s, want the one 404", w.Code, w.Body)
	}
	// Without an eraser nothing is gone.
	bare := http.NewServeMux()
	if err := Register(bare, Options{Tokens: testTokens(), Hooks: &fakeFetcher{}}); err != nil {
		t.Fatal(err)
	}
	if w := get(bare, "/v1/tenants/acme/hooks/"+goneID.String(), "Bearer tok-acme"); w.Code != 200 {
		t.Fatalf("no eraser: %d %s, want 200", w.Code, w.Body)
	}
	if w := get(bare, "/v1/tenants/acme/erase", "Bearer tok-root"); w.Code != 404 {
		t.Fatalf("no eraser, the status route: %d %s, want 404", w.Code, w.Body)
	}
}
