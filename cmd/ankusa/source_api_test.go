package main

// Issue 15, acceptance 2, 4 and 5: the seed's "Dynamic sources" section,
// sentence by sentence, against the built binary's real listeners with
// source_store: persistent (and static, for its 409), and bad input to
// the source API. Every answer is checked from the outside: status, error
// code, message, and what the public listener serves after the write.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/rabbittest"
)

const srcPath = "/v1/tenants/%s/sources"

func sourcesOf(tenant string) string      { return fmt.Sprintf(srcPath, tenant) }
func sourceAt(tenant, name string) string { return sourcesOf(tenant) + "/" + name }

// sourceAnswer is the part of a source's answer the tests read.
type sourceAnswer struct {
	Name       string   `json:"name"`
	TenantID   string   `json:"tenant_id"`
	SecretsSet []string `json:"secrets_set"`
	FromConfig bool     `json:"from_config"`
	URLPath    string   `json:"url_path"`
}

// "a source can appear at runtime with no redeploy ... a created or
// updated source works immediately and survives a restart": the very next
// hook after the admin 201 is a 201 (no sleep), and a source created just
// before a kill -9 serves after the restart. A POST without a name mints
// an unguessable one and answers with the URL path it serves on.
func TestSourceAPICreatedServesAtOnceAndSurvivesKill9(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	for i := range 20 {
		name := fmt.Sprintf("now-%d", i)
		body := fmt.Sprintf(`{"name":%q,"verify":{"type":"none"}}`, name)
		a := n.do("POST", sourcesOf("acme"), opsToken, body)
		var s sourceAnswer
		wantStatus(t, "POST "+name, a, http.StatusCreated)
		decode(t, "POST "+name, a, &s)
		if s.Name != name || s.TenantID != "acme" || s.FromConfig || s.URLPath != "/webhooks/acme/"+name {
			t.Fatalf("POST %s answered %s", name, a.body)
		}
		hookID(t, "the first hook after creating "+name, n.hook("acme", name, `{"n":1}`))
	}
	minted := n.do("POST", sourcesOf("acme"), opsToken, `{"verify":{"type":"none"}}`)
	var m sourceAnswer
	wantStatus(t, "POST without a name", minted, http.StatusCreated)
	decode(t, "POST without a name", minted, &m)
	if len(m.Name) < 22 || m.URLPath != "/webhooks/acme/"+m.Name {
		t.Fatalf("POST without a name: name %q (want >= 128 random bits of text) url_path %q", m.Name, m.URLPath)
	}
	hookID(t, "a hook to the minted name's url_path", n.hookAt(m.URLPath, `{}`))

	wantStatus(t, "POST last", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"last","verify":{"type":"none"}}`), http.StatusCreated)
	p.kill9()
	p = n.serve(t)
	for _, name := range []string{"now-0", "now-19", "last", m.Name} {
		hookID(t, "after kill -9, a hook to "+name, n.hook("acme", name, `{"after":"restart"}`))
		wantStatus(t, "after kill -9, GET "+name, n.do("GET", sourceAt("acme", name), opsToken, ""), http.StatusOK)
	}
	p.stop()
}

// "Deleting a source": the next hook is 404 at once, the same 404 as a
// source that never existed, and it stays deleted across kill -9.
func TestSourceAPIDeletedIsTheUnknown404(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	unknown := n.hook("acme", "never-was", `{}`)
	wantStatus(t, "a hook to an unknown source", unknown, http.StatusNotFound)
	for i := range 10 {
		name := fmt.Sprintf("gone-%d", i)
		wantStatus(t, "POST", n.do("POST", sourcesOf("acme"), opsToken, fmt.Sprintf(`{"name":%q,"verify":{"type":"none"}}`, name)), http.StatusCreated)
		hookID(t, "before the delete", n.hook("acme", name, `{}`))
		wantStatus(t, "DELETE "+name, n.do("DELETE", sourceAt("acme", name), opsToken, ""), http.StatusOK)
		same404(t, "the first hook after deleting "+name, n.hook("acme", name, `{}`), unknown)
		wantError(t, "GET after DELETE", n.do("GET", sourceAt("acme", name), opsToken, ""), http.StatusNotFound, "not_found")
	}
	p.kill9()
	p = n.serve(t)
	same404(t, "after kill -9, a hook to a deleted source", n.hook("acme", "gone-9", `{}`), unknown)
	wantError(t, "after kill -9, GET a deleted source", n.do("GET", sourceAt("acme", "gone-9"), opsToken, ""), http.StatusNotFound, "not_found")
	p.stop()
}

// same404 requires a to be the 404 want is: status, body and content type.
func same404(t *testing.T, what string, a, want answer) {
	t.Helper()
	if a.status != http.StatusNotFound || string(a.body) != string(want.body) || a.header.Get("Content-Type") != want.header.Get("Content-Type") {
		t.Fatalf("%s: %d %q (%s), want the unknown source's %d %q (%s)", what, a.status, a.body, a.header.Get("Content-Type"),
			want.status, want.body, want.header.Get("Content-Type"))
	}
}

// "The admin API's write routes answer 409 source_store_read_only" against
// the static store (the default), and nothing changes.
func TestSourceAPIStaticStoreIsReadOnly(t *testing.T) {
	n := newAPINode(t, "static", "", "")
	p := n.serve(t)
	spec := `{"name":"cfgsrc","verify":{"type":"none"},"trust_url_tenant":true}`
	for _, w := range []struct{ method, path, body string }{
		{"POST", sourcesOf("acme"), `{"name":"new-one","verify":{"type":"none"}}`},
		{"POST", sourcesOf("default"), `{"verify":{"type":"none"},"trust_url_tenant":true}`},
		{"PUT", sourceAt("default", "cfgsrc"), spec},
		{"PUT", sourceAt("acme", "new-one"), `{"verify":{"type":"none"}}`},
		{"DELETE", sourceAt("default", "cfgsrc"), ""},
		{"DELETE", sourceAt("default", "cfgsrc") + "?deliveries=dead_letter", ""},
		{"POST", "/v1/tenants/acme/routes", `{"source_id":"cfgsrc","token":"auto"}`},
	} {
		wantError(t, w.method+" "+w.path, n.do(w.method, w.path, opsToken, w.body), http.StatusConflict, "source_store_read_only")
	}
	wantStatus(t, "GET cfgsrc", n.do("GET", sourceAt("default", "cfgsrc"), opsToken, ""), http.StatusOK)
	wantError(t, "GET new-one", n.do("GET", sourceAt("acme", "new-one"), opsToken, ""), http.StatusNotFound, "not_found")
	hookID(t, "cfgsrc still serves", n.hook("acme", "cfgsrc", `{}`))
	p.stop()
}

// "A write to a source that comes from the config is 409
// source_from_config"; "Source names are global: a taken name is 409
// source_exists", whichever tenant holds it.
func TestSourceAPIConfigSourceAndTakenName(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	spec := `{"verify":{"type":"none"},"trust_url_tenant":true,"max_body_bytes":1000}`
	wantError(t, "PUT cfgsrc", n.do("PUT", sourceAt("default", "cfgsrc"), opsToken, spec), http.StatusConflict, "source_from_config")
	wantError(t, "DELETE cfgsrc", n.do("DELETE", sourceAt("default", "cfgsrc"), opsToken, ""), http.StatusConflict, "source_from_config")
	wantError(t, "DELETE cfgsrc?deliveries=dead_letter", n.do("DELETE", sourceAt("default", "cfgsrc")+"?deliveries=dead_letter", opsToken, ""), http.StatusConflict, "source_from_config")
	var s sourceAnswer
	decode(t, "GET cfgsrc", n.do("GET", sourceAt("default", "cfgsrc"), opsToken, ""), &s)
	if !s.FromConfig {
		t.Fatalf("GET cfgsrc: from_config false")
	}

	wantStatus(t, "POST acme's taken", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"taken","verify":{"type":"none"}}`), http.StatusCreated)
	for _, tenant := range []string{"globex", "acme", "default"} {
		body := `{"name":"taken","verify":{"type":"none"},"trust_url_tenant":true}`
		wantError(t, "POST taken under "+tenant, n.do("POST", sourcesOf(tenant), opsToken, body), http.StatusConflict, "source_exists")
		body = `{"name":"cfgsrc","verify":{"type":"none"},"trust_url_tenant":true}`
		wantError(t, "POST cfgsrc under "+tenant, n.do("POST", sourcesOf(tenant), opsToken, body), http.StatusConflict, "source_exists")
	}
	decode(t, "GET taken", n.do("GET", sourceAt("acme", "taken"), opsToken, ""), &s)
	if s.TenantID != "acme" {
		t.Fatalf("taken now belongs to %q", s.TenantID)
	}
	same404(t, "globex's URL for acme's source", n.hook("globex", "taken", `{}`), n.hook("globex", "never-was", `{}`))
	p.stop()
}

