package main

// Issue 22, acceptance 1: the operator's console (package console) in a
// real browser against the built binary: the main flow (log in, mint a
// URL, see a hook, break the sink, see and retry the dead letter, see it
// delivered; quarantine, tenants, sources with a field's message, live),
// a screenshot of every view, and a tenant-scoped token that never sees
// another tenant's data.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

// consoleYAML: opaque URLs (the token resolver) over API-managed sources
// and routes, segments sealed fast, the ops token (every scope but debug)
// and acme-team (tenant:acme only).
const consoleYAML = `node: {name: console-test, data_dir: %s}
listen: %s
admin:
  listen: %s
  tokens:
    - {name: ops, sha256: %s, scopes: ["tenants:read", "tenants:write", "tenant:*"]}
    - {name: acme-team, sha256: %s, scopes: ["tenant:acme"]}
route_resolver: {type: token, path: /webhooks/catch/:token}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_age: 200ms}
log: {level: warn, format: json}
`

// consoleSecret signs the hooks of the quarantining source.
const consoleSecret = "whsec-console-pen-41c9"

// breakableSink is an HTTP receiver the test breaks (500 to everything)
// and fixes; it records the event ids it took.
type breakableSink struct {
	url    string
	broken atomic.Bool
	mu     sync.Mutex
	got    map[string]int
}

func newBreakableSink(t *testing.T) *breakableSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &breakableSink{url: "http://" + ln.Addr().String(), got: map[string]int{}}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *breakableSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if s.broken.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	s.mu.Lock()
	s.got[r.Header.Get("X-Ankusa-Event-Id")]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// count is how many times the sink took the hook id.
func (s *breakableSink) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[id]
}

func (s *breakableSink) took(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[id] > 0
}

// consoleNode is the node of the console tests and its tenants' data.
type consoleNode struct {
	*apiNode
	sink *breakableSink
}

// sourceJSON is a tenant's source delivering to the sink: two attempts 50
// to 100 ms apart, so a broken sink makes a dead letter within a second.
func (n *consoleNode) sourceJSON(name, verify, extra string) string {
	return fmt.Sprintf(`{"name":%q,"verify":%s%s,"sinks":[{"id":"recv","type":"http","url":"%s/%s","allow_private":true,"max_attempts":2,"retry_base":"50ms","retry_max":"100ms"}]}`,
		name, verify, extra, n.sink.url, name)
}

func newConsoleNode(t *testing.T) *consoleNode {
	t.Helper()
	n := &consoleNode{apiNode: &apiNode{testNode: newTestNode(t), t: t, c: &http.Client{Timeout: 10 * time.Second}}, sink: newBreakableSink(t)}
	t.Cleanup(n.c.CloseIdleConnections)
	writeConfig(t, n.testNode, fmt.Sprintf(consoleYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), sha256Hex(acmeToken)))
	n.serve(t)
	return n
}

// addSource creates a source of tenant through the API.
func (n *consoleNode) addSource(tenant, name, verify, extra string) {
	n.t.Helper()
	wantStatus(n.t, "POST source "+name, n.do("POST", sourcesOf(tenant), opsToken, n.sourceJSON(name, verify, extra)), http.StatusCreated)
}

// mint creates a route with a token to source and returns its URL path.
func (n *consoleNode) mint(tenant, source string) string {
	n.t.Helper()
	a := n.do("POST", "/v1/tenants/"+tenant+"/routes", opsToken, `{"source_id":"`+source+`","token":"auto"}`)
	var r routeAnswer
	decode(n.t, "POST route", a, &r)
	if a.status != http.StatusCreated || r.URLPath == "" {
		n.t.Fatalf("POST route to %s: %d %s, want 201 with url_path", source, a.status, a.body)
	}
	return r.URLPath
}

// waitDead waits until tenant's dead letters hold id.
func (n *consoleNode) waitDead(tenant, id string) {
	n.t.Helper()
	if !waitFor(15*time.Second, func() bool {
		a := n.do("GET", "/v1/tenants/"+tenant+"/deliveries?state=dead", opsToken, "")
		return a.status == http.StatusOK && strings.Contains(string(a.body), id)
	}) {
		n.t.Fatalf("%s's hook %s is no dead letter within 15s", tenant, id)
	}
}

