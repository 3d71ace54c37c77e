package main

// The tenant erase's API, black box (issue 20, acceptance 4 and 5): the
// status codes of DELETE /v1/tenants/{t} and GET .../erase, what the
// public listener and the admin writes answer while an erase runs, and
// the hooks of an erased tenant: 410 from a local segment and from the
// archive, skipped by `ankusa replay`, while the name's new hooks are
// served.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/tenant"
)

// The extra admin tokens of ekAPIYAML: ekEraseToken holds every scope an
// erase needs, ekWriteToken only tenants:write.
const (
	ekEraseToken = "ankusa-test-ek-erase-4d1a"
	ekWriteToken = "ankusa-test-ek-write-8c2f"
)

// ekAPIYAML: the tenant-in-path resolver, a persistent source store, a
// disk WAL, small segments archived to a directory, a shared config
// source (open) and one of tenant cfgten. %[6]s is segment.retain_local.
const ekAPIYAML = `node: {name: ek-api, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: eraser, sha256: %[4]s, scopes: ["tenants:read", "tenants:write", "tenant:*"]}
    - {name: acme-team, sha256: %[5]s, scopes: ["tenant:acme"]}
    - {name: writer, sha256: %[8]s, scopes: ["tenants:write"]}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
wal: {type: disk, max_file_bytes: 1MiB}
segment: {max_age: 200ms, retain_local: %[6]s}
archive: {type: dir, path: %[7]s, prefix: prod}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
  cfgsrc:
    tenant_id: cfgten
    verify: {type: none}
`

// ekAPINode is a node of ekAPIYAML and the directory it archives to.
type ekAPINode struct {
	*apiNode
	archive string
}

// newEKAPINode writes ekAPIYAML with retain as segment.retain_local.
func newEKAPINode(t *testing.T, retain string) *ekAPINode {
	t.Helper()
	n := &ekAPINode{apiNode: &apiNode{testNode: newTestNode(t), t: t}}
	n.archive = filepath.Join(n.dir, "archive")
	n.setRetain(retain)
	n.c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(n.c.CloseIdleConnections)
	return n
}

// setRetain rewrites the config with segment.retain_local = retain; it
// takes effect at the next serve.
func (n *ekAPINode) setRetain(retain string) {
	n.t.Helper()
	writeConfig(n.t, n.testNode, fmt.Sprintf(ekAPIYAML, n.dataDir, n.listen, n.admin, sha256Hex(ekEraseToken), sha256Hex(acmeToken),
		retain, n.archive, sha256Hex(ekWriteToken)))
}

// ekStatus requires GET /v1/tenants/{t}/erase to answer 200 and decodes it.
func ekStatus(t *testing.T, n *apiNode, tenantName string) erStatus {
	t.Helper()
	a := n.do("GET", "/v1/tenants/"+tenantName+"/erase", ekEraseToken, "")
	wantStatus(t, "GET erase of "+tenantName, a, http.StatusOK)
	var e erStatus
	decode(t, "GET erase of "+tenantName, a, &e)
	if e.Tenant != tenantName || e.Removed == nil || e.Ordinals == nil || e.StartedAt == nil {
		t.Fatalf("GET erase of %s: %s lacks the tenant, removed, ordinals or started_at", tenantName, a.body)
	}
	return e
}