// The trust_url_tenant rule: a shared source without a verifier under a
// tenant-from-request resolver is 400 invalid_source with the very line
// check-config prints for the same source in a file; with
// trust_url_tenant: true it is created and files hooks under the URL's
// tenant.
func TestSourceAPITrustURLTenantRule(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	want := lineNaming(t, checkConfigLines(t, n.yaml("persistent", "", "  open-api:\n    verify: {type: none}\n")), "sources.open-api")
	p := n.serve(t)
	e := wantError(t, "POST open-api without trust_url_tenant", n.do("POST", sourcesOf("default"), opsToken, `{"name":"open-api","verify":{"type":"none"}}`),
		http.StatusBadRequest, "invalid_source")
	if !strings.Contains(e.Message, want) {
		t.Fatalf("the API says\n  %s\ncheck-config says\n  %s", e.Message, want)
	}
	wantError(t, "GET the refused source", n.do("GET", sourceAt("default", "open-api"), opsToken, ""), http.StatusNotFound, "not_found")
	wantStatus(t, "a hook to the refused source", n.hook("acme", "open-api", `{}`), http.StatusNotFound)

	a := n.do("POST", sourcesOf("default"), opsToken, `{"name":"open-api","verify":{"type":"none"},"trust_url_tenant":true}`)
	wantStatus(t, "POST open-api with trust_url_tenant", a, http.StatusCreated)
	var s sourceAnswer
	decode(t, "POST", a, &s)
	if s.TenantID != "default" || s.URLPath != "/webhooks/{tenant}/open-api" {
		t.Fatalf("the shared source answered %s", a.body)
	}
	for _, tenant := range []string{"acme", "globex"} {
		id := hookID(t, "a hook for "+tenant, n.hook(tenant, "open-api", `{}`))
		var h hookJSON
		decode(t, "fetch", n.do("GET", hookPath(tenant, id), opsToken, ""), &h)
		if h.TenantID != tenant || h.SourceID != "open-api" {
			t.Fatalf("hook %s: tenant %q source %q, want %s open-api", id, h.TenantID, h.SourceID, tenant)
		}
	}
	// An update back into the rule's breach is refused the same way.
	e = wantError(t, "PUT without trust_url_tenant", n.do("PUT", sourceAt("default", "open-api"), opsToken, `{"verify":{"type":"none"}}`),
		http.StatusBadRequest, "invalid_source")
	if !strings.Contains(e.Message, want) {
		t.Fatalf("PUT: the API says\n  %s\ncheck-config says\n  %s", e.Message, want)
	}
	hookID(t, "after the refused PUT", n.hook("acme", "open-api", `{}`))
	p.stop()
}