// TestConsoleFlow drives the console as an operator would, with the ops
// token, and screenshots every view.
func TestConsoleFlow(t *testing.T) {
	n := newConsoleNode(t)
	n.addSource("acme", "acme-in", `{"type":"none"}`, "")
	n.addSource("acme", "acme-signed", `{"type":"hmac","header":"X-Signature","algorithm":"sha256","encoding":"hex","secret":"`+consoleSecret+`"}`, `,"on_verify_failure":"quarantine"`)

	b := newBrowser(t, "http://"+n.admin+"/console/")
	b.do("the login page", navTo(b.base))
	b.shot("01-login")
	b.login(opsToken, "")
	b.waitText("the tenants view before any hook", "No tenant has sent a hook", 10*time.Second, "")

	// Mint a URL in the routes view, for acme-in.
	b.open("routes?tenant=acme")
	b.do("mint a URL", typeInto("mint-source", "acme-in"), clickID("mint-submit"))
	b.waitJS("the minted URL is shown", `document.getElementById("minted-path") !== null`, 10*time.Second, "")
	var path string
	b.eval("read the minted path", `document.getElementById("minted-path").textContent`, &path)
	if !strings.HasPrefix(path, "/webhooks/catch/") {
		t.Fatalf("the routes view shows the URL path %q, want /webhooks/catch/<token>", path)
	}
	b.waitJS("the new route is listed", `document.querySelectorAll("tr[data-route]").length === 1`, 5*time.Second, "")
	b.shot("03-routes-minted")

	// A hook to the minted URL, found in the hooks view, delivered.
	first := hookID(t, "a hook to the minted URL", n.hookAt(path, `{"order":"first-order-7731"}`))
	b.open("hooks")
	b.do("find the hook", typeInto("hook-id", first), clickID("hook-find"))
	b.waitJS("the hook is shown delivered", `document.querySelector('[data-sink="recv"] [data-state="delivered"]') !== null && document.getElementById("hook-body").textContent.includes("first-order-7731")`,
		15*time.Second, `document.getElementById("hook-find").click()`)
	if !n.sink.took(first) {
		t.Errorf("the console shows %s delivered, but the sink did not take it", first)
	}
	b.waitText("the hook's verdict", "not verified (none)", time.Second, "")
	b.shot("04-hook-delivered")

	// Break the sink: the next hook is a dead letter.
	n.sink.broken.Store(true)
	second := hookID(t, "a hook to the broken sink", n.hookAt(path, `{"order":"second-order-9902"}`))
	n.waitDead("acme", second)
	b.open("dead")
	b.waitJS("the dead letter is listed", fmt.Sprintf(`document.querySelector('tr[data-event=%q][data-sink="recv"]') !== null`, second),
		10*time.Second, `document.getElementById("filter-apply").click()`)
	b.waitJS("the dead letter's last status is the sink's 500", fmt.Sprintf(`document.querySelector('tr[data-event=%q] td[data-col="last-status"]')?.textContent === "500"`, second), 5*time.Second, "")
	b.shot("05-dead-letters")
	// Filtered by another source, the list is empty.
	b.do("filter by acme-signed", typeInto("filter-source", "acme-signed"), clickID("filter-apply"))
	b.waitJS("no dead letter of acme-signed", `document.getElementById("dead-empty") !== null`, 10*time.Second, "")
	b.do("clear the filter", clearID("filter-source"), clickID("filter-apply"))
	b.waitJS("the dead letter is listed again", fmt.Sprintf(`document.querySelector('tr[data-event=%q]') !== null`, second), 10*time.Second, "")

	// The hooks view shows it dead, with the API's redelivery.
	b.open("hooks?id=" + second)
	b.waitJS("the hook is shown dead", `document.querySelector('[data-sink="recv"] [data-state="dead"]') !== null`, 10*time.Second, `document.getElementById("hook-find").click()`)
	b.waitText("the redelivery offered", "Redeliver (retry the dead letter)", time.Second, "")
	b.shot("05b-hook-dead")
	b.open("dead")
	b.waitJS("the dead letter is listed", fmt.Sprintf(`document.querySelector('tr[data-event=%q]') !== null`, second), 10*time.Second, "")

	// Fix it and retry from the console: delivered.
	n.sink.broken.Store(false)
	b.click(fmt.Sprintf(`tr[data-event=%q]`, second), "Retry")
	b.waitText("the retry is confirmed", "Retried "+second, 10*time.Second, "")
	if !waitFor(15*time.Second, func() bool { return n.sink.took(second) }) {
		t.Fatalf("the retried dead letter %s did not reach the fixed sink", second)
	}
	b.shot("06-dead-letter-retried")
	b.open("hooks?id=" + second)
	b.waitJS("the retried hook is shown delivered", `document.querySelector('[data-sink="recv"] [data-state="delivered"]') !== null`,
		15*time.Second, `document.getElementById("hook-find").click()`)
	b.shot("07-hook-redelivered")
	// A delivered hook is sent again from the hooks view: the sink gets it
	// a second time.
	before := n.sink.count(second)
	b.click(`[data-sink="recv"]`, "Redeliver")
	b.waitText("the redelivery is confirmed", "Redelivered: sink recv gets it again.", 10*time.Second, "")
	if !waitFor(15*time.Second, func() bool { return n.sink.count(second) > before }) {
		t.Fatalf("the redelivered hook %s did not reach the sink again", second)
	}
	b.shot("07b-hook-delivered-again")

	// A hook with a bad signature is held; the quarantine view shows why.
	signed := n.mint("acme", "acme-signed")
	held := n.hookAt(signed, `{"order":"held-order-5510"}`, "X-Signature", strings.Repeat("0", 64))
	wantStatus(t, "a badly signed hook to the quarantining source", held, http.StatusAccepted)
	b.open("quarantine")
	b.waitJS("the held hook is listed with its failure", `document.querySelector("#quarantine-list tr[data-event]") !== null`,
		10*time.Second, `document.getElementById("filter-apply").click()`)
	b.waitText("the failure reason", "mismatch", time.Second, "")
	b.shot("08-quarantine")
	heldID := hookID201or202(t, held)
	row := fmt.Sprintf(`tr[data-event=%q]`, heldID)
	// Verified again with the source's secret it still fails: it stays held.
	b.click(row, "Release")
	b.waitText("the release is refused", "signature_invalid", 10*time.Second, "")
	// Released unverified (a second click confirms): delivered, flagged.
	b.click(row, "Release unverified")
	b.click(row, "Click again: deliver it unverified")
	b.waitText("the forced release is confirmed", "Released "+heldID+", unverified", 10*time.Second, "")
	if !waitFor(15*time.Second, func() bool { return n.sink.took(heldID) }) {
		t.Errorf("the released hook %s did not reach the sink", heldID)
	}
	b.waitJS("the pen is empty", `document.getElementById("quarantine-empty") !== null`, 5*time.Second, "")
	b.shot("08b-quarantine-released")

	// Sources: an invalid field's message shows at that field.
	b.open("sources")
	b.waitJS("acme's sources are listed", `document.querySelector('tr[data-source="acme-signed"]') !== null`, 10*time.Second, "")
	b.do("create a source with an unknown verify type",
		typeInto("f-name", "console-made"), clearID("f-verify-type"), typeInto("f-verify-type", "md5sum"), clickID("source-save"))
	b.waitJS("the message is at verify.type", `document.querySelector('[data-error-for="verify.type"]').textContent.includes("md5sum")`, 10*time.Second, "")
	var elsewhere string
	b.eval("other fields stay clean", `[...document.querySelectorAll("[data-error-for]")].filter((e) => e.dataset.errorFor !== "verify.type" && e.textContent).map((e) => e.dataset.errorFor).join(",")`, &elsewhere)
	if elsewhere != "" {
		t.Errorf("the verify.type message also shows at %s", elsewhere)
	}
	b.shot("09-sources-invalid-field")
	if a := n.do("GET", sourceAt("acme", "console-made"), opsToken, ""); a.status != http.StatusNotFound {
		t.Errorf("the refused source was stored: GET answers %d", a.status)
	}
	// Edit acme-in as JSON: the answer's spec goes back with one key changed.
	b.click(`tr[data-source="acme-in"]`, "Edit")
	b.waitJS("the editor holds acme-in", `document.getElementById("source-json").value.includes('"acme-in"')`, 5*time.Second, "")
	b.eval("change on_verify_failure in the JSON", `(() => {
		const ta = document.getElementById("source-json");
		const spec = JSON.parse(ta.value);
		spec.on_verify_failure = "accept_flag";
		ta.value = JSON.stringify(spec, null, 2);
		return true;
	})()`, nil)
	b.do("save acme-in", clickID("source-save"))
	b.waitText("the save is confirmed", "Saved source acme-in", 10*time.Second, "")
	if a := n.do("GET", sourceAt("acme", "acme-in"), opsToken, ""); !strings.Contains(string(a.body), `"on_verify_failure":"accept_flag"`) || !strings.Contains(string(a.body), `"id":"recv"`) {
		t.Errorf("after the console's edit, acme-in is %s", a.body)
	}

	// Tenants: acme, with its counters, and its rate limit's override set
	// from the form.
	b.open("tenants")
	b.waitJS("acme is listed with its hooks", `document.querySelector('tr[data-tenant="acme"] td.num:nth-of-type(4)')?.textContent === "3"`, 10*time.Second,
		`document.getElementById("tenant-use").click()`)
	b.waitJS("acme's rate limit form", `document.getElementById("f-rate") !== null`, 5*time.Second, "")
	b.do("set acme's override", clearID("f-rate"), typeInto("f-rate", "250"), clickID("rate-limit-submit"))
	b.waitJS("the override is shown", `document.querySelector('tr[data-tenant="acme"]').innerText.includes("250/s")`, 10*time.Second, "")
	if a := n.do("GET", "/v1/tenants/acme/rate_limit", opsToken, ""); !strings.Contains(string(a.body), `"override":{"rate":250`) {
		t.Errorf("after the console set the override, the API answers %s", a.body)
	}
	b.shot("02-tenants")

	// Live: two reads of /metrics make the charts; the count of hooks
	// stored since start grows by the hooks sent meanwhile.
	b.open("live")
	b.waitText("the live view updates", "Updated", 15*time.Second, "")
	const storedJS = `(() => { const m = /(\d+) hooks stored since start/.exec(document.getElementById("live-status").innerText); return m ? Number(m[1]) : -1; })()`
	var storedBefore int
	b.eval("the hooks stored before", storedJS, &storedBefore)
	if storedBefore < 0 {
		t.Fatalf("the live view does not say how many hooks were stored since start")
	}
	const sent = 5
	for i := range sent {
		hookID(t, "a hook while the live view reads", n.hookAt(path, fmt.Sprintf(`{"live":%d}`, i)))
		time.Sleep(300 * time.Millisecond)
	}
	b.waitJS(fmt.Sprintf("the live view counts the %d hooks (from %d)", sent, storedBefore), fmt.Sprintf(`%s >= %d && document.getElementById("live-answers").innerText.includes("201:")`, storedJS, storedBefore+sent), 20*time.Second, "")
	b.waitText("the charts say they are node-wide", "node-wide, all tenants", time.Second, "")
	var lines int
	b.eval("count the chart lines", `document.querySelectorAll("#live-hooks polyline, #live-answers polyline, #live-fsync polyline, #live-lag polyline").length`, &lines)
	if lines < 4 {
		t.Errorf("the live view draws %d lines, want one in each of its four charts at least", lines)
	}
	b.shot("10-live")

	// Revoke the minted URL from the routes view (a token-only route goes
	// with its token): it answers 404.
	b.open("routes")
	b.waitJS("acme's routes are listed", `document.querySelectorAll("tr[data-route]").length === 2`, 10*time.Second, "")
	var route string
	b.eval("the first route", `(() => { const tr = [...document.querySelectorAll("tr[data-route]")].find((r) => r.innerText.includes("acme-in")); return tr ? tr.dataset.route : ""; })()`, &route)
	b.click(fmt.Sprintf(`tr[data-route=%q]`, route), "Delete (revokes its URL)")
	b.waitText("the revoke is confirmed", "Deleted route "+route, 10*time.Second, "")
	wantStatus(t, "a hook to the revoked URL", n.hookAt(path, `{"after":"revoke"}`), http.StatusNotFound)
	b.shot("11-routes-revoked")

	// Log out clears the token: the next load asks for it again.
	b.do("log out", clickID("logout"), waitVisibleID("login-token"))
	var stored string
	b.eval("the token after log out", `sessionStorage.getItem("ankusa.token") || ""`, &stored)
	if stored != "" {
		t.Errorf("sessionStorage still holds a token after log out")
	}
	b.checkProblems()
}