// ekWaitErased polls GET erase until the erase is done up to stage
// (erased or archived) and returns the stages it saw on the way, in the
// order it saw them, and the last status.
func ekWaitErased(t *testing.T, n *apiNode, p *proc, tenantName, stage string, within time.Duration) ([]string, erStatus) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(within)
	for {
		if p != nil && p.exited() {
			t.Fatalf("the node exited while the erase of %s ran:\n%s", tenantName, p.stderr)
		}
		e := ekStatus(t, n, tenantName)
		if len(seen) == 0 || seen[len(seen)-1] != e.Stage {
			seen = append(seen, e.Stage)
		}
		if e.State == "erased" && ekStageIndex(e.Stage) >= ekStageIndex(stage) {
			return seen, e
		}
		if time.Now().After(deadline) {
			t.Fatalf("the erase of %s is not at %s after %s: stages seen %v, last %+v", tenantName, stage, within, seen, e)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ekStageIndex(stage string) int { return slices.Index(tenant.EraseStages, stage) }

// ekHold is a receiver that holds every request until the test releases
// it (or a minute passes), then answers 200.
type ekHold struct {
	url     string
	arrived chan string // the event id of each request, as it arrives
	release chan struct{}
	once    sync.Once
}

func newEKHold(t *testing.T) *ekHold {
	t.Helper()
	h := &ekHold{arrived: make(chan string, 64), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived <- r.Header.Get("X-Ankusa-Event-Id")
		select {
		case <-h.release:
		case <-time.After(time.Minute):
		}
		w.WriteHeader(http.StatusOK)
	}))
	h.url = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(h.free) // before srv.Close, which waits for the held requests
	return h
}

func (h *ekHold) free() { h.once.Do(func() { close(h.release) }) }

// ekErasePath is DELETE /v1/tenants/{t}'s path with ?confirm=confirm
// ("" : none).
func ekErasePath(tenantName, confirm string) string {
	p := "/v1/tenants/" + tenantName
	if confirm != "" {
		p += "?confirm=" + confirm
	}
	return p
}

