package main

// The end-to-end test drives the example's binary as an operator would:
// build it, check the sample config, serve, post hooks over HTTP, stop it
// with SIGTERM and read the WAL it left.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/child"
	"github.com/ankusa/ankusa/wal"
)

// tokWrongTenant files the acme-owned source under globex: the router's
// tenant binding makes it a 404 although the token is known.
const tokWrongTenant = "tok_globex_billing_9e0d7c6b5a"

// e2eYAML is the served config: %s are data_dir, listen, admin.listen and
// the tokens file.
const e2eYAML = `node: {name: e2e, data_dir: %s}
listen: %s
admin: {listen: %s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver:
  type: opaquetoken
  prefix: [webhooks, catch]
  options:
    token.` + tokAcme + `: stripe@acme
    token.` + tokGlobex + `: stripe@globex
    token.` + tokWrongTenant + `: acme-billing@globex
    tokens_file: %s
rate_limits:
  default: {rate: 1000, burst: 1000}
wal: {type: disk, max_file_bytes: 1MiB}
log: {level: warn, format: json}
sources:
  stripe:
    verify: {type: none}
    trust_url_tenant: true
  acme-billing:
    tenant_id: acme
    verify: {type: none}
`

func TestEndToEnd(t *testing.T) {
	bin := buildExample(t)
	dir := t.TempDir()

	// The sample config checks with the example's binary (the stock
	// binary does not know route_resolver.type: opaquetoken).
	sample, err := filepath.Abs("ankusa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, dir, "check-config", "-config", sample); code != 0 || !strings.Contains(out, "config ok") {
		t.Fatalf("check-config -config %s: exit %d, want 0:\n%s", sample, code, out)
	}

	// check-config builds the resolver, so its options are checked there as
	// in serve: a tokens_file it cannot read exits 78 naming the option.
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, fmt.Appendf(nil, e2eYAML, "./data", "127.0.0.1:1", "127.0.0.1:2", filepath.Join(dir, "missing.json")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, dir, "check-config", "-config", badCfg); code != 78 ||
		!strings.Contains(out, "route_resolver.options.tokens_file") || !strings.Contains(out, "missing.json") {
		t.Fatalf("check-config with a missing tokens_file: exit %d, want 78 naming route_resolver.options.tokens_file:\n%s", code, out)
	}

	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"`+tokFile+`": "acme-billing"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	listen, admin := freeAddr(t), freeAddr(t)
	cfgPath := filepath.Join(dir, "ankusa.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, e2eYAML, dataDir, listen, admin, tokens), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, dir, "check-config", "-config", cfgPath); code != 0 {
		t.Fatalf("check-config of the test's own config: exit %d:\n%s", code, out)
	}

	p := startServe(t, bin, dir, cfgPath)
	waitReady(t, p, admin)

	// Two known tokens: one names the tenant, one leaves it to the source.
	sent := []struct {
		app, token, source, tenant, body string
	}{
		{"app_42", tokAcme, "stripe", "acme", `{"id":"evt_1","type":"invoice.paid"}`},
		{"App-7.x", tokFile, "acme-billing", "acme", `{"id":"evt_2"}`},
	}
	ids := make([]string, len(sent))
	for i, s := range sent {
		ids[i] = post201(t, listen, "/webhooks/catch/"+s.app+"/"+s.token, s.body)
	}

	// An unknown token is the same 404, byte for byte, as any other: a probe
	// cannot tell a wrong token from a wrong URL shape.
	notFound := []string{
		"/webhooks/catch/app_42/tok_unknown_0000000000",
		"/webhooks/catch/app_42/" + strings.ToUpper(tokAcme),
		"/webhooks/catch/app_42/" + tokWrongTenant,
		"/webhooks/catch/" + tokAcme,
		"/webhooks/catch/app_42/" + tokAcme + "/x",
		"/webhooks/stripe",
		"/webhooks/catch/../catch/app_42/" + tokAcme,
		"/webhooks/catch/app_42%2F" + tokAcme,
		"/webhooks/catch//" + tokAcme,
		"/webhooks/catch/app:42/" + tokAcme,
	}
	var first []byte
	for _, target := range notFound {
		raw := rawPost(t, listen, target, `{"id":"evt_x"}`)
		if !bytes.HasPrefix(raw, []byte("HTTP/1.1 404 ")) {
			t.Errorf("POST %s: want a 404, got %q", target, raw)
			continue
		}
		if first == nil {
			first = raw
			continue
		}
		if !bytes.Equal(raw, first) {
			t.Errorf("POST %s: the 404 differs from the unknown token's:\n got %q\nwant %q", target, raw, first)
		}
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("serve exited with %d after SIGTERM, want 0:\n%s", code, p.out)
	}

	// The WAL holds exactly the two hooks, each with its token's source and
	// tenant and the URL's app id, and never the token.
	var got []envelope.Envelope
	err = wal.ReadDir(vfs.Default, filepath.Join(dataDir, "wal"), func(r *wal.Record) error {
		if r.Kind != envelope.KindEnvelope {
			return nil
		}
		var e envelope.Envelope
		if _, err := envelope.Decode(r.Payload, &e); err != nil {
			return fmt.Errorf("%s offset %d: %w", r.File, r.Offset, err)
		}
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("cannot read the WAL: %v", err)
	}
	if len(got) != len(sent) {
		t.Fatalf("the WAL has %d hooks, want %d (the 404s must store nothing)", len(got), len(sent))
	}
	for i, s := range sent {
		e := got[i]
		if e.ID.String() != ids[i] || e.SourceID != s.source || e.TenantID != s.tenant || string(e.Body) != s.body {
			t.Errorf("hook %d: id %s source %q tenant %q body %q; want %s %q %q %q", i, e.ID, e.SourceID, e.TenantID, e.Body, ids[i], s.source, s.tenant, s.body)
		}
		if len(e.RouteParams) != 1 || e.RouteParams[0] != (envelope.Param{Key: paramAppID, Value: s.app}) {
			t.Errorf("hook %d: route params %+v, want only app_id=%s", i, e.RouteParams, s.app)
		}
		for _, h := range e.Headers {
			if strings.Contains(h.Value, s.token) {
				t.Errorf("hook %d: header %s carries the token", i, h.Name)
			}
		}
	}
}

// buildExample builds this package's binary into a temporary directory,
// with the race detector when the tests of cmd/ankusa would use it.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "opaquetoken")
	args := []string{"build", "-o", bin}
	if os.Getenv("ANKUSA_TEST_RACE") != "" {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("cannot build the example (go %s): %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// runBin runs the binary to completion and returns its exit code and
// combined output.
func runBin(t *testing.T, bin, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in 30s:\n%s", strings.Join(args, " "), out)
	}
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("cannot run %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// served is a running `serve`.
type served struct {
	cmd  *exec.Cmd
	out  *child.Buffer
	done chan struct{}
}

func startServe(t *testing.T, bin, dir, cfg string) *served {
	t.Helper()
	p := &served{out: &child.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "-config", cfg)
	p.cmd.Dir = dir
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

// post201 posts body to path and requires a 201 with an event id, which it
// returns.
func post201(t *testing.T, listen, path, body string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Post("http://"+listen+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &v) != nil || len(v.ID) != envelope.IDTextLen {
		t.Fatalf("POST %s: %d %s, want 201 with an event id", path, resp.StatusCode, b)
	}
	return v.ID
}

// rawPost sends one request on a fresh connection and returns every byte
// of the answer up to the server's close (a 404 always closes).
func rawPost(t *testing.T, listen, target, body string) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatalf("POST %s: %v", target, err)
	}
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("POST %s: the server did not close after answering: %v (read %q)", target, err, raw)
	}
	return raw
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