// "One consequence for wal.type: none": a source write into a source
// without a durable sink is 400 invalid_source (the message check-config
// prints for it); a RabbitMQ sink is durable: 201, and a hook to it 201.
func TestSourceAPIWALNoneNeedsDurableSink(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	q := b.Queue(nil, x, "#")
	mq := fmt.Sprintf(`{"id":"mq","type":"rabbitmq","url":%q,"exchange":%q,"connect_timeout":"2s","timeout":"3s"}`, rabbittest.URL(), x)
	mqYAML := fmt.Sprintf("[{id: mq, type: rabbitmq, url: %q, exchange: %q}]", rabbittest.URL(), x)
	n := newAPINode(t, "persistent", "wal: {type: none}", "    sinks: "+mqYAML+"\n")
	httpOnly := "  web-only:\n    tenant_id: acme\n    verify: {type: none}\n    sinks: [{type: http, url: \"https://receiver.example.com/in\"}]\n"
	want := lineNaming(t, checkConfigLines(t, n.yaml("persistent", "wal: {type: none}", "    sinks: "+mqYAML+"\n"+httpOnly)), "sources.web-only")
	p := n.serve(t)
	for _, body := range []string{
		`{"name":"web-only","verify":{"type":"none"},"sinks":[{"type":"http","url":"https://receiver.example.com/in"}]}`,
	} {
		e := wantError(t, "POST web-only", n.do("POST", sourcesOf("acme"), opsToken, body), http.StatusBadRequest, "invalid_source")
		if !strings.Contains(e.Message, want) {
			t.Fatalf("the API says\n  %s\ncheck-config says\n  %s", e.Message, want)
		}
	}
	e := wantError(t, "POST no-sinks", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"no-sinks","verify":{"type":"none"}}`), http.StatusBadRequest, "invalid_source")
	if !strings.Contains(e.Message, "wal.type") {
		t.Fatalf("POST no-sinks: %q does not name wal.type", e.Message)
	}
	wantError(t, "GET web-only", n.do("GET", sourceAt("acme", "web-only"), opsToken, ""), http.StatusNotFound, "not_found")

	wantStatus(t, "POST durable", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"durable","verify":{"type":"none"},"sinks":[`+mq+`]}`), http.StatusCreated)
	hookID(t, "a hook to the durable source", n.hook("acme", "durable", `{"to":"rabbit"}`))
	if got := b.Count(q); got != 1 {
		t.Fatalf("the queue holds %d messages after the 201, want 1", got)
	}
	e = wantError(t, "PUT durable to an http sink only", n.do("PUT", sourceAt("acme", "durable"), opsToken,
		`{"verify":{"type":"none"},"sinks":[{"type":"http","url":"https://receiver.example.com/in"}]}`), http.StatusBadRequest, "invalid_source")
	if !strings.Contains(e.Message, "wal.type is none") {
		t.Fatalf("PUT durable: %q", e.Message)
	}
	hookID(t, "after the refused PUT", n.hook("acme", "durable", `{"to":"rabbit"}`))
	p.stop()
}

// deliveryRow is one row of GET .../deliveries.
type deliveryRow struct {
	EventID string `json:"event_id"`
	Source  string `json:"source"`
	Sink    string `json:"sink"`
	State   string `json:"state"`
}