// TestConsoleTenantIsolation: a token for tenant acme, in every view, never
// shows tenant globex's data, and naming globex shows the API's refusal.
func TestConsoleTenantIsolation(t *testing.T) {
	n := newConsoleNode(t)
	n.addSource("acme", "acme-in", `{"type":"none"}`, "")
	n.addSource("globex", "globex-in", `{"type":"none"}`, "")
	n.addSource("globex", "globex-pen", `{"type":"hmac","header":"X-Signature","algorithm":"sha256","encoding":"hex","secret":"`+consoleSecret+`"}`, `,"on_verify_failure":"quarantine"`)
	acmeURL, globexURL, globexPen := n.mint("acme", "acme-in"), n.mint("globex", "globex-in"), n.mint("globex", "globex-pen")
	acmeHook := hookID(t, "acme's hook", n.hookAt(acmeURL, `{"who":"acme-visible-1"}`))
	n.sink.broken.Store(true)
	acmeDead := hookID(t, "acme's dead letter", n.hookAt(acmeURL, `{"who":"acme-visible-2"}`))
	globexDead := hookID(t, "globex's dead letter", n.hookAt(globexURL, `{"who":"globex-private-1"}`))
	n.waitDead("acme", acmeDead)
	n.waitDead("globex", globexDead)
	n.sink.broken.Store(false)
	globexHook := hookID(t, "globex's hook", n.hookAt(globexURL, `{"who":"globex-private-2"}`))
	wantStatus(t, "globex's held hook", n.hookAt(globexPen, `{"who":"globex-private-3"}`, "X-Signature", strings.Repeat("0", 64)), http.StatusAccepted)
	wantStatus(t, "globex's rate limit override", n.do("PUT", "/v1/tenants/globex/rate_limit", opsToken, `{"rate":4242,"burst":4243,"max_queue":0,"max_queue_bytes":0}`), http.StatusOK)

	b := newBrowser(t, "http://"+n.admin+"/console/")
	mark := b.requestMark() // from the log in on
	b.login(acmeToken, "acme")
	// globexOverride is how the tenants view would show globex's override.
	const globexOverride = "4242/s, burst 4243"
	secrets := []string{"globex", globexDead, globexHook, "globex-private", globexOverride}
	clean := func(view string) {
		t.Helper()
		all := b.everything()
		for _, s := range secrets {
			if strings.Contains(all, s) {
				t.Errorf("the %s view holds %q (of tenant globex) for a token for acme:\n%s", view, s, all)
			}
		}
	}
	// Every admin API call the page makes for acme's token is for the
	// list of tenants, acme or under acme (until the loop below names
	// globex on purpose).
	checkRequests := func() {
		t.Helper()
		calls := 0
		for _, raw := range b.requestsSince(mark) {
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("the page requested %q: %v", raw, err)
				continue
			}
			if u.Path != "/v1" && !strings.HasPrefix(u.Path, "/v1/") {
				continue
			}
			calls++
			if u.Host != n.admin || (u.Path != "/v1/tenants" && u.Path != "/v1/tenants/acme" && !strings.HasPrefix(u.Path, "/v1/tenants/acme/")) {
				t.Errorf("the page, with acme's token, requested %s", raw)
			}
		}
		if calls < 10 {
			t.Errorf("the page made %d admin API calls over every view, want at least 10 (are requests recorded?)", calls)
		}
	}
	b.waitJS("acme's rate limit", `document.getElementById("f-rate") !== null`, 10*time.Second, "")
	b.waitText("the refusal to list tenants", "cannot list tenants", time.Second, "")
	clean("tenants")
	b.shot("01-tenants-acme")

	for _, v := range []struct{ hash, ready, shot string }{
		{"sources", `document.querySelector('tr[data-source="acme-in"]')`, "02-sources-acme"},
		{"routes", `document.querySelectorAll("tr[data-route]").length === 1`, "03-routes-acme"},
		{"dead", `document.querySelector("tr[data-event=\"` + acmeDead + `\"]")`, "04-dead-acme"},
		{"quarantine", `document.getElementById("quarantine-empty")`, "05-quarantine-acme"},
		{"hooks?id=" + acmeHook, `document.getElementById("hook-body")`, "06-hook-acme"},
		{"live", `document.body.innerText.includes("Updated")`, "08-live-acme"},
	} {
		b.open(v.hash)
		b.waitJS("the "+v.hash+" view", v.ready, 10*time.Second, "")
		clean(v.hash)
		b.shot(v.shot)
	}
	// globex's hook by its id, in acme's hooks view: the one 404.
	b.open("hooks?id=" + globexHook)
	b.waitText("globex's hook is not found for acme", "404", 10*time.Second, "")
	for _, s := range []string{"globex-private", "globex-in"} {
		if strings.Contains(b.text(), s) {
			t.Errorf("acme's hooks view shows %q of globex's hook", s)
		}
	}
	b.shot("07-hook-of-globex-refused")
	checkRequests()

	// The live view says its figures are not acme's only.
	b.open("live")
	b.waitJS("the live view says node-wide", `document.getElementById("live-node-wide")?.innerText.includes("node-wide")`, 10*time.Second, "")

	// Naming globex: each view shows the API's 403, nothing of its data.
	for _, view := range []string{"tenants", "sources", "routes", "dead", "quarantine"} {
		b.open(view + "?tenant=globex")
		b.waitText("globex refused in "+view, "403 forbidden", 10*time.Second, "")
		text := b.text()
		for _, s := range []string{globexDead, globexHook, "globex-private", "globex-in", "globex-pen", globexOverride} {
			if strings.Contains(text, s) {
				t.Errorf("the %s view for globex shows %q to a token for acme:\n%s", view, s, text)
			}
		}
		if view == "dead" {
			b.shot("09-dead-globex-refused")
		}
	}
	b.checkProblems()
}