// TestEraseStatusCodes: DELETE /v1/tenants/{t} is 202 once, 200 while the
// erase runs, 400 without the tenant typed again, 409 for default and a
// tenant of the config, 403 without tenants:write and tenant:* together;
// while it runs (held by an attempt in flight) the tenant's hooks are
// 503 tenant_erasing and its admin writes 409 tenant_erasing; GET erase
// is 404 for a tenant never erased and reports the stages, then
// erased_at.
func TestEraseStatusCodes(t *testing.T) {
	hold := newEKHold(t)
	n := newEKAPINode(t, "1h")
	p := n.serve(t)

	wantError(t, "GET erase of a tenant never erased", n.do("GET", "/v1/tenants/acme/erase", ekEraseToken, ""), http.StatusNotFound, "not_found")
	wantStatus(t, "POST source slow", n.do("POST", "/v1/tenants/acme/sources", ekEraseToken,
		fmt.Sprintf(`{"name":"slow","verify":{"type":"none"},"sinks":[{"id":"out","type":"http","url":"%s/in","allow_private":true,"timeout":"30s"}]}`, hold.url)),
		http.StatusCreated)
	id := hookID(t, "hook to acme/slow", n.hook("acme", "slow", `{"n":1}`))
	select {
	case got := <-hold.arrived:
		if got != id {
			t.Fatalf("the receiver got %q, want %s", got, id)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the hook's attempt did not reach the receiver in 15s:\n%s", p.stderr)
	}

	// Refusals first: none of them starts an erase.
	wantError(t, "DELETE without confirm", n.do("DELETE", ekErasePath("acme", ""), ekEraseToken, ""), http.StatusBadRequest, "invalid_query")
	wantError(t, "DELETE with another tenant as confirm", n.do("DELETE", ekErasePath("acme", "globex"), ekEraseToken, ""), http.StatusBadRequest, "invalid_query")
	wantError(t, "DELETE with an empty confirm", n.do("DELETE", "/v1/tenants/acme?confirm=", ekEraseToken, ""), http.StatusBadRequest, "invalid_query")
	wantError(t, "DELETE default", n.do("DELETE", ekErasePath("default", "default"), ekEraseToken, ""), http.StatusConflict, "tenant_from_config")
	e := wantError(t, "DELETE cfgten", n.do("DELETE", ekErasePath("cfgten", "cfgten"), ekEraseToken, ""), http.StatusConflict, "tenant_from_config")
	if !strings.Contains(e.Message, "cfgsrc") {
		t.Fatalf("DELETE cfgten: %q does not name the config's source cfgsrc", e.Message)
	}
	wantError(t, "DELETE acme with a tenant:acme token", n.do("DELETE", ekErasePath("acme", "acme"), acmeToken, ""), http.StatusForbidden, "forbidden")
	wantError(t, "DELETE acme with a tenants:write token", n.do("DELETE", ekErasePath("acme", "acme"), ekWriteToken, ""), http.StatusForbidden, "forbidden")
	wantError(t, "DELETE acme without a token", n.do("DELETE", ekErasePath("acme", "acme"), "", ""), http.StatusUnauthorized, "unauthorized")
	for _, tn := range []string{"acme", "cfgten", "default"} {
		wantStatus(t, "GET erase of "+tn+" after the refusals", n.do("GET", "/v1/tenants/"+tn+"/erase", ekEraseToken, ""), http.StatusNotFound)
	}
	wantStatus(t, "hook to acme/slow before the erase", n.hook("acme", "slow", `{"n":2}`), http.StatusCreated)

	start := time.Now()
	a := n.do("DELETE", ekErasePath("acme", "acme"), ekEraseToken, "")
	wantStatus(t, "DELETE acme", a, http.StatusAccepted)
	var first erStatus
	decode(t, "DELETE acme", a, &first)
	if first.Tenant != "acme" || first.State != "running" || first.ErasedAt != nil || ekStageIndex(first.Stage) > ekStageIndex(tenant.StageClosed) {
		t.Fatalf("DELETE acme: %s, want acme running at most closed, erased_at null", a.body)
	}
	a = n.do("DELETE", ekErasePath("acme", "acme"), ekEraseToken, "")
	wantStatus(t, "DELETE acme again while it runs", a, http.StatusOK)
	var again erStatus
	decode(t, "DELETE acme again", a, &again)
	if again.State != "running" || again.StartedAt == nil || first.StartedAt == nil || *again.StartedAt != *first.StartedAt {
		t.Fatalf("DELETE acme again: %s, want the running erase started at %v", a.body, first.StartedAt)
	}

	// The attempt in flight holds the close: the tenant is refused
	// everywhere meanwhile.
	h := n.hook("acme", "slow", `{"n":3}`)
	wantError(t, "hook to acme while it is erased", h, http.StatusServiceUnavailable, "tenant_erasing")
	if ct := h.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("hook to acme while it is erased: Content-Type %q, want application/json", ct)
	}
	wantError(t, "hook to acme through the shared source", n.hook("acme", "open", `{"n":4}`), http.StatusServiceUnavailable, "tenant_erasing")
	wantError(t, "POST a source of acme while it is erased", n.do("POST", "/v1/tenants/acme/sources", ekEraseToken, `{"name":"late","verify":{"type":"none"}}`),
		http.StatusConflict, "tenant_erasing")
	wantError(t, "DELETE a source of acme while it is erased", n.do("DELETE", "/v1/tenants/acme/sources/slow", ekEraseToken, ""), http.StatusConflict, "tenant_erasing")
	wantError(t, "PUT acme's rate limit while it is erased", n.do("PUT", "/v1/tenants/acme/rate_limit", ekEraseToken, `{"rate":10,"burst":10}`),
		http.StatusConflict, "tenant_erasing")
	wantStatus(t, "hook to globex meanwhile", n.hook("globex", "open", `{"n":5}`), http.StatusCreated)
	wantStatus(t, "POST a source of globex meanwhile", n.do("POST", "/v1/tenants/globex/sources", ekEraseToken, `{"name":"gx","verify":{"type":"none"}}`), http.StatusCreated)
	wantStatus(t, "GET acme's sources meanwhile", n.do("GET", "/v1/tenants/acme/sources", ekEraseToken, ""), http.StatusOK)
	time.Sleep(time.Until(start.Add(2 * time.Second)))
	st := ekStatus(t, n.apiNode, "acme")
	if st.State != "running" || ekStageIndex(st.Stage) > ekStageIndex(tenant.StageClosed) || st.ErasedAt != nil {
		t.Fatalf("GET erase 2s into a held close: %+v, want running at started or closed", st)
	}
	wantError(t, "hook to acme 2s in", n.hook("acme", "slow", `{"n":6}`), http.StatusServiceUnavailable, "tenant_erasing")

	hold.free()
	seen, done := ekWaitErased(t, n.apiNode, p, "acme", tenant.StageArchived, 60*time.Second)
	for i := 1; i < len(seen); i++ {
		if ekStageIndex(seen[i]) <= ekStageIndex(seen[i-1]) {
			t.Fatalf("GET erase reported the stages %v: not in the order %v", seen, tenant.EraseStages)
		}
	}
	if len(seen) < 2 || seen[0] != tenant.StageStarted && seen[0] != tenant.StageClosed {
		t.Fatalf("GET erase reported the stages %v, want a running stage before the end", seen)
	}
	if done.ErasedAt == nil || done.SeqAtClose == nil || len(done.Ordinals) != 1 || *done.StartedAt != *first.StartedAt {
		t.Fatalf("GET erase once done: %+v, want erased_at, seq_at_close, one ordinal and the first started_at", done)
	}
	erasedAt, err := time.Parse(time.RFC3339Nano, *done.ErasedAt)
	if err != nil || erasedAt.Before(start.Add(2*time.Second)) {
		t.Fatalf("erased_at %q: %v, want a time after the held close", *done.ErasedAt, err)
	}
	if done.Removed[tenant.StageSources] != 1 || done.Removed[tenant.StageDeliveries] < 1 {
		t.Fatalf("removed %v, want the source slow and its rows", done.Removed)
	}
	// Erasing the name again starts a new erase (of nothing). The job's
	// goroutine lets go of the name just after GET erase says archived;
	// until then the DELETE is the 200 of a running one.
	if !waitFor(5*time.Second, func() bool {
		a = n.do("DELETE", ekErasePath("acme", "acme"), ekEraseToken, "")
		return a.status != http.StatusOK
	}) {
		t.Fatalf("DELETE acme once erased is still %d %s after 5s, want a new erase's 202", a.status, a.body)
	}
	wantStatus(t, "DELETE acme once erased: a new erase of the (empty) tenant", a, http.StatusAccepted)
	if _, re := ekWaitErased(t, n.apiNode, p, "acme", tenant.StageArchived, 60*time.Second); !slices.Equal(re.Ordinals, done.Ordinals) {
		t.Fatalf("a second erase of acme reports the ordinals %v, want the first one's %v", re.Ordinals, done.Ordinals)
	}
	wantStatus(t, "globex's source after acme's erase", n.do("GET", "/v1/tenants/globex/sources/gx", ekEraseToken, ""), http.StatusOK)
	p.stop()
}