func deadRows(t *testing.T, n *apiNode, tenant string) []deliveryRow {
	t.Helper()
	var v struct {
		Deliveries []deliveryRow `json:"deliveries"`
	}
	a := n.do("GET", "/v1/tenants/"+tenant+"/deliveries?state=dead&limit=1000", opsToken, "")
	wantStatus(t, "GET dead deliveries", a, http.StatusOK)
	decode(t, "GET dead deliveries", a, &v)
	return v.Deliveries
}

// "Deleting a source that still has undelivered hooks on the node is 409
// source_has_deliveries; add ?deliveries=dead_letter to dead-letter them
// first, so a source re-created under the same name starts with an empty
// queue." The sink keeps its id across the re-creation, so any row left
// pending would go to the new, good receiver.
func TestSourceAPIDeleteWithDeliveries(t *testing.T) {
	recv := newSinkRecorder(t)
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	sink := func(path string) string {
		return fmt.Sprintf(`{"name":"queued","verify":{"type":"none"},"sinks":[{"id":"out","type":"http","url":"%s/%s","allow_private":true,"max_attempts":1000,"retry_base":"20ms","retry_max":"50ms"}]}`, recv.url, path)
	}
	wantStatus(t, "POST queued", n.do("POST", sourcesOf("acme"), opsToken, sink("bad")), http.StatusCreated)
	var old []string
	for i := range 3 {
		old = append(old, hookID(t, "hook", n.hook("acme", "queued", fmt.Sprintf(`{"old":%d}`, i))))
	}
	if !waitFor(5*time.Second, func() bool { return recv.failures() >= 3 }) {
		t.Fatalf("the failing receiver got %d attempts in 5s", recv.failures())
	}
	e := wantError(t, "DELETE queued", n.do("DELETE", sourceAt("acme", "queued"), opsToken, ""), http.StatusConflict, "source_has_deliveries")
	if e.Count == nil || *e.Count != 3 {
		t.Fatalf("DELETE queued: count %v, want 3 (%s)", e.Count, e.Message)
	}
	old = append(old, hookID(t, "the refused DELETE left the source serving", n.hook("acme", "queued", `{"old":3}`)))
	a := n.do("DELETE", sourceAt("acme", "queued")+"?deliveries=dead_letter", opsToken, "")
	wantStatus(t, "DELETE ?deliveries=dead_letter", a, http.StatusOK)
	var del struct {
		Deleted      string `json:"deleted"`
		DeadLettered int64  `json:"dead_lettered"`
	}
	decode(t, "DELETE", a, &del)
	if del.Deleted != "queued" || del.DeadLettered != 4 {
		t.Fatalf("DELETE ?deliveries=dead_letter: %s, want deleted queued, dead_lettered 4", a.body)
	}
	wantStatus(t, "re-create queued", n.do("POST", sourcesOf("acme"), opsToken, sink("good")), http.StatusCreated)
	dead := deadRows(t, n, "acme")
	for _, id := range old {
		if !slices.ContainsFunc(dead, func(r deliveryRow) bool { return r.EventID == id && r.Source == "queued" && r.Sink == "out" }) {
			t.Fatalf("hook %s is not among the dead letters %+v", id, dead)
		}
	}
	if len(dead) != 4 {
		t.Fatalf("%d dead letters, want the 4 hooks of the deleted source: %+v", len(dead), dead)
	}
	fresh := hookID(t, "a hook to the re-created source", n.hook("acme", "queued", `{"new":1}`))
	if !waitFor(5*time.Second, func() bool { return recv.delivered()[fresh] > 0 }) {
		t.Fatalf("the new source's hook %s did not reach the good receiver in 5s", fresh)
	}
	time.Sleep(300 * time.Millisecond) // room for a stale row to be (wrongly) delivered
	if got := recv.delivered(); len(got) != 1 {
		t.Fatalf("the good receiver got %v, want only the new hook %s: the re-created source did not start empty", got, fresh)
	}
	p.stop()
}

// "an update that omits the secret keeps the stored one": a PUT without
// verify.secret keeps verifying hooks signed with it, across kill -9;
// no answer ever shows the secret.
func TestSourceAPISecretKeptOnUpdate(t *testing.T) {
	const secret = "whsec-old-3f9a1c77e2"
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	spec := `"verify":{"type":"hmac","header":"X-Signature","algorithm":"sha256","encoding":"hex"%s}`
	a := n.do("POST", sourcesOf("acme"), opsToken, `{"name":"signed",`+fmt.Sprintf(spec, `,"secret":"`+secret+`"`)+`}`)
	wantStatus(t, "POST signed", a, http.StatusCreated)
	noSecret(t, "POST signed", a, secret)
	signed := func(what, key string, status int) {
		t.Helper()
		body := `{"at":"` + what + `"}`
		wantStatus(t, what, n.hook("acme", "signed", body, "X-Signature", hmacHex(key, body)), status)
	}
	signed("before the update", secret, http.StatusCreated)
	signed("a wrong key", "not-the-secret", http.StatusUnauthorized)

	a = n.do("PUT", sourceAt("acme", "signed"), opsToken, `{`+fmt.Sprintf(spec, "")+`,"max_body_bytes":4096}`)
	wantStatus(t, "PUT without the secret", a, http.StatusOK)
	noSecret(t, "PUT", a, secret)
	signed("right after the update", secret, http.StatusCreated)
	signed("a wrong key after the update", "not-the-secret", http.StatusUnauthorized)
	big := `{"pad":"` + strings.Repeat("x", 5000) + `"}`
	wantStatus(t, "a body over the updated max_body_bytes", n.hook("acme", "signed", big, "X-Signature", hmacHex(secret, big)), http.StatusRequestEntityTooLarge)

	p.kill9()
	p = n.serve(t)
	signed("after kill -9", secret, http.StatusCreated)
	noSecret(t, "GET after kill -9", n.do("GET", sourceAt("acme", "signed"), opsToken, ""), secret)
	noSecret(t, "list after kill -9", n.do("GET", sourcesOf("acme"), opsToken, ""), secret)
	p.stop()
}

