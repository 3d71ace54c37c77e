package main

// on_verify_failure end to end on the real listener: reject, accept_flag
// under tenant routing, and the quarantine pen (held, not delivered until
// released; release with the current secret or forced; drop; survives a
// restart), plus the quarantine bucket against the tenant's own rate
// limit. Signatures come from stripe-go's own test signer.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

const (
	stripeSecretOld = "whsec_verifyModesOld0123456789abcdef"
	stripeSecretNew = "whsec_verifyModesNew9876543210fedcba"
)

// verifyModesYAML: %[1]s data_dir, %[2]s listen, %[3]s admin, %[4]s the
// ops token's digest, %[5]s the recorder's address, %[6]s the stripe
// secret of the sources.
const verifyModesYAML = `node: {name: edge-verify, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*"]}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
  tenants: {limited: {rate: 0.001, burst: 3}}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_age: 200ms}
log: {level: warn, format: json}
sources:
  strict:
    verify: {type: stripe, secret: "%[6]s"}
    sinks: [{id: rec, type: http, url: "http://%[5]s/strict", allow_private: true, format: envelope}]
  flag:
    verify: {type: stripe, secret: "%[6]s"}
    on_verify_failure: accept_flag
    sinks: [{id: rec, type: http, url: "http://%[5]s/flag", allow_private: true, format: envelope}]
  pen:
    verify: {type: stripe, secret: "%[6]s"}
    on_verify_failure: quarantine
    sinks: [{id: rec, type: http, url: "http://%[5]s/pen", allow_private: true, format: envelope}]
  flood:
    verify: {type: stripe, secret: "%[6]s"}
    on_verify_failure: quarantine
    quarantine: {rate: 0.001, burst: 5}
`

// delivery is what the recorder saw of one delivered hook.
type delivery struct {
	path, tenant string
	flagged      string // the x-ankusa-verification-flagged header
	verified     bool   // the envelope's verification.verified
	envFlagged   bool   // the envelope's verification.flagged
	body         []byte // the envelope's body, decoded
}

