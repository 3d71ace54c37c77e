package main

// A node with admin tokens, a raw-wire hook sender and a client of the
// admin API's hook fetch: what an operator and a provider do by hand.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The admin tokens of adminNodeYAML: opsToken holds tenant:*, acmeToken
// holds tenant:acme. The config holds only their SHA-256.
const (
	opsToken  = "ankusa-test-ops-7f3c0d"
	acmeToken = "ankusa-test-acme-19b2e4"
)

// adminNodeYAML is nodeYAML's routing and sources, with admin tokens, a
// body limit that lets a few hooks fill more than one segment block, and
// segment.max_age as the one knob the tests turn.
const adminNodeYAML = `node: {name: edge-admin-test, data_dir: %s}
listen: %s
admin:
  listen: %s
  tokens:
    - {name: ops, sha256: %s, scopes: ["tenant:*"]}
    - {name: acme-team, sha256: %s, scopes: ["tenant:acme"]}
limits: {max_body_bytes: 256KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 1MiB}
segment: {max_age: %s}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
  acme-billing:
    tenant_id: acme
    verify: {type: none}
`

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// newAdminNode writes a config with admin tokens and segment.max_age into
// a fresh directory and checks it.
func newAdminNode(t *testing.T, maxAge string) *testNode {
	t.Helper()
	dir := t.TempDir()
	n := &testNode{
		dir:     dir,
		config:  filepath.Join(dir, "ankusa.yaml"),
		dataDir: filepath.Join(dir, "data"),
		listen:  freeAddr(t),
		admin:   freeAddr(t),
	}
	setMaxAge(t, n, maxAge)
	if code, _, stderr := runBin(t, dir, "check-config", "-config", n.config); code != 0 {
		t.Fatalf("the test's own config does not check (exit %d):\n%s", code, stderr)
	}
	return n
}

// setMaxAge rewrites n's config with segment.max_age = maxAge; it takes
// effect at the next serve. The ops digest is written in upper case, as
// some tools print it.
func setMaxAge(t *testing.T, n *testNode, maxAge string) {
	t.Helper()
	yaml := fmt.Sprintf(adminNodeYAML, n.dataDir, n.listen, n.admin,
		strings.ToUpper(sha256Hex(opsToken)), sha256Hex(acmeToken), maxAge)
	if err := os.WriteFile(n.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sealedSegment is one sealed segment file, as its name describes it.
type sealedSegment struct {
	path        string
	first, last uint64
}

// sealedSegments lists the sealed segment files of n, by first seq.
func sealedSegments(t *testing.T, n *testNode) []sealedSegment {
	t.Helper()
	dir := filepath.Join(n.dataDir, "segments")
	names, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var segs []sealedSegment
	for _, e := range names {
		first, last, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".seg"), "-")
		if !ok || !strings.HasSuffix(e.Name(), ".seg") {
			continue
		}
		f, err1 := strconv.ParseUint(first, 10, 64)
		l, err2 := strconv.ParseUint(last, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("segment file %s: name is not <first seq>-<last seq>.seg", e.Name())
		}
		segs = append(segs, sealedSegment{path: filepath.Join(dir, e.Name()), first: f, last: l})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs
}

// waitSealed waits until the sealed segments of n reach seq, and returns them.
func waitSealed(t *testing.T, n *testNode, p *proc, seq uint64) []sealedSegment {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		segs := sealedSegments(t, n)
		if len(segs) > 0 && segs[len(segs)-1].last >= seq {
			return segs
		}
		if p.exited() {
			t.Fatalf("ankusa exited with %d while the test waited for seq %d to be sealed:\n%s", p.state.ExitCode(), seq, p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("seq %d was not sealed into %s within 15s (segments: %v)", seq, filepath.Join(n.dataDir, "segments"), segs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sent is one hook as a provider sends it, and what the node answered.
type sent struct {
	tenant, source string
	headers        [][2]string // after Host and Content-Length, in wire order
	body           []byte

	id         string    // from the 201
	start, end time.Time // around the request
	seq        uint64    // the seq it must have: the tests send one at a time
	json       string    // its JSON form as first fetched
}

// wireHeaders is every header field the request carried, in wire order.
func (s *sent) wireHeaders(listen string) [][2]string {
	return append([][2]string{{"Host", listen}, {"Content-Length", strconv.Itoa(len(s.body))}}, s.headers...)
}

// sendRaw writes the hook on a fresh connection exactly as given (so the
// test knows every header byte the node saw), requires a 201 and records
// its id.
func sendRaw(t *testing.T, listen string, s *sent) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "POST /webhooks/%s/%s HTTP/1.1\r\n", s.tenant, s.source)
	for _, h := range s.wireHeaders(listen) {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	b.Write(s.body)
	conn, err := net.DialTimeout("tcp", listen, 5*time.Second)
	if err != nil {
		t.Fatalf("cannot connect to %s: %v", listen, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	s.start = time.Now()
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatalf("cannot send a hook to %s: %v", listen, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("POST /webhooks/%s/%s: no answer: %v", s.tenant, s.source, err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.end = time.Now()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /webhooks/%s/%s: %d %s %v, want 201", s.tenant, s.source, resp.StatusCode, answer, err)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || v.ID == "" {
		t.Fatalf("POST /webhooks/%s/%s: 201 %s: no id (%v)", s.tenant, s.source, answer, err)
	}
	s.id = v.ID
}

// answer is one response of the admin listener.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// adminClient gets paths from a node's admin listener over one keep-alive
// connection.
type adminClient struct {
	t    *testing.T
	addr string
	c    *http.Client
}

func newAdminClient(t *testing.T, addr string) *adminClient {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	t.Cleanup(c.CloseIdleConnections)
	return &adminClient{t: t, addr: addr, c: c}
}

// get sends GET path with "Authorization: Bearer token" (none when token
// is empty).
func (a *adminClient) get(path, token string) answer {
	a.t.Helper()
	ans, err := a.tryGet(path, token)
	if err != nil {
		a.t.Fatal(err)
	}
	return ans
}

// tryGet is get for other goroutines than the test's.
func (a *adminClient) tryGet(path, token string) (answer, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+a.addr+path, nil)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, fmt.Errorf("GET %s: cannot read the answer: %w", path, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func hookPath(tenant, id string) string { return "/v1/tenants/" + tenant + "/hooks/" + id }