// noSecret requires a 2xx whose body shows verify.secret as set and holds
// no trace of the secret.
func noSecret(t *testing.T, what string, a answer, secret string) {
	t.Helper()
	if a.status/100 != 2 || strings.Contains(string(a.body), secret) || strings.Contains(string(a.body), `"secret"`) {
		t.Fatalf("%s: %d %s: shows the secret, or failed", what, a.status, a.body)
	}
	if !strings.Contains(string(a.body), `"secrets_set":["verify.secret"]`) {
		t.Fatalf("%s: %s: want secrets_set [verify.secret]", what, a.body)
	}
}

// A tenant-scoped token (tenant:acme) cannot read or write globex's
// sources (403), and globex's source named under acme's path is the same
// 404 as an unknown name, for every method; nothing changes.
func TestSourceAPITenantScope(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	wantStatus(t, "POST globex's", n.do("POST", sourcesOf("globex"), opsToken, `{"name":"globex-src","verify":{"type":"none"}}`), http.StatusCreated)
	spec := `{"verify":{"type":"none"},"max_body_bytes":10}`
	for _, w := range []struct{ method, path, body string }{
		{"GET", sourcesOf("globex"), ""},
		{"POST", sourcesOf("globex"), `{"name":"sneaky","verify":{"type":"none"}}`},
		{"GET", sourceAt("globex", "globex-src"), ""},
		{"PUT", sourceAt("globex", "globex-src"), spec},
		{"DELETE", sourceAt("globex", "globex-src"), ""},
		{"DELETE", sourceAt("globex", "globex-src") + "?deliveries=dead_letter", ""},
	} {
		wantError(t, "tenant:acme "+w.method+" "+w.path, n.do(w.method, w.path, acmeToken, w.body), http.StatusForbidden, "forbidden")
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		body := ""
		if m == "PUT" {
			body = spec
		}
		got := n.do(m, sourceAt("acme", "globex-src"), acmeToken, body)
		unknown := n.do(m, sourceAt("acme", "no-such-src"), acmeToken, body)
		wantError(t, "tenant:acme "+m+" globex-src under acme", got, http.StatusNotFound, "not_found")
		if strings.ReplaceAll(string(got.body), "globex-src", "X") != strings.ReplaceAll(string(unknown.body), "no-such-src", "X") {
			t.Fatalf("%s: another tenant's source %s differs from an unknown one %s", m, got.body, unknown.body)
		}
	}
	var list struct {
		Sources []sourceAnswer `json:"sources"`
	}
	decode(t, "acme's list", n.do("GET", sourcesOf("acme"), acmeToken, ""), &list)
	if len(list.Sources) != 0 {
		t.Fatalf("acme's list shows %+v", list.Sources)
	}
	wantError(t, "GET sneaky", n.do("GET", sourceAt("globex", "sneaky"), opsToken, ""), http.StatusNotFound, "not_found")
	a := n.do("GET", sourceAt("globex", "globex-src"), opsToken, "")
	wantStatus(t, "GET globex-src", a, http.StatusOK)
	if strings.Contains(string(a.body), `"max_body_bytes"`) {
		t.Fatalf("globex-src was changed: %s", a.body)
	}
	hookID(t, "globex-src still serves", n.hook("globex", "globex-src", `{}`))
	p.stop()
}

// Acceptance 5: bad input is a 400 (413 for an oversized body) naming the
// field, and nothing is stored, before or after a restart.
func TestSourceAPIBadInput(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	wantStatus(t, "POST keep", n.do("POST", sourcesOf("acme"), opsToken, `{"name":"keep","verify":{"type":"none"}}`), http.StatusCreated)
	cases := badSourceInputs()
	for _, c := range cases {
		a := n.do(c.method, c.path, opsToken, c.body)
		var e apiError
		if json.Unmarshal(a.body, &e) != nil || a.status != c.status || (c.code != "" && e.Code != c.code) || e.Code == "" || !strings.Contains(e.Message, c.names) {
			t.Errorf("%s: %s %s %.300s\n  answered %d %.400s\n  want %d %s naming %q", c.what, c.method, c.path, c.body, a.status, a.body, c.status, c.code, c.names)
		}
	}
	checkNothingStored(t, n, cases)
	p.kill9()
	p = n.serve(t)
	checkNothingStored(t, n, cases)
	p.stop()
}