// TestConsoleMakeRun is issue 22's acceptance 2: `make run` on a fresh
// clone (ankusa serve, no config, an empty directory); the banner's curl
// line sends a hook, the banner's console URL with the token from the file
// the banner names shows it delivered, and the file the banner names for
// the demo source's deliveries holds it.
func TestConsoleMakeRun(t *testing.T) {
	waitPortsFree(t, config.DefaultListen, config.DefaultAdminListen)
	dir := t.TempDir()
	p := startProc(t, dir, "serve")

	var banner string
	if !waitFor(15*time.Second, func() bool {
		banner = p.stderr.String()
		return strings.Contains(banner, "Metrics: ") || p.exited()
	}) || p.exited() {
		t.Fatalf("ankusa serve printed no whole banner within 15s:\n%s", banner)
	}
	curl := regexp.MustCompile(`(?m)^\s*(curl -i -X POST \S+/webhooks/demo .*)$`).FindStringSubmatch(banner)
	consoleURL := regexp.MustCompile(`(http://\S+/console/)`).FindStringSubmatch(banner)
	tokenFile := regexp.MustCompile(`Admin token(?: \(shown once; kept in | in |: in )(\S+?)[,)\s]`).FindStringSubmatch(banner)
	if curl == nil || consoleURL == nil || tokenFile == nil {
		t.Fatalf("the banner should name the curl line (%v), the console's URL (%v) and the token's file (%v):\n%s", curl != nil, consoleURL != nil, tokenFile != nil, banner)
	}
	out := runLine(t, dir, curl[1])
	id := regexp.MustCompile(`"id":"(evt_[0-9A-Z]{26})"`).FindStringSubmatch(out)
	if !strings.Contains(out, "HTTP/1.1 201") || id == nil {
		t.Fatalf("the banner's curl line got:\n%s\nwant 201 with an event id", out)
	}
	path := tokenFile[1]
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	token, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the token file the banner names: %v", err)
	}

	b := newBrowser(t, consoleURL[1])
	b.login(strings.TrimSpace(string(token)), "default")
	b.open("hooks?tenant=default")
	b.do("find the banner's hook", typeInto("hook-id", id[1]), clickID("hook-find"))
	b.waitJS("the hook is shown delivered", `document.querySelector('[data-state="delivered"]') !== null && document.getElementById("hook-body").textContent.includes("world")`,
		15*time.Second, `document.getElementById("hook-find").click()`)
	b.shot("01-make-run-hook-delivered")

	// The file the banner names for the demo source's deliveries.
	files := regexp.MustCompile(`(?m)(\S+\.(?:ndjson|jsonl))`).FindAllStringSubmatch(banner, -1)
	if files == nil {
		t.Fatalf("the banner names no file of deliveries (.ndjson):\n%s", banner)
	}
	found := false
	for _, f := range files {
		fp := strings.Trim(f[1], `'"`)
		if !filepath.IsAbs(fp) {
			fp = filepath.Join(dir, fp)
		}
		if waitFor(5*time.Second, func() bool {
			b, err := os.ReadFile(fp)
			return err == nil && strings.Contains(string(b), id[1])
		}) {
			found = true
		}
	}
	if !found {
		t.Errorf("no file the banner names (%v) holds hook %s", files, id[1])
	}
	b.checkProblems()
	p.stop()
}