// ekFetch is GET of the hook id of tenant with the eraser's token.
func ekFetch(n *apiNode, tenantName, id string) answer {
	n.t.Helper()
	return n.do("GET", hookPath(tenantName, id), ekEraseToken, "")
}

// TestEraseGoneHooks: the hooks an erased tenant sent before its erase
// are 410 gone, read from a local segment and, once retention removed it,
// from the archive; `ankusa replay` skips them and the archive holds the
// tombstone; the name's hooks after the erase are a new tenant's, served.
func TestEraseGoneHooks(t *testing.T) {
	n := newEKAPINode(t, "1h")
	p := n.serve(t)
	var acme, globex []string
	for i := range 5 {
		acme = append(acme, hookID(t, "hook to acme", n.hook("acme", "open", fmt.Sprintf(`{"acme":%d}`, i))))
		if i < 2 {
			globex = append(globex, hookID(t, "hook to globex", n.hook("globex", "open", fmt.Sprintf(`{"globex":%d}`, i))))
		}
	}
	waitAllArchived(t, n.testNode, p, 30*time.Second)
	for _, id := range acme {
		wantStatus(t, "fetch an acme hook before the erase", ekFetch(n.apiNode, "acme", id), http.StatusOK)
	}
	if segs := sealedSegments(t, n.testNode); len(segs) == 0 {
		t.Fatal("no sealed segment on local disk with retain_local 1h")
	}

	wantStatus(t, "DELETE acme", n.do("DELETE", ekErasePath("acme", "acme"), ekEraseToken, ""), http.StatusAccepted)
	_, done := ekWaitErased(t, n.apiNode, p, "acme", tenant.StageArchived, 60*time.Second)
	if len(done.Ordinals) != 1 {
		t.Fatalf("the erase reports the ordinals %v, want acme's one", done.Ordinals)
	}
	check := func(phase string) {
		t.Helper()
		for _, id := range acme {
			wantError(t, phase+": fetch an acme hook of before the erase", ekFetch(n.apiNode, "acme", id), http.StatusGone, "gone")
			wantError(t, phase+": fetch it with the tenant:acme token", n.do("GET", hookPath("acme", id), acmeToken, ""), http.StatusGone, "gone")
			wantError(t, phase+": fetch it as globex's", ekFetch(n.apiNode, "globex", id), http.StatusNotFound, "not_found")
		}
		for _, id := range globex {
			wantStatus(t, phase+": fetch a globex hook", ekFetch(n.apiNode, "globex", id), http.StatusOK)
		}
	}
	check("local segments")
	p.stop()

	// Retention removes the archived local segments: fetch reads the
	// archive.
	n.setRetain("1ms")
	p = n.serve(t)
	if !waitFor(20*time.Second, func() bool { return len(sealedSegments(t, n.testNode)) == 0 }) {
		t.Fatalf("the local segments are still there after 20s with retain_local 1ms: %v", sealedSegments(t, n.testNode))
	}
	check("archive")

	tomb := filepath.Join(n.archive, "prod", "tombstones", "tenant=acme.json")
	b, err := os.ReadFile(tomb)
	if err != nil {
		t.Fatalf("the archive has no tombstone of acme: %v", err)
	}
	var ts struct {
		Tenant   string    `json:"tenant"`
		ErasedAt time.Time `json:"erased_at"`
	}
	want, _ := time.Parse(time.RFC3339Nano, *done.ErasedAt)
	if err := json.Unmarshal(b, &ts); err != nil || ts.Tenant != "acme" || !ts.ErasedAt.Equal(want) {
		t.Fatalf("tombstone %s: %s (%v), want tenant acme erased at %s", tomb, b, err, *done.ErasedAt)
	}

	// A new hook of the name is a new tenant's: served, under a new ordinal.
	fresh := hookID(t, "hook to acme after the erase", n.hook("acme", "open", `{"acme":"new"}`))
	var info struct {
		Ordinal uint32 `json:"ordinal"`
	}
	decode(t, "GET /v1/tenants/acme", n.do("GET", "/v1/tenants/acme", ekEraseToken, ""), &info)
	if info.Ordinal <= done.Ordinals[0] {
		t.Fatalf("acme's ordinal after the erase is %d, want one above the erased %d", info.Ordinal, done.Ordinals[0])
	}
	a := ekFetch(n.apiNode, "acme", fresh)
	wantStatus(t, "fetch acme's new hook", a, http.StatusOK)
	if !strings.Contains(string(a.body), fresh) {
		t.Fatalf("fetch acme's new hook: %s does not carry its id %s", a.body, fresh)
	}
	waitAllArchived(t, n.testNode, p, 30*time.Second)
	wantStatus(t, "fetch acme's new hook once archived", ekFetch(n.apiNode, "acme", fresh), http.StatusOK)
	p.stop()

	// Replay skips the erased hooks, keeps globex's and the new acme one.
	code, _, stderr := runBin(t, n.dir, "replay", "-config", n.config)
	if code != 0 {
		t.Fatalf("ankusa replay: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf(", %d skipped (tenant erased)\n", len(acme))) {
		t.Fatalf("ankusa replay: stderr %q does not count the %d erased hooks", stderr, len(acme))
	}
	got := map[string]string{}
	for _, e := range replayed(t, n.testNode) {
		got[e.ID.String()] = e.TenantID
	}
	for _, id := range acme {
		if _, ok := got[id]; ok {
			t.Fatalf("ankusa replay printed the erased hook %s", id)
		}
	}
	for _, id := range append(slices.Clone(globex), fresh) {
		if got[id] == "" {
			t.Fatalf("ankusa replay lacks the hook %s (got %v)", id, got)
		}
	}
	if len(got) != len(globex)+1 {
		t.Fatalf("ankusa replay printed %d hooks, want %d: %v", len(got), len(globex)+1, got)
	}
}