type badInput struct {
	what, method, path, body string
	status                   int
	code, names              string
	stored                   string // the name that must not exist afterwards
}

func badSourceInputs() []badInput {
	post := func(what, body, names, stored string) badInput {
		return badInput{what: what, method: "POST", path: sourcesOf("acme"), body: body, status: 400, code: "invalid_source", names: names, stored: stored}
	}
	put := func(what, body, names string) badInput {
		return badInput{what: what, method: "PUT", path: sourceAt("acme", "keep"), body: body, status: 400, code: "invalid_source", names: names, stored: "keep"}
	}
	huge := `{"name":"huge","verify":{"type":"none"},"x":"` + strings.Repeat("a", 1<<20) + `"}`
	return []badInput{
		post("unterminated JSON", `{"name":"bad-1","verify":{"type":"none"}`, "", "bad-1"),
		post("trailing comma", `{"name":"bad-2","verify":{"type":"none"},}`, "", "bad-2"),
		post("unquoted keys (YAML, not JSON)", `{name: bad-3, verify: {type: none}}`, "", "bad-3"),
		post("a YAML block body", "name: bad-4\nverify:\n  type: none\n", "", "bad-4"),
		post("single-quoted strings", `{'name':'bad-5','verify':{'type':'none'}}`, "", "bad-5"),
		post("two objects", `{"name":"bad-6","verify":{"type":"none"}} {"name":"bad-6b"}`, "", "bad-6"),
		post("an array", `[{"name":"bad-7","verify":{"type":"none"}}]`, "", "bad-7"),
		post("name a number", `{"name":7,"verify":{"type":"none"}}`, "name", "7"),
		post("trust_url_tenant a string", `{"name":"bad-8","verify":{"type":"none"},"trust_url_tenant":"yes"}`, "trust_url_tenant", "bad-8"),
		post("max_body_bytes a word", `{"name":"bad-9","verify":{"type":"none"},"max_body_bytes":"lots"}`, "max_body_bytes", "bad-9"),
		post("sinks an object", `{"name":"bad-10","verify":{"type":"none"},"sinks":{"type":"http"}}`, "sinks", "bad-10"),
		post("verify a string", `{"name":"bad-11","verify":"none"}`, "verify", "bad-11"),
		post("an unknown key", `{"name":"bad-12","verify":{"type":"none"},"colour":"red"}`, "colour", "bad-12"),
		post("an unknown verify key", `{"name":"bad-13","verify":{"type":"none","algo":"md5"}}`, "verify.algo", "bad-13"),
		post("an unknown sink key", `{"name":"bad-14","verify":{"type":"none"},"sinks":[{"type":"http","url":"https://x.example.com/","retries":3}]}`, "sinks[0].retries", "bad-14"),
		post("an unknown verify type", `{"name":"bad-15","verify":{"type":"md5sum"}}`, "verify.type", "bad-15"),
		post("a read-only key", `{"name":"bad-16","verify":{"type":"none"},"secrets_set":[]}`, "secrets_set", "bad-16"),
		post("an env: secret", `{"name":"bad-17","verify":{"type":"hmac","header":"X-Sig","secret":"env:HOME"}}`, "verify.secret", "bad-17"),
		post("name with upper case", `{"name":"Bad-18","verify":{"type":"none"}}`, "Bad-18", "Bad-18"),
		post("name with a slash", `{"name":"bad/19","verify":{"type":"none"}}`, "bad/19", "bad"),
		post("name starting with a dot", `{"name":".bad-20","verify":{"type":"none"}}`, ".bad-20", ".bad-20"),
		post("name of 64 characters", `{"name":"`+strings.Repeat("b", 64)+`","verify":{"type":"none"}}`, strings.Repeat("b", 64), strings.Repeat("b", 64)),
		post("an empty name", `{"name":"","verify":{"type":"none"}}`, "name", ""),
		post("tenant_id another tenant", `{"name":"bad-21","tenant_id":"globex","verify":{"type":"none"}}`, "tenant_id", "bad-21"),
		post("tenant_id outside the grammar", `{"name":"bad-22","tenant_id":"Glo/bex","verify":{"type":"none"}}`, "tenant_id", "bad-22"),
		{what: "oversized body", method: "POST", path: sourcesOf("acme"), body: huge, status: 413, code: "payload_too_large", names: "max_body_bytes", stored: "huge"},
		// A name outside the grammar in the path is a 400 naming it, before
		// any lookup (DESIGN.md §2.2; the code is the handler's choice).
		{what: "tenant outside the grammar", method: "POST", path: sourcesOf("Acme"), body: `{"name":"bad-23","verify":{"type":"none"}}`, status: 400, names: "Acme", stored: "bad-23"},
		{what: "GET sources of a tenant outside the grammar", method: "GET", path: sourcesOf("Acme"), status: 400, names: "Acme"},
		{what: "GET a source name outside the grammar", method: "GET", path: sourceAt("acme", "BAD"), status: 400, names: "BAD"},
		{what: "DELETE a source name outside the grammar", method: "DELETE", path: sourceAt("acme", "BAD"), status: 400, names: "BAD"},
		put("PUT renaming", `{"name":"other","verify":{"type":"none"}}`, "name"),
		put("PUT an unknown key", `{"verify":{"type":"none"},"colour":"red"}`, "colour"),
		put("PUT a wrong type", `{"verify":{"type":"none"},"max_body_bytes":[1]}`, "max_body_bytes"),
		put("PUT tenant_id another tenant", `{"verify":{"type":"none"},"tenant_id":"globex"}`, "tenant_id"),
		put("PUT malformed", `{"verify":{"type":"none"`, ""),
		{what: "PUT a name outside the grammar", method: "PUT", path: sourceAt("acme", "BAD"), body: `{"verify":{"type":"none"}}`, status: 400, names: "BAD", stored: "BAD"},
		{what: "a route with an unknown key", method: "POST", path: "/v1/tenants/acme/routes", body: `{"source_id":"keep","tokn":"auto"}`, status: 400, code: "invalid_route", names: "tokn"},
		{what: "a route with a wrong type", method: "POST", path: "/v1/tenants/acme/routes", body: `{"source_id":7}`, status: 400, code: "invalid_route", names: "source_id"},
		{what: "a route of another tenant", method: "POST", path: "/v1/tenants/acme/routes", body: `{"tenant_id":"globex","source_id":"keep"}`, status: 400, code: "invalid_route", names: "tenant_id"},
		{what: "a malformed route", method: "POST", path: "/v1/tenants/acme/routes", body: `{"source_id":"keep"`, status: 400, code: "invalid_route"},
	}
}