// hookID201or202 is the event id of a stored hook's answer (201, or 202
// for a held one).
func hookID201or202(t *testing.T, a answer) string {
	t.Helper()
	id := regexp.MustCompile(`"id":"(evt_[0-9A-Z]{26})"`).FindSubmatch(a.body)
	if (a.status != http.StatusCreated && a.status != http.StatusAccepted) || id == nil {
		t.Fatalf("%d %s, want 201 or 202 with an event id", a.status, a.body)
	}
	return string(id[1])
}

// TestConsoleRefusesBadNames: a tenant or an event id that is not one
// (from the URL, the picker or the login form) is refused with a message
// and never reaches a request; the path helpers refuse anything that
// leaves /v1/ of this origin; a refused login keeps no token; a newer
// navigation wins over an older one still loading; the live view stops
// reading /metrics when left.
func TestConsoleRefusesBadNames(t *testing.T) {
	n := newConsoleNode(t)
	n.addSource("acme", "acme-in", `{"type":"none"}`, "")
	n.addSource("globex", "globex-in", `{"type":"none"}`, "")

	b := newBrowser(t, "http://"+n.admin+"/console/")
	b.do("load the console", navTo(b.base), waitVisibleID("login-token"))
	// A token the node does not know: refused, and not kept.
	b.do("log in with an unknown token", typeInto("login-token", "not-a-token-of-this-node"), clickID("login-submit"))
	b.waitText("the unknown token is refused", "refused this token (401", 10*time.Second, "")
	if tok := b.storedToken(); tok != "" {
		t.Errorf("after a refused login the tab keeps the token %q", tok)
	}
	// A tenant that is not a name: refused before any call, token not kept.
	b.do("log in naming ../globex", clearID("login-token"), typeInto("login-token", acmeToken), typeInto("login-tenant", "../globex"), clickID("login-submit"))
	b.waitText("the tenant is refused", `"../globex" is not a tenant name`, 10*time.Second, "")
	if tok := b.storedToken(); tok != "" {
		t.Errorf("after a login naming ../globex the tab keeps the token %q", tok)
	}
	b.do("log in naming acme", clearID("login-tenant"), typeInto("login-tenant", "acme"), clickID("login-submit"), waitVisibleID("logout"))
	if tok := b.storedToken(); tok != acmeToken {
		t.Errorf("after logging in the tab keeps %q, want the token", tok)
	}
	mark := b.requestMark()

	// An id that is not one, from the URL: a message, no call.
	b.open("hooks?id=" + url.QueryEscape("../../globex/hooks/evt_01J00000000000000000000000"))
	b.waitText("the id is refused", "is not an event id", 10*time.Second, "")
	// A tenant that is not a name, from the URL and the picker.
	b.open("sources?tenant=" + url.QueryEscape("../globex"))
	b.waitText("the URL's tenant is refused", `"../globex" is not a tenant name`, 10*time.Second, "")
	b.waitText("the tenant stays acme", "Sources of acme", 10*time.Second, "")
	b.do("name ..%2Fglobex in the picker", clearID("tenant-picker"), typeInto("tenant-picker", "..%2Fglobex"), clickID("tenant-use"))
	b.waitText("the picker's tenant is refused", `"..%2Fglobex" is not a tenant name`, 10*time.Second, "")
	b.shot("01-bad-tenant-refused")
	var kept string
	b.eval("the kept tenant", `sessionStorage.getItem("ankusa.tenant")`, &kept)
	if kept != "acme" {
		t.Errorf("the tab keeps tenant %q, want acme", kept)
	}

	// The helpers themselves, in the page.
	var verdicts map[string]string
	b.evalAwait("the path helpers", `Promise.all([import("./api.js"), import("./dom.js")]).then(([m, d]) => {
		const out = {};
		const try_ = (name, f) => { try { f(); out[name] = "accepted"; } catch (e) { out[name] = "refused"; } };
		try_("tenant ..", () => m.tenantPath(".."));
		try_("tenant ../globex", () => m.tenantPath("../globex"));
		try_("tenant Acme", () => m.tenantPath("Acme"));
		try_("segment ..", () => m.tenantPath("acme", ".."));
		try_("segment %2e%2e", () => m.tenantPath("acme", "%2e%2e"));
		try_("segment a/b", () => m.tenantPath("acme", "hooks/x"));
		try_("path with ..", () => m.checkPath("/v1/tenants/acme/../globex"));
		try_("path with %2e%2e", () => m.checkPath("/v1/tenants/acme/%2e%2e/globex"));
		try_("path with %2f", () => m.checkPath("/v1/tenants/acme%2f..%2fglobex"));
		try_("another origin", () => m.checkPath("//evil.example/v1/tenants"));
		try_("an absolute URL", () => m.checkPath("http://evil.example/v1/tenants"));
		try_("outside /v1/", () => m.checkPath("/console/app.js"));
		try_("/metrics for api", () => m.checkPath("/metrics"));
		try_("href javascript:", () => d.h("a", { href: "javascript:alert(1)" }));
		try_("href //", () => d.h("a", { href: "//evil.example/" }));
		try_("onclick string", () => d.h("div", { onclick: "alert(1)" }));
		try_("OnClick string", () => d.h("div", { OnClick: "alert(1)" }));
		try_("ok tenant path", () => m.tenantPath("acme", "hooks", "evt_01J00000000000000000000000"));
		try_("ok /metrics for live", () => m.checkPath("/metrics", true));
		try_("ok href #", () => d.h("a", { href: "#/hooks" }));
		try_("ok onclick function", () => d.h("button", { onclick: () => {} }));
		return out;
	})`, &verdicts)
	if len(verdicts) != 21 {
		t.Fatalf("the helpers gave %d verdicts, want 21: %v", len(verdicts), verdicts)
	}
	for k, v := range verdicts {
		want := "refused"
		if strings.HasPrefix(k, "ok ") {
			want = "accepted"
		}
		if v != want {
			t.Errorf("%s: %s, want %s", k, v, want)
		}
	}
	// Trusted Types are enforced: a string never reaches an HTML sink.
	var sink string
	b.eval("an HTML sink", `(() => { try { document.createElement("div").innerHTML = "<b>x</b>"; return "accepted"; } catch (e) { return e.name; } })()`, &sink)
	if sink != "TypeError" {
		t.Errorf("assigning a string to innerHTML: %q, want a TypeError (Trusted Types)", sink)
	}
	b.mu.Lock()
	b.problems = slices.DeleteFunc(b.problems, func(p string) bool { return strings.Contains(p, "TrustedHTML") })
	b.mu.Unlock()
	// api() is async: its refusal is a rejected promise.
	var apiRefused string
	b.evalAwait("api() outside /v1/", `import("./api.js").then((m) => m.api("GET", "/metrics").then(() => "accepted", (e) => e.code))`, &apiRefused)
	if apiRefused != "bad_path" {
		t.Errorf("api() on /metrics: %q, want refused (bad_path)", apiRefused)
	}
	for _, raw := range b.requestsSince(mark) {
		u, err := url.Parse(raw)
		if err != nil || strings.Contains(raw, "..") || strings.Contains(strings.ToLower(raw), "%2e") || strings.Contains(raw, "globex") || u.Host != n.admin ||
			(strings.HasPrefix(u.Path, "/v1") && u.Path != "/v1/tenants" && u.Path != "/v1/tenants/acme" && !strings.HasPrefix(u.Path, "/v1/tenants/acme/")) {
			t.Errorf("the page requested %s", raw)
		}
	}

	// Two navigations at once: the newer one is drawn, nothing of the
	// older one (which awaits the API meanwhile) shows in it.
	// The second navigation starts once the first view's heading is on
	// screen (the view then awaits its first answer).
	heading := map[string]string{"tenants": "Tenants", "sources": "Sources", "live": "Live"}
	liveLeft := -1 // the requests since the live view was left at once
	for _, nav := range [][2]string{{"tenants", "sources"}, {"live", "tenants"}, {"sources", "routes"}} {
		var before string
		b.eval("the seq before", `document.body.dataset.seq`, &before)
		b.eval("navigate to "+nav[0]+" then "+nav[1], fmt.Sprintf(`(() => {
			location.hash = "#/%s";
			const iv = setInterval(() => {
				const h = document.querySelector("#main h1");
				if (h && h.innerText === %q) { clearInterval(iv); location.hash = "#/%s"; }
			}, 1);
			return true;
		})()`, nav[0], heading[nav[0]], nav[1]), nil)
		b.waitJS("the "+nav[1]+" view is drawn", fmt.Sprintf(`document.body.dataset.seq !== %q && document.body.dataset.view === %q`, before, nav[1]), 15*time.Second, "")
		time.Sleep(time.Second) // room for a stale render to show up
		var heads string
		b.eval("the headings", `[...document.querySelectorAll("#main h1, #main h2, #main figcaption")].map((e) => e.innerText).join("|")`, &heads)
		want := map[string]string{"sources": "Sources|Sources of acme|New source", "routes": "Routes & URLs|Mint a URL|Routes of acme", "tenants": "Tenants"}[nav[1]] // acme has no hook yet: the tenants view shows the API's 404
		var main string
		b.eval("the view's text", `document.getElementById("main").innerText`, &main)
		var view string
		b.eval("the view on screen", `document.body.dataset.view`, &view)
		// The view opened on its own shows the same.
		b.open(nav[1])
		var alone string
		b.eval("the view's text alone", `document.getElementById("main").innerText`, &alone)
		if nav[0] == "live" {
			liveLeft = b.requestMark()
		}
		if heads != want || main != alone || view != nav[1] {
			t.Errorf("after %s then %s, the page (view %q) has the headings %q, want %q; its text:\n%s\nwant, as the view alone shows:\n%s", nav[0], nav[1], view, heads, want, main, alone)
		}
	}
	// The live view reads /metrics while shown, and not once left: left at
	// once above, with its first read on its way, and here after it
	// updated.
	time.Sleep(3 * time.Second) // with the loop's own time, more than two periods
	for _, raw := range b.requestsSince(liveLeft) {
		if strings.HasSuffix(raw, "/metrics") {
			t.Errorf("the live view, left at once, still reads %s", raw)
		}
	}
	b.open("live")
	b.waitText("the live view updates", "Updated", 15*time.Second, "")
	b.open("tenants")
	left := b.requestMark()
	time.Sleep(5 * time.Second) // two and a half periods
	for _, raw := range b.requestsSince(left) {
		if strings.HasSuffix(raw, "/metrics") {
			t.Errorf("the live view still reads %s after it was left", raw)
		}
	}
	b.checkProblems()
}
