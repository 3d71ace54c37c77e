package main

// Helpers of the source and route API tests (source_api_test.go,
// third_product_test.go): a node whose config the test shapes, one HTTP
// client for both of its listeners, hmac signing, and a receiver that
// records what dispatch delivered.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// srcAPIYAML: the tenant-in-path resolver with a finite default rate
// limit, the ops (tenant:*) and acme-team (tenant:acme) tokens, the store
// under test, and one config source, cfgsrc. %[6]s is the store type,
// %[7]s more top-level keys, %[8]s more sources.
const srcAPIYAML = `node: {name: src-api, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*"]}
    - {name: acme-team, sha256: %[5]s, scopes: ["tenant:acme"]}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: %[6]s}
log: {level: warn, format: json}
%[7]s
sources:
  cfgsrc:
    verify: {type: none}
    trust_url_tenant: true
%[8]s`

// apiNode is a node under test and a client of both its listeners.
type apiNode struct {
	*testNode
	t *testing.T
	c *http.Client
}

// newAPINode writes srcAPIYAML with the store type and extras into a
// fresh directory and has check-config accept it.
func newAPINode(t *testing.T, store, top, sources string) *apiNode {
	t.Helper()
	n := &apiNode{testNode: newTestNode(t), t: t}
	writeConfig(t, n.testNode, n.yaml(store, top, sources))
	n.c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(n.c.CloseIdleConnections)
	return n
}

func (n *apiNode) yaml(store, top, sources string) string {
	return fmt.Sprintf(srcAPIYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), sha256Hex(acmeToken), store, top, sources)
}

// do sends method path to the admin listener with token (none when "")
// and body (none when "").
func (n *apiNode) do(method, path, token, body string) answer {
	n.t.Helper()
	a, err := n.tryDo(method, path, token, body)
	if err != nil {
		n.t.Fatal(err)
	}
	return a
}

// tryDo is do for goroutines other than the test's.
func (n *apiNode) tryDo(method, path, token, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+n.admin+path, rd)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return n.send(req)
}

func (n *apiNode) send(req *http.Request) (answer, error) {
	resp, err := n.c.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: cannot read the answer: %w", req.Method, req.URL.Path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// hookAt posts body to path on the public listener with the header
// fields hdr (name, value, name, value...).
func (n *apiNode) hookAt(path, body string, hdr ...string) answer {
	n.t.Helper()
	a, err := n.tryHookAt(path, body, hdr...)
	if err != nil {
		n.t.Fatal(err)
	}
	return a
}

func (n *apiNode) tryHookAt(path, body string, hdr ...string) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+n.listen+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return n.send(req)
}

// hook posts body to /webhooks/<tenant>/<source>.
func (n *apiNode) hook(tenant, source, body string, hdr ...string) answer {
	n.t.Helper()
	return n.hookAt("/webhooks/"+tenant+"/"+source, body, hdr...)
}

// hookID requires a 201 with an event id and returns the id.
func hookID(t *testing.T, what string, a answer) string {
	t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &v) != nil || !strings.HasPrefix(v.ID, "evt_") {
		t.Fatalf("%s: %d %s, want 201 with an event id", what, a.status, a.body)
	}
	return v.ID
}

// wantStatus fails the test unless a has the status.
func wantStatus(t *testing.T, what string, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %s, want %d", what, a.status, a.body, status)
	}
}

// apiError is the JSON error body of both listeners.
type apiError struct {
	Code    string `json:"error"`
	Message string `json:"message"`
	Count   *int64 `json:"count"`
}

// wantError requires the status and error code and returns the body.
func wantError(t *testing.T, what string, a answer, status int, code string) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(a.body, &e); err != nil || a.status != status || e.Code != code || e.Message == "" {
		t.Fatalf("%s: %d %s, want %d {\"error\":%q,\"message\":...}", what, a.status, a.body, status, code)
	}
	return e
}

// decode unmarshals a's body into v or fails the test.
func decode(t *testing.T, what string, a answer, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, a.body)
	}
}

// checkConfigLines runs check-config on yaml and returns its stderr
// lines, each without the "config: " prefix; it requires exit 78.
func checkConfigLines(t *testing.T, yaml string) []string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "check.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBin(t, dir, "check-config", "-config", path)
	if code != exitConfig {
		t.Fatalf("check-config: exit %d, want %d:\n%s\n%s", code, exitConfig, stderr, yaml)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		out = append(out, strings.TrimPrefix(l, "config: "))
	}
	return out
}

// lineNaming is the one line of lines that contains what.
func lineNaming(t *testing.T, lines []string, what string) string {
	t.Helper()
	var found []string
	for _, l := range lines {
		if strings.Contains(l, what) {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("check-config printed %d lines naming %q, want 1:\n%s", len(found), what, strings.Join(lines, "\n"))
	}
	return found[0]
}

// hmacHex is the hex HMAC-SHA256 of body under secret: the generic hmac
// verifier's default scheme (verify/providers.go).
func hmacHex(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// sinkRecorder is a webhook receiver: POST /good/... answers 204 and
// records the event id, anything else answers 500 and counts.
type sinkRecorder struct {
	url string
	mu  sync.Mutex
	ok  map[string]int // event id -> 2xx deliveries
	bad int
}

func newSinkRecorder(t *testing.T) *sinkRecorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &sinkRecorder{url: "http://" + ln.Addr().String(), ok: map[string]int{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *sinkRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !strings.HasPrefix(req.URL.Path, "/good") {
		r.bad++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.ok[req.Header.Get("X-Ankusa-Event-Id")]++
	w.WriteHeader(http.StatusNoContent)
}

func (r *sinkRecorder) delivered() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.ok))
	for k, v := range r.ok {
		out[k] = v
	}
	return out
}

func (r *sinkRecorder) failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// waitFor polls cond every 20 ms until it holds or within has passed.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// writeFile writes text to path, mode 0644.
func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
