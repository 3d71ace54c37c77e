package main

// The provider catalogue from the outside: one node whose sources use real
// presets by name, driven as GitHub, Stripe, Slack and Dropbox drive it
// (signed hooks, subscription handshakes), with sinks whose CEL filters
// route by event type and body, and the check-config and presets commands
// an operator runs.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The sources' secrets, as each provider hands them out.
const (
	catGitHubSecret  = "It's a Secret to Everybody"
	catStripeSecret  = "whsec_test_catalogue_5f1d2c9b8a7e6d4c"
	catSlackSecret   = "8f742231b10e8888abcd99yyyzzz85a5"
	catDropboxSecret = "dropbox-app-secret-41c7e0"
)

// catalogueYAML: the path resolver (POST /hooks/<source>, tenant
// "default"), the ops token, and four sources selecting presets by name;
// github and stripe dedupe by their preset's delivery id (key: auto).
// %[1]s data_dir, %[2]s listen, %[3]s admin, %[4]s the ops digest,
// %[5]s the receiver's address.
const catalogueYAML = `node: {name: edge-catalogue, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*"]}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: path, prefix: [hooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_age: 200ms}
log: {level: warn, format: json}
sources:
  github:
    verify: {type: github, secret: "` + catGitHubSecret + `"}
    dedupe: {key: auto}
    sinks:
      - {id: a, type: http, url: "http://%[5]s/a", secret: "` + secretA + `", allow_private: true, format: raw,
         filter: "event_type == 'push'"}
      - {id: b, type: http, url: "http://%[5]s/b", secret: "` + secretB + `", allow_private: true, format: raw,
         filter: "event_type == 'pull_request' && body.action == 'opened'"}
  stripe:
    verify: {type: stripe, secret: "` + catStripeSecret + `"}
    dedupe: {key: auto}
    sinks:
      - {id: s, type: http, url: "http://%[5]s/s", secret: "` + secretA + `", allow_private: true, format: raw,
         filter: "event_type.startsWith('invoice.') && body.data.object.amount_due > 1000"}
  slack:
    verify: {type: slack, secret: "` + catSlackSecret + `"}
  dropbox:
    verify: {type: dropbox, secret: "` + catDropboxSecret + `"}
`

// catDelivery is one request the receiver got.
type catDelivery struct {
	sink   string // the path's one segment: a, b or s
	header http.Header
	body   []byte
}

// catReceiver records every delivery and answers 204 to those whose
// Standard Webhooks signature verifies with the sink's secret.
type catReceiver struct {
	addr string
	wh   map[string]*standardwebhooks.Webhook

	mu  sync.Mutex
	got []catDelivery
	bad []string
}

func newCatReceiver(t *testing.T) *catReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &catReceiver{addr: ln.Addr().String(), wh: map[string]*standardwebhooks.Webhook{}}
	for sink, secret := range map[string]string{"a": secretA, "b": secretB, "s": secretA} {
		if r.wh[sink], err = standardwebhooks.NewWebhook(secret); err != nil {
			t.Fatal(err)
		}
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *catReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	sink := strings.TrimPrefix(req.URL.Path, "/")
	r.mu.Lock()
	defer r.mu.Unlock()
	wh := r.wh[sink]
	switch {
	case wh == nil:
		r.bad = append(r.bad, "delivery to unknown path "+req.URL.Path)
	case wh.Verify(body, req.Header) != nil:
		r.bad = append(r.bad, fmt.Sprintf("sink %s: the Standard Webhooks signature does not verify: %v", sink, wh.Verify(body, req.Header)))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.got = append(r.got, catDelivery{sink: sink, header: req.Header.Clone(), body: body})
	w.WriteHeader(http.StatusNoContent)
}

func (r *catReceiver) deliveries() ([]catDelivery, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got), slices.Clone(r.bad)
}

// providerHook is one request as a provider sends it.
type providerHook struct {
	method, path string
	header       [][2]string // in wire order, after Host and Content-Length
	body         []byte
}

