package main

// The end-to-end test runs the stock ankusa binary with the example's
// ankusa.yaml (its addresses and data_dir replaced) and drives it through
// this program's functions as a SaaS backend would: mint URLs for two
// customers, post signed and badly signed hooks, read them back, revoke
// one, kill -9, restart, and find the revocation and the kept URL as they
// were; then the program's own command line.

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

const (
	// demoToken is the README's token: the sample config holds its SHA-256.
	demoToken = "mintedurls-demo-token-not-for-production"
	// testSecret is the SaaS's signing secret for the test's node.
	testSecret  = "whsec_dGhlLXNhYXMtc2lnbmluZy1zZWNyZXQtZm9yLXRlc3Rz"
	otherSecret = "whsec_c29tZW9uZS1lbHNlcy1zZWNyZXQtbm90LW91cnMtMQ=="
	sharedSrc   = "saas-events"
)

// node is the test's running appliance and the backend's handles on it.
type node struct {
	bin, cfg, dir string
	listen, admin string
	p             *served
	c             *Client
	hc            *http.Client
	s             *Signer
}

func TestEndToEnd(t *testing.T) {
	n := newNode(t)
	n.start(t)
	ctx := context.Background()
	checkSampleClaims(t, n)

	acme, globex := n.mint(t, "acme"), n.mint(t, "globex")
	if acme.ID == globex.ID || acme.Token == globex.Token {
		t.Fatalf("two mints gave the same route or token: %+v %+v", acme, globex)
	}
	acmeHook := n.postRead(t, acme, "globex", `{"type":"invoice.paid","customer":"acme"}`)
	globexHook := n.postRead(t, globex, "acme", `{"type":"invoice.paid","customer":"globex"}`)
	n.refused(t, acme)
	unknown := n.wantPost(t, "a token never minted", n.url("/webhooks/catch/"+strings.Repeat("a", len(acme.Token))), n.s, http.StatusNotFound)

	if err := n.c.Revoke(ctx, "acme", acme.ID); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "the revoked URL, at once", n.wantPost(t, "the revoked URL, at once", n.url(acme.URLPath), n.s, http.StatusNotFound), unknown)
	if err := n.c.Revoke(ctx, "acme", acme.ID); !IsNotFound(err) {
		t.Fatalf("revoking route %s again: %v, want a 404", acme.ID, err)
	}
	n.postRead(t, globex, "acme", `{"after":"acme was revoked"}`)
	if h, err := n.c.Hook(ctx, "acme", acmeHook); err != nil || h.TenantID != "acme" {
		t.Fatalf("acme's hook %s after its URL was revoked: %+v %v, want it still readable", acmeHook, h, err)
	}

	n.p.signal(syscall.SIGKILL)
	if code := n.p.wait(t, 30*time.Second); code != -1 {
		t.Fatalf("serve exited with %d after SIGKILL, want -1 (killed)", code)
	}
	n.start(t)
	sameAs(t, "the revoked URL after kill -9", n.wantPost(t, "the revoked URL after kill -9", n.url(acme.URLPath), n.s, http.StatusNotFound), unknown)
	n.postRead(t, globex, "acme", `{"after":"kill -9"}`)
	for tenant, id := range map[string]string{"acme": acmeHook, "globex": globexHook} {
		if h, err := n.c.Hook(ctx, tenant, id); err != nil || h.TenantID != tenant {
			t.Fatalf("hook %s of %s after kill -9: %+v %v", id, tenant, h, err)
		}
	}

	n.commandLine(t)
	n.p.signal(syscall.SIGTERM)
	if code := n.p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("serve exited with %d after SIGTERM, want 0:\n%s", code, n.p.out)
	}
}

// checkSampleClaims holds the sample config to what the README says of
// it: the token is tenant:* and nothing more, and the shared source is
// the config file's, which the API will not change.
func checkSampleClaims(t *testing.T, n *node) {
	t.Helper()
	ctx := context.Background()
	bad := &Client{Admin: n.c.Admin, Token: "not-the-token", HTTP: n.hc}
	if _, err := bad.Mint(ctx, "acme", sharedSrc); !isStatus(err, http.StatusUnauthorized) {
		t.Fatalf("mint with an unknown token: %v, want 401", err)
	}
	if err := n.c.do(ctx, http.MethodGet, "/v1/tenants", nil, http.StatusOK, nil); !isStatus(err, http.StatusForbidden) {
		t.Fatalf("GET /v1/tenants with the tenant:* token: %v, want 403 (it lacks tenants:read)", err)
	}
	err := n.c.do(ctx, http.MethodPut, tenantPath("default", "sources", sharedSrc), []byte(`{"verify":{"type":"none"}}`), http.StatusOK, nil)
	if e := (*APIError)(nil); !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != "source_from_config" {
		t.Fatalf("PUT the shared source: %v, want 409 source_from_config", err)
	}
}