// checkNothingStored: no bad input left a source (keep is unchanged) or
// a route behind.
func checkNothingStored(t *testing.T, n *apiNode, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		if c.stored == "" || c.stored == "keep" || strings.ToLower(c.stored) != c.stored {
			continue
		}
		// A name outside the grammar cannot even be asked for (400
		// invalid_name); any other is not there (404).
		if a := n.do("GET", sourceAt("acme", c.stored), opsToken, ""); a.status != http.StatusNotFound && !(a.status == http.StatusBadRequest && strings.Contains(string(a.body), `"invalid_name"`)) {
			t.Errorf("%s: GET %s afterwards: %d %s, want 404 (or 400 invalid_name)", c.what, c.stored, a.status, a.body)
		}
	}
	var list struct {
		Sources []json.RawMessage `json:"sources"`
	}
	decode(t, "acme's sources", n.do("GET", sourcesOf("acme"), opsToken, ""), &list)
	if len(list.Sources) != 1 || !strings.Contains(string(list.Sources[0]), `"name":"keep"`) || strings.Contains(string(list.Sources[0]), "max_body_bytes") {
		t.Errorf("acme's sources after the bad input: %s, want keep alone, unchanged", list.Sources)
	}
	var routes struct {
		Routes []json.RawMessage `json:"routes"`
	}
	decode(t, "acme's routes", n.do("GET", "/v1/tenants/acme/routes", opsToken, ""), &routes)
	if len(routes.Routes) != 0 {
		t.Errorf("acme's routes after the bad input: %s", routes.Routes)
	}
}

// Acceptance 4: check-config accepts source_store: {type: persistent}
// and {type: redis} with a url (its own or redis.url), refuses a redis
// store without one or with a bad one, and an unknown key under
// source_store, each naming the key.
func TestCheckConfigSourceStore(t *testing.T) {
	n := newAPINode(t, "persistent", "", "")
	for _, c := range []struct{ store, names string }{
		{"redis", "source_store.url"},
		{"redis, url: \"http://127.0.0.1:6379/0\"", "source_store.url"},
		{"redis, url: \"redis://127.0.0.1:6379/0\", tick_ms: 5", "source_store.tick_ms"},
		{"redis, url: \"redis://127.0.0.1:6379/0\", namespace: \"a b\"", "source_store.namespace"},
		{"bogus", "source_store.type"},
		{"persistent, colour: red", "source_store.colour"},
		{"static, namespace: x", "source_store.namespace"},
	} {
		line := lineNaming(t, checkConfigLines(t, n.yaml(c.store, "", "")), c.names)
		t.Logf("source_store {type: %s}: %s", c.store, line)
	}
	for _, store := range []string{"persistent", "static", "redis, url: \"redis://127.0.0.1:6379/0\", namespace: \"x:\", tick_ms: 250"} {
		if err := writeFile(n.config, n.yaml(store, "", "")); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runBin(t, n.dir, "check-config", "-config", n.config); code != 0 {
			t.Fatalf("check-config with source_store {type: %s}: exit %d\n%s", store, code, stderr)
		}
	}
}