// exchange sends h on a fresh connection that it closes, and returns the
// answer's raw bytes (the node closes the connection after it), so a test
// can compare two answers byte for byte.
func exchange(t *testing.T, listen string, h providerHook) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", h.method, h.path, listen)
	if h.method != http.MethodGet {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(h.body))
	}
	for _, kv := range h.header {
		fmt.Fprintf(&b, "%s: %s\r\n", kv[0], kv[1])
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(h.body)
	conn, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatalf("cannot connect to %s: %v", listen, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(b.Bytes()); err != nil {
		t.Fatalf("%s %s: cannot send: %v", h.method, h.path, err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("%s %s: cannot read the answer: %v (read %q)", h.method, h.path, err, raw)
	}
	return raw
}

// wireAnswer is a parsed raw answer.
type wireAnswer struct {
	status int
	header http.Header
	body   []byte
}

// send is exchange with the answer parsed.
func send(t *testing.T, listen string, h providerHook) wireAnswer {
	t.Helper()
	raw := exchange(t, listen, h)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("%s %s: the answer does not parse: %v\n%q", h.method, h.path, err, raw)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: cannot read the answer's body: %v", h.method, h.path, err)
	}
	return wireAnswer{status: resp.StatusCode, header: resp.Header, body: body}
}

// githubHook is a hook signed as GitHub signs it: X-Hub-Signature-256 is
// sha256= and the hex HMAC-SHA256 of the body under the webhook's secret
// (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).
func githubHook(event, deliveryID, body, secret string) providerHook {
	return providerHook{method: http.MethodPost, path: "/hooks/github", body: []byte(body), header: [][2]string{
		{"User-Agent", "GitHub-Hookshot/4f5a1c2"},
		{"Content-Type", "application/json"},
		{"X-GitHub-Event", event},
		{"X-GitHub-Delivery", deliveryID},
		{"X-GitHub-Hook-ID", "292430182"},
		{"X-Hub-Signature-256", "sha256=" + hmacHex(secret, body)},
	}}
}

// stripeHook is a hook signed as Stripe signs it: Stripe-Signature is
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">, keyed by the
// whole whsec_ secret (https://docs.stripe.com/webhooks#verify-manually).
func stripeHook(body string, at time.Time) providerHook {
	ts := strconv.FormatInt(at.Unix(), 10)
	return providerHook{method: http.MethodPost, path: "/hooks/stripe", body: []byte(body), header: [][2]string{
		{"User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		{"Content-Type", "application/json; charset=utf-8"},
		{"Stripe-Signature", "t=" + ts + ",v1=" + hmacHex(catStripeSecret, ts+"."+body)},
	}}
}

// slackHook is a request signed as Slack signs it: X-Slack-Signature is
// v0= and the hex HMAC-SHA256 of "v0:<timestamp>:<body>" under the app's
// signing secret
// (https://api.slack.com/authentication/verifying-requests-from-slack).
func slackHook(body, secret string, at time.Time) providerHook {
	ts := strconv.FormatInt(at.Unix(), 10)
	return providerHook{method: http.MethodPost, path: "/hooks/slack", body: []byte(body), header: [][2]string{
		{"User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)"},
		{"Content-Type", "application/json"},
		{"X-Slack-Request-Timestamp", ts},
		{"X-Slack-Signature", "v0=" + hmacHex(secret, "v0:"+ts+":"+body)},
	}}
}

// wantCreated requires a 201 with an event id and returns the id.
func wantCreated(t *testing.T, what string, a wireAnswer) string {
	t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &v) != nil || !strings.HasPrefix(v.ID, "evt_") {
		t.Fatalf("%s: %d %s, want 201 with an event id", what, a.status, a.body)
	}
	return v.ID
}

// wantSignatureInvalid requires the edge's 401 signature_invalid.
func wantSignatureInvalid(t *testing.T, what string, a wireAnswer) {
	t.Helper()
	const want = `{"error":"signature_invalid","message":"the webhook signature does not verify"}`
	var v any
	if a.status != http.StatusUnauthorized || a.header.Get("Content-Type") != "application/json" ||
		json.Unmarshal(a.body, &v) != nil || string(bytes.TrimSpace(a.body)) != want {
		t.Fatalf("%s: %d (Content-Type %q) %s, want 401 application/json %s", what, a.status, a.header.Get("Content-Type"), a.body, want)
	}
}

// The GitHub payloads: a push, a pull request opened and one closed,
// trimmed to the fields a filter reads and a few beside them.
const (
	ghPush     = `{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","after":"0000000000000000000000000000000000000000","repository":{"id":1296269,"full_name":"octocat/Hello-World"},"pusher":{"name":"octocat"}}`
	ghPROpened = `{"action":"opened","number":1347,"pull_request":{"id":1,"number":1347,"state":"open","title":"Amazing new feature"},"repository":{"id":1296269,"full_name":"octocat/Hello-World"}}`
	ghPRClosed = `{"action":"closed","number":1346,"pull_request":{"id":2,"number":1346,"state":"closed","merged":false,"title":"Old idea"},"repository":{"id":1296269,"full_name":"octocat/Hello-World"}}`
)

// stripeEvent is a Stripe event of type typ whose object has amount_due
// (invoices) or amount (charges).
func stripeEvent(id, typ, object string) string {
	return `{"id":"` + id + `","object":"event","api_version":"2024-06-20","created":1733400000,"type":"` + typ +
		`","livemode":false,"pending_webhooks":1,"data":{"object":` + object + `}}`
}

// dateLine is the Date header of a raw answer: the one part of two
// answers that may differ.
var dateLine = regexp.MustCompile(`(?mi)^Date: [^\r\n]*\r\n`)

func TestCatalogue(t *testing.T) {
	start := time.Now()
	recv := newCatReceiver(t)
	n := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(catalogueYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), recv.addr)
	})
	p := n.serve(t)
	admin := newAdminClient(t, n.admin)

	// 1. GitHub: three events, each to the sink whose filter matches it.
	push := githubHook("push", "a1b2c3d4-0001-11ef-9e1a-1f2e3d4c5b6a", ghPush, catGitHubSecret)
	opened := githubHook("pull_request", "a1b2c3d4-0002-11ef-9e1a-1f2e3d4c5b6a", ghPROpened, catGitHubSecret)
	closed := githubHook("pull_request", "a1b2c3d4-0003-11ef-9e1a-1f2e3d4c5b6a", ghPRClosed, catGitHubSecret)
	pushID := wantCreated(t, "github push", send(t, n.listen, push))
	openedID := wantCreated(t, "github pull_request opened", send(t, n.listen, opened))
	closedID := wantCreated(t, "github pull_request closed", send(t, n.listen, closed))
	// GitHub's "Redeliver" sends the same X-GitHub-Delivery: the preset's
	// delivery id makes it the push's duplicate, not a second push.
	if a := send(t, n.listen, push); a.status != http.StatusOK || string(a.body) != `{"id":"`+pushID+`","duplicate":true}` {
		t.Fatalf("github push redelivered: %d %s, want 200 {\"id\":%q,\"duplicate\":true}", a.status, a.body, pushID)
	}

	// 2. Stripe: only an invoice event over 1000 passes the filter.
	now := time.Now()
	inv5000 := stripeHook(stripeEvent("evt_1QcatA5000", "invoice.paid", `{"id":"in_1","object":"invoice","amount_due":5000,"currency":"usd"}`), now)
	inv500 := stripeHook(stripeEvent("evt_1QcatB0500", "invoice.paid", `{"id":"in_2","object":"invoice","amount_due":500,"currency":"usd"}`), now)
	charge := stripeHook(stripeEvent("evt_1QcatC9999", "charge.succeeded", `{"id":"ch_1","object":"charge","amount":9999,"currency":"usd"}`), now)
	inv5000ID := wantCreated(t, "stripe invoice.paid 5000", send(t, n.listen, inv5000))
	inv500ID := wantCreated(t, "stripe invoice.paid 500", send(t, n.listen, inv500))
	chargeID := wantCreated(t, "stripe charge.succeeded", send(t, n.listen, charge))

	// 3. Handshakes. Slack's url_verification, as its documentation shows
	// it (https://api.slack.com/events/url_verification), signed: the
	// challenge comes back as {"challenge":...}.
	const slackChallenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
	slackBody := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"` + slackChallenge + `","type":"url_verification"}`
	a := send(t, n.listen, slackHook(slackBody, catSlackSecret, time.Now()))
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" || string(a.body) != `{"challenge":"`+slackChallenge+`"}` {
		t.Fatalf("signed Slack url_verification: %d (Content-Type %q) %q, want 200 application/json {\"challenge\":%q}", a.status, a.header.Get("Content-Type"), a.body, slackChallenge)
	}
	// The same request signed with another secret is refused, and its
	// challenge is not echoed.
	forged := send(t, n.listen, slackHook(slackBody, "not-the-signing-secret", time.Now()))
	wantSignatureInvalid(t, "forged Slack url_verification", forged)
	if bytes.Contains(forged.body, []byte(slackChallenge)) {
		t.Fatalf("forged Slack url_verification: the refusal echoes the challenge: %s", forged.body)
	}
	// Dropbox's verification request
	// (https://www.dropbox.com/developers/reference/webhooks): GET
	// ?challenge=X, answered with X as text.
	a = send(t, n.listen, providerHook{method: http.MethodGet, path: "/hooks/dropbox?challenge=abc", header: [][2]string{{"User-Agent", "DropboxWebhooks/1.0"}}})
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "text/plain" || a.header.Get("X-Content-Type-Options") != "nosniff" || string(a.body) != "abc" {
		t.Fatalf("Dropbox GET ?challenge=abc: %d (Content-Type %q, X-Content-Type-Options %q) %q, want 200 text/plain nosniff \"abc\"",
			a.status, a.header.Get("Content-Type"), a.header.Get("X-Content-Type-Options"), a.body)
	}
	// A GET on a source without a GET handshake is any GET's 405: the
	// same bytes as a GET to a URL that names nothing, Date aside.
	getGitHub := exchange(t, n.listen, providerHook{method: http.MethodGet, path: "/hooks/github?challenge=abc"})
	getNowhere := exchange(t, n.listen, providerHook{method: http.MethodGet, path: "/no/such/url?challenge=abc"})
	if !bytes.HasPrefix(getGitHub, []byte("HTTP/1.1 405 ")) {
		t.Fatalf("GET /hooks/github: want a 405, got\n%s", getGitHub)
	}
	if g, u := dateLine.ReplaceAll(getGitHub, nil), dateLine.ReplaceAll(getNowhere, nil); !bytes.Equal(g, u) {
		t.Fatalf("GET /hooks/github and GET of an unknown URL differ (Date aside):\n%q\n%q", g, u)
	}

	// 4. A GitHub hook signed with another secret.
	wrong := send(t, n.listen, githubHook("push", "a1b2c3d4-0004-11ef-9e1a-1f2e3d4c5b6a", ghPush, "not-the-webhook-secret"))
	wantSignatureInvalid(t, "github push with a wrong signature", wrong)
	if !bytes.Equal(wrong.body, forged.body) {
		t.Fatalf("the two 401s differ: github %s, slack %s", wrong.body, forged.body)
	}

	// Deliveries: exactly the push to a, the opened PR to b, the 5000
	// invoice to s; the filtered-out hooks are counted per sink.
	want := []struct {
		sink, source, id, eventType string
		body                        []byte
	}{
		{"a", "github", pushID, "push", push.body},
		{"b", "github", openedID, "pull_request", opened.body},
		{"s", "stripe", inv5000ID, "invoice.paid", inv5000.body},
	}
	wantMetrics := []string{
		`ankusa_filter_skipped_total{source="github",sink="a"} 2`, // opened, closed
		`ankusa_filter_skipped_total{source="github",sink="b"} 2`, // push, closed
		`ankusa_filter_skipped_total{source="stripe",sink="s"} 2`, // invoice 500, charge
		`ankusa_filter_errors_total{source="github",sink="a"} 0`,
		`ankusa_filter_errors_total{source="github",sink="b"} 0`,
		`ankusa_filter_errors_total{source="stripe",sink="s"} 0`,
		`ankusa_dispatch_attempts_total{sink="github/a",outcome="delivered"} 1`,
		`ankusa_dispatch_attempts_total{sink="github/b",outcome="delivered"} 1`,
		`ankusa_dispatch_attempts_total{sink="stripe/s",outcome="delivered"} 1`,
		`ankusa_dispatch_backlog{state="pending"} 0`,
		`ankusa_dispatch_backlog{state="in_flight"} 0`,
		`ankusa_dispatch_backlog{state="dead"} 0`,
		`ankusa_edge_handshakes_total{kind="slack",outcome="answered"} 1`,
		`ankusa_edge_handshakes_total{kind="dropbox",outcome="answered"} 1`,
	}
	var got []catDelivery
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		var bad []string
		got, bad = recv.deliveries()
		if len(bad) > 0 {
			t.Fatalf("bad deliveries: %s", strings.Join(bad, "\n"))
		}
		text := string(admin.get("/metrics", "").body)
		missing = missing[:0]
		for _, m := range wantMetrics {
			if !strings.Contains(text, m+"\n") {
				missing = append(missing, m)
			}
		}
		if len(got) > len(want) {
			t.Fatalf("%d deliveries, want exactly %d: %v", len(got), len(want), sinksOf(got))
		}
		if len(got) == len(want) && len(missing) == 0 {
			break
		}
		if p.exited() {
			t.Fatalf("the node exited with %d:\n%s", p.state.ExitCode(), p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d deliveries (want %d); /metrics lacks %q\nnode log:\n%s", len(got), len(want), missing, tail(p.stderr.String(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every sink's one delivery is done and nothing is pending: a late
	// delivery would have to come from a row that does not exist.
	if len(got) != len(want) {
		t.Fatalf("%d deliveries, want exactly %d: %v", len(got), len(want), sinksOf(got))
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(d catDelivery) bool { return d.sink == w.sink })
		if i < 0 {
			t.Fatalf("sink %s got nothing; deliveries went to %v", w.sink, sinksOf(got))
		}
		d := got[i]
		if id := d.header.Get("x-ankusa-event-id"); id != w.id {
			t.Errorf("sink %s got hook %s, want %s", w.sink, id, w.id)
		}
		if et := d.header.Values("x-ankusa-event-type"); !slices.Equal(et, []string{w.eventType}) {
			t.Errorf("sink %s: x-ankusa-event-type %q, want [%q]", w.sink, et, w.eventType)
		}
		if src, tn := d.header.Get("x-ankusa-source"), d.header.Get("x-ankusa-tenant"); src != w.source || tn != "default" {
			t.Errorf("sink %s: x-ankusa-source %q x-ankusa-tenant %q, want %q and \"default\"", w.sink, src, tn, w.source)
		}
		if !bytes.Equal(d.body, w.body) {
			t.Errorf("sink %s: the raw body delivered is not the one sent:\n%s\nwant\n%s", w.sink, d.body, w.body)
		}
	}

	// The admin fetch shows each stored hook's event type.
	for _, h := range []struct{ id, source, eventType, dedupe string }{
		{pushID, "github", "push", "a1b2c3d4-0001-11ef-9e1a-1f2e3d4c5b6a"},
		{openedID, "github", "pull_request", "a1b2c3d4-0002-11ef-9e1a-1f2e3d4c5b6a"},
		{closedID, "github", "pull_request", "a1b2c3d4-0003-11ef-9e1a-1f2e3d4c5b6a"},
		{inv5000ID, "stripe", "invoice.paid", "evt_1QcatA5000"},
		{inv500ID, "stripe", "invoice.paid", "evt_1QcatB0500"},
		{chargeID, "stripe", "charge.succeeded", "evt_1QcatC9999"},
	} {
		checkEventTypeFetch(t, admin, h.id, h.source, h.eventType, h.dedupe)
	}
	p.stop()

	// Handshakes and refused hooks were not committed: the log holds the
	// six hooks and nothing else.
	log := readWAL(t, n.walDir())
	var stored []string
	for _, h := range log.hooks {
		stored = append(stored, h.env.ID.String()+" "+h.env.SourceID+" "+h.env.EventType)
	}
	wantStored := []string{
		pushID + " github push", openedID + " github pull_request", closedID + " github pull_request",
		inv5000ID + " stripe invoice.paid", inv500ID + " stripe invoice.paid", chargeID + " stripe charge.succeeded",
	}
	if !slices.Equal(stored, wantStored) {
		t.Fatalf("the log holds\n%s\nwant\n%s", strings.Join(stored, "\n"), strings.Join(wantStored, "\n"))
	}

	// 5. What an operator runs.
	checkCatalogueConfigErrors(t, recv.addr)
	checkPresetsCommand(t)
	t.Logf("TestCatalogue took %v", time.Since(start).Round(time.Millisecond))
}

func sinksOf(ds []catDelivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.sink+":"+d.header.Get("x-ankusa-event-id"))
	}
	return out
}

// checkEventTypeFetch fetches hook id of tenant default (the path
// resolver's) until it is readable and requires its JSON form to carry
// the source, the verifier's verdict, the preset's dedupe id and the
// event type.
func checkEventTypeFetch(t *testing.T, c *adminClient, id, source, eventType, dedupeKey string) {
	t.Helper()
	path := hookPath("default", id)
	var a answer
	for deadline := time.Now().Add(10 * time.Second); ; {
		a = c.get(path, opsToken)
		if a.status == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var h struct {
		ID           string `json:"id"`
		TenantID     string `json:"tenant_id"`
		SourceID     string `json:"source_id"`
		Verification struct {
			Verifier string `json:"verifier"`
			Verified bool   `json:"verified"`
			Flagged  bool   `json:"flagged"`
		} `json:"verification"`
		DedupeKey string  `json:"dedupe_key"`
		EventType *string `json:"event_type"`
	}
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d (Content-Type %q) %s, want 200 application/json", path, a.status, a.header.Get("Content-Type"), a.body)
	}
	if err := json.Unmarshal(a.body, &h); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, a.body)
	}
	switch {
	case h.ID != id || h.TenantID != "default" || h.SourceID != source:
		t.Fatalf("GET %s: id %q tenant %q source %q, want %s default %s", path, h.ID, h.TenantID, h.SourceID, id, source)
	case h.Verification.Verifier != source || !h.Verification.Verified || h.Verification.Flagged:
		t.Fatalf("GET %s: verification %+v, want verifier %q, verified, not flagged", path, h.Verification, source)
	case h.DedupeKey != dedupeKey:
		t.Fatalf("GET %s: dedupe_key %q, want %q", path, h.DedupeKey, dedupeKey)
	case h.EventType == nil:
		t.Fatalf("GET %s: no \"event_type\" in the JSON form:\n%s", path, a.body)
	case *h.EventType != eventType:
		t.Fatalf("GET %s: event_type %q, want %q", path, *h.EventType, eventType)
	}
}

// checkCatalogueConfigErrors runs check-config on two broken variants of
// the catalogue's config: each fails naming the key at fault.
func checkCatalogueConfigErrors(t *testing.T, recvAddr string) {
	t.Helper()
	dir := t.TempDir()
	base := fmt.Sprintf(catalogueYAML, filepath.Join(dir, "data"), "127.0.0.1:1", "127.0.0.1:2", sha256Hex(opsToken), recvAddr)
	for _, c := range []struct {
		name, old, new string
		// want: what stderr's one line holds (one problem, one line: the
		// dedupe key that relies on the verifier is not a second one).
		want []string
	}{
		{"a misspelt variable in a filter", `filter: "event_type == 'push'"`, `filter: "evnt_type == 'x'"`,
			[]string{"config: sources.github.sinks[0].filter: ", "undeclared reference to 'evnt_type'"}},
		{"an unknown preset", `verify: {type: github, `, `verify: {type: nosuchprovider, `,
			[]string{`config: sources.github.verify.type: unknown verifier "nosuchprovider" (`, "`ankusa presets` lists them)"}},
	} {
		if strings.Count(base, c.old) != 1 {
			t.Fatalf("%s: the config does not hold %q once", c.name, c.old)
		}
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(base, c.old, c.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runBin(t, dir, "check-config", "-config", path)
		if code != exitConfig || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("check-config with %s: exit %d, stdout %q, stderr:\n%s\nwant exit %d and one line on stderr", c.name, code, stdout, stderr, exitConfig)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Fatalf("check-config with %s: stderr does not hold %q:\n%s", c.name, w, stderr)
			}
		}
	}
}

// presetJSON is what the tests read of a preset in `ankusa presets
// --format json`.
type presetJSON struct {
	Name      string `json:"name"`
	Family    string `json:"family"`
	Docs      string `json:"docs"`
	EventType string `json:"event_type"`
	Handshake string `json:"handshake"`
}

// checkPresetsCommand requires `ankusa presets` to list the catalogue as a
// table and as JSON, the same presets in the same order.
func checkPresetsCommand(t *testing.T) {
	t.Helper()
	code, table, stderr := runBin(t, t.TempDir(), "presets")
	if code != 0 || stderr != "" {
		t.Fatalf("ankusa presets: exit %d, stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if f := strings.Fields(lines[0]); !slices.Equal(f, []string{"NAME", "FAMILY", "HEADERS"}) {
		t.Fatalf("ankusa presets: header line %q, want NAME FAMILY HEADERS", lines[0])
	}
	rows := map[string]string{}
	var names []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("ankusa presets: row %q has no family", l)
		}
		rows[f[0]] = strings.Join(f[1:], " ")
		names = append(names, f[0])
	}
	if len(names) < 80 || len(rows) != len(names) {
		t.Fatalf("ankusa presets: %d rows (%d distinct names), want at least 80 distinct", len(names), len(rows))
	}
	for name, want := range map[string]string{
		"github":  "hmac X-Hub-Signature-256, X-GitHub-Delivery",
		"stripe":  "hmac Stripe-Signature",
		"slack":   "hmac X-Slack-Signature, X-Slack-Request-Timestamp",
		"dropbox": "hmac X-Dropbox-Signature",
	} {
		if rows[name] != want {
			t.Errorf("ankusa presets: row %s is %q, want %q", name, rows[name], want)
		}
	}

	code, out, stderr := runBin(t, t.TempDir(), "presets", "--format", "json")
	if code != 0 || stderr != "" {
		t.Fatalf("ankusa presets --format json: exit %d, stderr:\n%s", code, stderr)
	}
	var ps []presetJSON
	if err := json.Unmarshal([]byte(out), &ps); err != nil {
		t.Fatalf("ankusa presets --format json does not parse: %v\n%s", err, tail(out, 500))
	}
	var jsonNames []string
	for _, p := range ps {
		jsonNames = append(jsonNames, p.Name)
		if !strings.HasPrefix(p.Docs, "https://") || p.Family == "" {
			t.Errorf("ankusa presets --format json: %s has family %q docs %q", p.Name, p.Family, p.Docs)
		}
	}
	if !slices.Equal(jsonNames, names) {
		t.Fatalf("ankusa presets --format json lists %d presets, the table %d, or in another order", len(jsonNames), len(names))
	}
	for _, w := range []struct{ name, eventType, handshake string }{
		{"github", "header:X-GitHub-Event", ""}, {"stripe", "json:type", ""},
		{"slack", "json:event.type", "slack"}, {"dropbox", "", "dropbox"},
	} {
		i := slices.IndexFunc(ps, func(p presetJSON) bool { return p.Name == w.name })
		if i < 0 || ps[i].EventType != w.eventType || ps[i].Handshake != w.handshake {
			t.Errorf("ankusa presets --format json: %s (index %d) lacks event_type %q handshake %q", w.name, i, w.eventType, w.handshake)
		}
	}
}