// sameAs: a revoked URL's 404 is the unknown token's, so a prober cannot
// tell a revoked URL from one that never existed.
func sameAs(t *testing.T, what string, d, unknown *Delivery) {
	t.Helper()
	if !bytes.Equal(d.Body, unknown.Body) {
		t.Fatalf("%s: 404 %s, want the unknown token's %s", what, d.Body, unknown.Body)
	}
}

func isStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// mint mints a URL for tenant and checks the answer's shape.
func (n *node) mint(t *testing.T, tenant string) *Route {
	t.Helper()
	r, err := n.c.Mint(context.Background(), tenant, sharedSrc)
	if err != nil {
		t.Fatal(err)
	}
	if r.TenantID != tenant || r.SourceID != sharedSrc || r.ID == "" || len(r.Token) < 22 || r.URLPath != "/webhooks/catch/"+r.Token {
		t.Fatalf("mint for %s: %+v, want its tenant, source %s, a route id and a token of >= 128 bits at /webhooks/catch/<token>", tenant, r, sharedSrc)
	}
	return r
}

// postRead posts a signed body to r's URL (201), reads the hook back as
// r's tenant (verified, the body sent, never the token) and as other (the
// one 404), and returns its event id.
func (n *node) postRead(t *testing.T, r *Route, other, body string) string {
	t.Helper()
	ctx := context.Background()
	d := n.wantPost(t, "a signed hook to "+r.TenantID+"'s URL", n.url(r.URLPath), n.s, http.StatusCreated, body)
	h, err := n.c.Hook(ctx, r.TenantID, d.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != d.EventID || h.TenantID != r.TenantID || h.SourceID != sharedSrc || h.Body != body ||
		!h.Verification.Verified || h.Verification.Verifier != "standardwebhooks" {
		t.Fatalf("hook %s reads back as %+v; want tenant %s, source %s, verified by standardwebhooks, body %s", d.EventID, h, r.TenantID, sharedSrc, body)
	}
	raw, err := n.c.HookJSON(ctx, r.TenantID, d.EventID)
	if err != nil || bytes.Contains(raw, []byte(r.Token)) {
		t.Fatalf("hook %s as JSON: %v; it must not hold its URL's token:\n%s", d.EventID, err, raw)
	}
	if _, err := n.c.Hook(ctx, other, d.EventID); !IsNotFound(err) {
		t.Fatalf("%s's hook %s read as %s: %v, want the one 404", r.TenantID, d.EventID, other, err)
	}
	return d.EventID
}

// refused: a hook to a live URL without a good signature is 401 however
// it is wrong.
func (n *node) refused(t *testing.T, r *Route) {
	t.Helper()
	url, body := n.url(r.URLPath), []byte(`{"forged":true}`)
	other, err := NewSigner(otherSecret)
	if err != nil {
		t.Fatal(err)
	}
	n.wantPost(t, "an unsigned hook", url, nil, http.StatusUnauthorized)
	n.wantPost(t, "a hook signed with another secret", url, other, http.StatusUnauthorized)
	stale, err := NewRequest(context.Background(), url, n.s, body, time.Now().Add(-10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := NewRequest(context.Background(), url, n.s, body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tampered.Header.Set("Webhook-Signature", n.s.Signature(tampered.Header.Get("Webhook-Id"), time.Now(), []byte(`{"forged":false}`)))
	for what, req := range map[string]*http.Request{"a hook signed 10 minutes ago": stale, "a body other than the one signed": tampered} {
		d, err := Send(n.hc, req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d.Status != http.StatusUnauthorized {
			t.Fatalf("%s: %d %s, want 401", what, d.Status, d.Body)
		}
	}
}

// wantPost posts body (default {}) to url signed by s (nil: unsigned) and
// requires the status want.
func (n *node) wantPost(t *testing.T, what, url string, s *Signer, want int, body ...string) *Delivery {
	t.Helper()
	b := []byte(`{}`)
	if len(body) > 0 {
		b = []byte(body[0])
	}
	d, err := Post(context.Background(), n.hc, url, s, b)
	if err != nil {
		t.Fatalf("%s: POST %s: %v", what, url, err)
	}
	if d.Status != want {
		t.Fatalf("%s: POST %s: %d %s, want %d", what, url, d.Status, d.Body, want)
	}
	return d
}

func (n *node) url(path string) string { return "http://" + n.listen + path }

// newNode builds the stock binary and writes the sample config with the
// test's addresses and data_dir, each replaced exactly once.
func newNode(t *testing.T) *node {
	t.Helper()
	n := &node{dir: t.TempDir(), hc: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(n.hc.CloseIdleConnections)
	n.bin = buildAnkusa(t)
	sample, err := os.ReadFile("ankusa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n.listen, n.admin = freeAddr(t), freeAddr(t)
	cfg := string(sample)
	for _, r := range [][2]string{
		{"data_dir: ./data", "data_dir: " + filepath.Join(n.dir, "data")},
		{"\nlisten: 127.0.0.1:8080", "\nlisten: " + n.listen},
		{"\n  listen: 127.0.0.1:9090", "\n  listen: " + n.admin},
		{"level: info", "level: warn"},
	} {
		if strings.Count(cfg, r[0]) != 1 {
			t.Fatalf("ankusa.yaml holds %q %d times, want once (the test replaces it)", r[0], strings.Count(cfg, r[0]))
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	n.cfg = filepath.Join(n.dir, "ankusa.yaml")
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if n.s, err = NewSigner(testSecret); err != nil {
		t.Fatal(err)
	}
	n.c = &Client{Admin: "http://" + n.admin, Token: demoToken, HTTP: n.hc}
	checkConfig(t, n)
	return n
}

// checkConfig: the sample checks with the stock binary once the secret is
// set, and not without it (exit 78 naming the variable).
func checkConfig(t *testing.T, n *node) {
	t.Helper()
	sample, err := filepath.Abs("ankusa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  []string
		code int
		want string
	}{
		{[]string{"MINTEDURLS_SECRET=" + testSecret}, 0, "config ok"},
		{nil, 78, "sources.saas-events.verify.secret: cannot resolve secret: environment variable MINTEDURLS_SECRET is not set"},
		{[]string{"MINTEDURLS_SECRET=whsec_!!"}, 78, "whsec_ followed by base64"},
	} {
		cmd := exec.Command(n.bin, "check-config", "-config", sample)
		cmd.Dir, cmd.Env = n.dir, append(environWithout("MINTEDURLS_SECRET"), tc.env...)
		out, err := cmd.CombinedOutput()
		if _, exit := err.(*exec.ExitError); err != nil && !exit {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Fatalf("check-config %s with %q: exit %d, want %d with %q:\n%s", sample, tc.env, code, tc.code, tc.want, out)
		}
	}
}

func environWithout(key string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, key+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// start serves the config and waits for /readyz.
func (n *node) start(t *testing.T) {
	t.Helper()
	n.p = startServe(t, n.bin, n.dir, n.cfg, "MINTEDURLS_SECRET="+testSecret)
	waitReady(t, n.p, n.admin)
}

// buildAnkusa builds the stock binary into a temporary directory, with
// the race detector when the tests of cmd/ankusa would use it.
func buildAnkusa(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ankusa")
	args := []string{"build", "-o", bin}
	if os.Getenv("ANKUSA_TEST_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "github.com/ankusa/ankusa/cmd/ankusa")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("cannot build ankusa (go %s): %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// served is a running `serve`.
type served struct {
	cmd  *exec.Cmd
	out  *child.Buffer
	done chan struct{}
}

func startServe(t *testing.T, bin, dir, cfg string, env ...string) *served {
	t.Helper()
	p := &served{out: &child.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "-config", cfg)
	p.cmd.Dir, p.cmd.Env = dir, append(environWithout("MINTEDURLS_SECRET"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start serve: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *served) signal(sig os.Signal) { _ = p.cmd.Process.Signal(sig) }

// wait returns the exit code (-1: killed by a signal), or fails the test
// if the process has not exited within timeout.
func (p *served) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("serve did not exit within %s:\n%s", timeout, p.out)
		return 0
	}
}

// waitReady polls /readyz on the admin listener until it answers 200.
func waitReady(t *testing.T, p *served, admin string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("serve exited with %d before it was ready:\n%s", p.cmd.ProcessState.ExitCode(), p.out)
		default:
		}
		resp, err := client.Get("http://" + admin + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	t.Fatalf("/readyz on %s did not answer 200 within 15s:\n%s", admin, p.out)
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