// "a created or updated source works immediately", for dispatch too
// (issue 15: "a changed sink URL or secret is used for the next attempt
// of every pending hook (sink ids are stable); a deleted source's runners
// stop"): a hook pending against a failing receiver goes to the new URL
// once a PUT moves the sink (same id); after a DELETE of another source
// with ?deliveries=dead_letter, its failing receiver hears no more.
func TestSourceAPIDispatchFollowsEdits(t *testing.T) {
	recv := newSinkRecorder(t)
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	spec := func(name, path string) string {
		return fmt.Sprintf(`{"name":%q,"verify":{"type":"none"},"sinks":[{"id":"out","type":"http","url":"%s/%s","allow_private":true,"max_attempts":1000,"retry_base":"20ms","retry_max":"50ms"}]}`, name, recv.url, path)
	}
	wantStatus(t, "POST moved", n.do("POST", sourcesOf("acme"), opsToken, spec("moved", "bad")), http.StatusCreated)
	pending := hookID(t, "a hook to moved", n.hook("acme", "moved", `{"pending":1}`))
	if !waitFor(5*time.Second, func() bool { return recv.failures() >= 3 }) {
		t.Fatalf("the failing receiver got %d attempts in 5s", recv.failures())
	}
	wantStatus(t, "PUT moved to the good URL", n.do("PUT", sourceAt("acme", "moved"), opsToken, spec("moved", "good")), http.StatusOK)
	if !waitFor(3*time.Second, func() bool { return recv.delivered()[pending] > 0 }) {
		t.Fatalf("3s after the PUT the pending hook %s has not reached the sink's new URL; the old one got %d attempts in all", pending, recv.failures())
	}

	wantStatus(t, "POST dropped", n.do("POST", sourcesOf("acme"), opsToken, spec("dropped", "bad")), http.StatusCreated)
	hookID(t, "a hook to dropped", n.hook("acme", "dropped", `{"pending":2}`))
	before := recv.failures()
	if !waitFor(5*time.Second, func() bool { return recv.failures() >= before+3 }) {
		t.Fatalf("the failing receiver got no attempts for dropped")
	}
	wantStatus(t, "DELETE dropped", n.do("DELETE", sourceAt("acme", "dropped")+"?deliveries=dead_letter", opsToken, ""), http.StatusOK)
	time.Sleep(200 * time.Millisecond) // an attempt in flight may finish
	after := recv.failures()
	time.Sleep(500 * time.Millisecond)
	if got := recv.failures(); got != after {
		t.Fatalf("the deleted source's sink got %d more attempts in 500ms after its DELETE", got-after)
	}
	p.stop()
}

// The seed's last sentence: a source that arrives without the durable-sink
// check (stored by this node while it ran wal.type: disk) keeps its place
// when the node runs wal.type: none, is named in the boot log, and is
// answered 503 at ingest until it is updated to have a durable sink.
func TestSourceAPIStoredSourceWithoutDurableSink(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	b.Queue(nil, x, "#")
	mqYAML := fmt.Sprintf("[{id: mq, type: rabbitmq, url: %q, exchange: %q}]", rabbittest.URL(), x)
	mq := fmt.Sprintf(`{"id":"mq","type":"rabbitmq","url":%q,"exchange":%q}`, rabbittest.URL(), x)
	n := newAPINode(t, "persistent", "", "    sinks: "+mqYAML+"\n")
	p := n.serve(t)
	wantStatus(t, "POST web-only under wal.type: disk", n.do("POST", sourcesOf("acme"), opsToken,
		`{"name":"web-only","verify":{"type":"none"},"sinks":[{"type":"http","url":"https://receiver.example.com/in"}]}`), http.StatusCreated)
	p.stop()
	if err := os.RemoveAll(n.walDir()); err != nil { // wal.type: none keeps no log
		t.Fatal(err)
	}
	writeConfig(t, n.testNode, n.yaml("persistent", "wal: {type: none}", "    sinks: "+mqYAML+"\n"))
	p = n.serve(t)
	a := n.hook("acme", "web-only", `{"x":1}`)
	if a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "no_durable_sink") {
		t.Fatalf("a hook to the stored source without a durable sink: %d %s, want 503 no_durable_sink", a.status, a.body)
	}
	hookID(t, "a hook to the config source", n.hook("acme", "cfgsrc", `{"x":1}`))
	wantStatus(t, "PUT web-only with a durable sink", n.do("PUT", sourceAt("acme", "web-only"), opsToken,
		`{"verify":{"type":"none"},"sinks":[`+mq+`]}`), http.StatusOK)
	hookID(t, "a hook to the updated source", n.hook("acme", "web-only", `{"x":2}`))
	p.stop()
	if log := p.stderr.String(); !strings.Contains(log, `stored source \"web-only\"`) || !strings.Contains(log, "fails today's rules") {
		t.Fatalf("the boot log does not name the stored source that fails today's rules:\n%s", log)
	}
}