// recorder is a customer's service taking envelope-format deliveries.
type recorder struct {
	addr string
	mu   sync.Mutex
	got  map[string]delivery // by event id
	bad  []string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{addr: ln.Addr().String(), got: map[string]delivery{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var env struct {
		ID           string `json:"id"`
		TenantID     string `json:"tenant_id"`
		Body         string `json:"body"`
		Verification struct {
			Verified, Flagged bool
		} `json:"verification"`
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := json.Unmarshal(raw, &env); err != nil {
		r.bad = append(r.bad, fmt.Sprintf("%s: not an envelope: %v", req.URL.Path, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if env.ID != req.Header.Get("x-ankusa-event-id") || env.TenantID != req.Header.Get("x-ankusa-tenant") {
		r.bad = append(r.bad, fmt.Sprintf("%s: headers name %s/%s, envelope %s/%s", req.URL.Path,
			req.Header.Get("x-ankusa-tenant"), req.Header.Get("x-ankusa-event-id"), env.TenantID, env.ID))
	}
	r.got[env.ID] = delivery{path: req.URL.Path, tenant: env.TenantID, flagged: req.Header.Get("x-ankusa-verification-flagged"),
		verified: env.Verification.Verified, envFlagged: env.Verification.Flagged, body: []byte(env.Body)}
	w.WriteHeader(http.StatusNoContent)
}

func (r *recorder) get(id string) (delivery, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.got[id]
	return d, ok
}

// wait waits for id's delivery.
func (r *recorder) wait(t *testing.T, id string) delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if d, ok := r.get(id); ok {
			return d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("hook %s was not delivered within 15s", id)
	return delivery{}
}

// hookAnswer is the edge's answer to one POST.
type hookAnswer struct {
	status     int
	id         string
	code       string // error code
	retryAfter string
	body       string
}

// postSigned posts body to /webhooks/<tenant>/<source>, signed with
// secret by stripe-go (no signature header when secret is "").
func postSigned(t *testing.T, listen, tenant, source, secret string, body []byte) hookAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/webhooks/"+tenant+"/"+source, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: time.Now()})
		req.Header.Set("Stripe-Signature", sp.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(b, &v)
	return hookAnswer{status: resp.StatusCode, id: v.ID, code: v.Error, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
}

func stripeBody(i int) []byte {
	return []byte(fmt.Sprintf(`{"id":"evt_test_%d","object":"event","type":"invoice.paid","data":{"object":{"amount":%d}}}`, i, 100+i))
}

// adminDo sends method path with the ops token and decodes a JSON answer.
func (a *adminClient) do(method, path string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, "http://"+a.addr+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+opsToken)
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &v); err != nil {
			a.t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, v
}

// penIDs lists the tenant's quarantined hooks: event id → failure.
func penIDs(t *testing.T, c *adminClient, tenant string) map[string]string {
	t.Helper()
	st, v := c.do(http.MethodGet, "/v1/tenants/"+tenant+"/quarantine")
	if st != http.StatusOK {
		t.Fatalf("GET quarantine of %s: %d %v", tenant, st, v)
	}
	out := map[string]string{}
	for _, h := range v["hooks"].([]any) {
		m := h.(map[string]any)
		out[m["event_id"].(string)] = m["failure"].(string)
	}
	return out
}

func newVerifyModesNode(t *testing.T, rec *recorder, secret string) *testNode {
	return newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(verifyModesYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), rec.addr, secret)
	})
}

func TestVerifyFailureModes(t *testing.T) {
	rec := newRecorder(t)
	n := newVerifyModesNode(t, rec, stripeSecretOld)
	p := n.serve(t)
	c := newAdminClient(t, n.admin)

	// reject: nothing stored, 401; the valid hook is delivered verified.
	for name, secret := range map[string]string{"wrong secret": stripeSecretNew, "no signature": ""} {
		if a := postSigned(t, n.listen, "acme", "strict", secret, stripeBody(1)); a.status != http.StatusUnauthorized || a.code != "signature_invalid" {
			t.Errorf("reject, %s: %d %s, want 401 signature_invalid", name, a.status, a.body)
		}
	}
	ok := postSigned(t, n.listen, "acme", "strict", stripeSecretOld, stripeBody(2))
	if ok.status != http.StatusCreated {
		t.Fatalf("a valid hook: %d %s", ok.status, ok.body)
	}
	if d := rec.wait(t, ok.id); !d.verified || d.envFlagged || d.flagged != "" || d.tenant != "acme" {
		t.Errorf("valid hook delivered as %+v, want verified and not flagged", d)
	}

	// accept_flag under tenant routing: stored in the URL's tenant,
	// delivered flagged, with the header. A hook that failed verification
	// never creates a tenant (invented names must not use up
	// tenants.max): globex exists once a verified hook made it.
	if a := postSigned(t, n.listen, "newco", "flag", stripeSecretNew, stripeBody(3)); a.status != http.StatusUnauthorized || a.code != "signature_invalid" {
		t.Errorf("accept_flag for a tenant that does not exist yet: %d %s, want 401 signature_invalid", a.status, a.body)
	}
	if a := postSigned(t, n.listen, "globex", "flag", stripeSecretOld, stripeBody(4)); a.status != http.StatusCreated {
		t.Fatalf("a verified hook of globex: %d %s", a.status, a.body)
	}
	fl := postSigned(t, n.listen, "globex", "flag", stripeSecretNew, stripeBody(3))
	if fl.status != http.StatusCreated || fl.id == "" {
		t.Fatalf("accept_flag, bad signature: %d %s, want 201", fl.status, fl.body)
	}
	if d := rec.wait(t, fl.id); d.tenant != "globex" || !d.envFlagged || d.verified || d.flagged != "true" {
		t.Errorf("flagged hook delivered as %+v, want tenant globex, verification.flagged and the header", d)
	}
	if h := c.get(hookPath("globex", fl.id), opsToken); h.status != http.StatusOK || !strings.Contains(string(h.body), `"flagged":true`) {
		t.Errorf("the flagged hook fetched under globex: %d %s", h.status, h.body)
	}

	// quarantine: 202, held, not delivered.
	// q[0] is signed with the secret the source will have after a
	// rotation; q[1] and q[2] with one it never has.
	var q []string
	for i, secret := range []string{stripeSecretNew, "whsec_neverConfigured", "whsec_neverConfigured"} {
		a := postSigned(t, n.listen, "acme", "pen", secret, stripeBody(10+i))
		if a.status != http.StatusAccepted || !strings.Contains(a.body, `"quarantined":true`) || a.id == "" {
			t.Fatalf("quarantine %d: %d %s, want 202 quarantined", i, a.status, a.body)
		}
		q = append(q, a.id)
	}
	missing := postSigned(t, n.listen, "acme", "pen", "", stripeBody(13))
	if missing.status != http.StatusAccepted {
		t.Fatalf("quarantine without a signature: %d %s", missing.status, missing.body)
	}
	time.Sleep(1500 * time.Millisecond) // long enough for a delivery (the valid ones took ms)
	for _, id := range append(q, missing.id) {
		if _, got := rec.get(id); got {
			t.Errorf("quarantined hook %s was delivered before its release", id)
		}
	}
	pen := penIDs(t, c, "acme")
	if len(pen) != 4 || pen[q[0]] != "mismatch" || pen[missing.id] != "missing" {
		t.Fatalf("the pen holds %v, want the 4 hooks (mismatch, missing)", pen)
	}
	if other := penIDs(t, c, "globex"); len(other) != 0 {
		t.Errorf("globex's pen shows %v", other)
	}
	// A release that does not verify with the current secret stays.
	if st, v := c.do(http.MethodPost, "/v1/tenants/acme/quarantine/"+q[0]+"/release"); st != http.StatusConflict || v["error"] != "signature_invalid" {
		t.Errorf("release without the right secret: %d %v, want 409 signature_invalid", st, v)
	}
	// Forced: delivered, flagged.
	if st, v := c.do(http.MethodPost, "/v1/tenants/acme/quarantine/"+q[1]+"/release?force=true"); st != http.StatusOK || v["verified"] != false || v["deliveries"] != 1.0 {
		t.Errorf("forced release: %d %v", st, v)
	}
	if d := rec.wait(t, q[1]); !d.envFlagged || d.verified || d.flagged != "true" {
		t.Errorf("forced release delivered as %+v, want flagged", d)
	}
	// Dropped: gone, never delivered; another tenant cannot touch it.
	if st, v := c.do(http.MethodDelete, "/v1/tenants/globex/quarantine/"+q[2]); st != http.StatusNotFound {
		t.Errorf("drop through another tenant: %d %v, want the one 404", st, v)
	}
	if st, _ := c.do(http.MethodDelete, "/v1/tenants/acme/quarantine/"+q[2]); st != http.StatusNoContent {
		t.Errorf("drop: %d, want 204", st)
	}
	if st, _ := c.do(http.MethodDelete, "/v1/tenants/acme/quarantine/"+q[2]); st != http.StatusNotFound {
		t.Errorf("drop again: %d, want 404", st)
	}
	if st, v := c.do(http.MethodPost, "/v1/tenants/acme/quarantine/drop"); st != http.StatusBadRequest {
		t.Errorf("drop all without a filter or all=true: %d %v, want 400", st, v)
	}

	// The pen survives a restart; with the rotated secret configured, q[0]
	// verifies (at the time it was received) and is delivered verified.
	p.stop()
	rotateSecrets(t, n)
	p = n.serve(t)
	pen = penIDs(t, c, "acme")
	if len(pen) != 2 || pen[q[0]] == "" || pen[missing.id] == "" {
		t.Fatalf("after a restart the pen holds %v, want %s and %s", pen, q[0], missing.id)
	}
	if st, v := c.do(http.MethodPost, "/v1/tenants/acme/quarantine/"+q[0]+"/release"); st != http.StatusOK || v["verified"] != true {
		t.Fatalf("release with the rotated secret: %d %v, want 200 verified", st, v)
	}
	if d := rec.wait(t, q[0]); !d.verified || d.envFlagged || d.flagged != "" || string(d.body) != string(stripeBody(10)) {
		t.Errorf("released hook delivered as %+v, want verified, not flagged, its body", d)
	}
	if st, v := c.do(http.MethodPost, "/v1/tenants/acme/quarantine/drop?all=true"); st != http.StatusOK || v["dropped"] != 1.0 {
		t.Errorf("drop all: %d %v, want 1 dropped", st, v)
	}
	if pen := penIDs(t, c, "acme"); len(pen) != 0 {
		t.Errorf("after drop all the pen holds %v", pen)
	}
	if _, got := rec.get(q[2]); got {
		t.Error("the dropped hook was delivered")
	}
	metrics := c.get("/metrics", "")
	for _, want := range []string{`ankusa_quarantine_hooks 0`, `ankusa_quarantine_bytes 0`, `ankusa_quarantine_released_total 1`, `ankusa_quarantine_dropped_total 1`} {
		if !strings.Contains(string(metrics.body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	p.stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bad) > 0 {
		t.Errorf("the recorder saw bad deliveries: %v", rec.bad)
	}
}

// TestQuarantineBucket: a flood of bad signatures to one source is 429
// once the source's quarantine bucket is empty, and it spends none of the
// tenant's own rate limit.
func TestQuarantineBucket(t *testing.T) {
	rec := newRecorder(t)
	n := newVerifyModesNode(t, rec, stripeSecretOld)
	p := n.serve(t)
	defer p.stop()
	// The tenant exists (a hook that fails verification never creates
	// one): its first verified hook spends one of its burst of 3.
	if a := postSigned(t, n.listen, "limited", "flood", stripeSecretOld, stripeBody(99)); a.status != http.StatusCreated {
		t.Fatalf("the first verified hook of tenant limited: %d %s", a.status, a.body)
	}
	held, limited := 0, 0
	for i := 0; i < 20; i++ {
		a := postSigned(t, n.listen, "limited", "flood", "whsec_forged", stripeBody(i))
		switch {
		case a.status == http.StatusAccepted:
			held++
		case a.status == http.StatusTooManyRequests && a.code == "rate_limited":
			limited++
			if s, err := strconv.Atoi(a.retryAfter); err != nil || s < 1 {
				t.Errorf("429 with Retry-After %q", a.retryAfter)
			}
		default:
			t.Errorf("flood hook %d: %d %s", i, a.status, a.body)
		}
	}
	if held != 5 || limited != 15 {
		t.Errorf("flood of 20 against a burst of 5: %d held, %d limited", held, limited)
	}
	// The tenant's burst is as the verified hook left it: 2 more pass,
	// the next meets the tenant's own limit.
	for i := 0; i < 2; i++ {
		if a := postSigned(t, n.listen, "limited", "flood", stripeSecretOld, stripeBody(100+i)); a.status != http.StatusCreated {
			t.Fatalf("verified hook %d of tenant limited after the flood: %d %s, want 201", i, a.status, a.body)
		}
	}
	a := postSigned(t, n.listen, "limited", "flood", stripeSecretOld, stripeBody(200))
	if a.status != http.StatusTooManyRequests || a.code != "rate_limited" || a.retryAfter == "" {
		t.Errorf("the 4th verified hook past the tenant's burst of 3: %d %s, want 429 rate_limited", a.status, a.body)
	}
	// Another tenant on the same source is not limited by either.
	if a := postSigned(t, n.listen, "acme", "flood", stripeSecretOld, stripeBody(300)); a.status != http.StatusCreated {
		t.Errorf("another tenant: %d %s", a.status, a.body)
	}
	metrics := string(newAdminClient(t, n.admin).get("/metrics", "").body)
	for _, want := range []string{
		`ankusa_verifications_total{source="flood",outcome="mismatch"} 20`,
		`ankusa_verifications_total{source="flood",outcome="ok"} 4`, // the 4th limited one was refused at step 7, before its body,
		`ankusa_quarantined_total{source="flood"} 5`,
		`ankusa_edge_quarantine_limited_total 15`,
		`ankusa_quarantine_hooks 5`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// rotateSecrets gives every source the new secret and keeps the old one
// (both accepted while both are configured).
func rotateSecrets(t *testing.T, n *testNode) {
	t.Helper()
	data, err := os.ReadFile(n.config)
	if err != nil {
		t.Fatal(err)
	}
	rotated := strings.ReplaceAll(string(data), `secret: "`+stripeSecretOld+`"`, `secret: "`+stripeSecretNew+`", secrets: ["`+stripeSecretOld+`"]`)
	if err := os.WriteFile(n.config, []byte(rotated), 0o644); err != nil {
		t.Fatal(err)
	}
}
