package main

// Claim packs end to end: a node with a dir claim store and HTTP sinks
// whose claim.over_bytes is 4KiB delivers a large hook by reference (the
// envelope's body_claim, the raw format's x-ankusa-body-claim header and
// an empty body) and a small one whole; the reference resolves to the
// exact body through the admin API and `ankusa claim get`.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/s3test"
)

// claimNodeYAML: %[1]s data_dir, %[2]s listen, %[3]s admin, %[4]s the ops
// token's digest, %[5]s the claim store's keys, %[6]s the receiver.
const claimNodeYAML = `node: {name: edge-claims, data_dir: %[1]s}
listen: %[2]s
admin:
  listen: %[3]s
  tokens:
    - {name: ops, sha256: %[4]s, scopes: ["tenant:*"]}
limits: {max_body_bytes: 256KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 4MiB}
log: {level: warn, format: json}
claims:
  stores:
    packs: {%[5]s, pack_delay: 20ms}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {id: env, type: http, url: "http://%[6]s/env/{tenant_id}", allow_private: true, format: envelope, claim: {store: packs, over_bytes: 4KiB}}
      - {id: raw, type: http, url: "http://%[6]s/raw/{tenant_id}", allow_private: true, format: raw, claim: {store: packs, over_bytes: 4KiB}}
`

// claimDelivery is one request the receiver got.
type claimDelivery struct {
	header http.Header
	body   []byte
}

// claimReceiver keeps every delivery by path and event id.
type claimReceiver struct {
	mu  sync.Mutex
	got map[string]claimDelivery // "<path> <event id>"
}

func (r *claimReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(500)
		return
	}
	r.mu.Lock()
	r.got[req.URL.Path+" "+req.Header.Get("x-ankusa-event-id")] = claimDelivery{header: req.Header.Clone(), body: body}
	r.mu.Unlock()
	w.WriteHeader(204)
}

func (r *claimReceiver) wait(t *testing.T, key string) claimDelivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		d, ok := r.got[key]
		r.mu.Unlock()
		if ok {
			return d
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no delivery %s in 15s", key)
	return claimDelivery{}
}

// claimPost posts body as a hook of tenant to source open and returns its
// event id.
func claimPost(t *testing.T, listen, tenant string, body []byte) string {
	t.Helper()
	resp, err := http.Post("http://"+listen+"/webhooks/"+tenant+"/open", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	id := resp.Header.Get("x-ankusa-event-id")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("post %d bytes: %d %s", len(body), resp.StatusCode, answer)
	}
	if id == "" {
		if i := bytes.Index(answer, []byte("evt_")); i >= 0 {
			id = string(answer[i : i+30])
		}
	}
	if id == "" {
		t.Fatalf("post: no event id in the answer: %s", answer)
	}
	return id
}

func TestClaimPacksEndToEnd(t *testing.T) {
	recv := &claimReceiver{got: map[string]claimDelivery{}}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	n := newTestNode(t)
	store := filepath.Join(n.dir, "claims")
	writeConfig(t, n, fmt.Sprintf(claimNodeYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), "type: dir, path: "+store, strings.TrimPrefix(srv.URL, "http://")))
	p := n.serve(t)
	defer p.stop()

	r := rand.New(rand.NewPCG(19, 19))
	large := make([]byte, 100<<10)
	for i := range large {
		large[i] = byte(r.Uint32())
	}
	small := bytes.Repeat([]byte("small hook "), 100) // 1100 bytes, under 4KiB
	largeID := claimPost(t, n.listen, "acme", large)
	smallID := claimPost(t, n.listen, "acme", small)

	// The small hook comes whole, in both formats.
	var e envelope.Envelope
	if err := e.UnmarshalJSON(recv.wait(t, "/env/acme "+smallID).body); err != nil {
		t.Fatal(err)
	}
	if e.BodyClaim != nil || !bytes.Equal(e.Body, small) {
		t.Fatalf("small hook in the envelope: claim %+v, body %d bytes; want the body whole", e.BodyClaim, len(e.Body))
	}
	if d := recv.wait(t, "/raw/acme "+smallID); !bytes.Equal(d.body, small) || d.header.Get("x-ankusa-body-claim") != "" {
		t.Fatalf("small hook raw: %d bytes, claim header %q", len(d.body), d.header.Get("x-ankusa-body-claim"))
	}

	// The large one by reference: body_claim in the envelope, the header
	// and no body in raw, the same claim (the cache: one pack entry).
	envD := recv.wait(t, "/env/acme "+largeID)
	e = envelope.Envelope{}
	if err := e.UnmarshalJSON(envD.body); err != nil {
		t.Fatal(err)
	}
	if e.BodyClaim == nil || len(e.Body) != 0 || !bytes.Contains(envD.body, []byte(`"body":"","body_encoding":"claim","body_claim":{"store":"packs","key":"claims/tenant=acme/source=open/`)) {
		t.Fatalf("large hook in the envelope: %s", envD.body)
	}
	if len(envD.body) > 4<<10 {
		t.Fatalf("the envelope of a claimed hook is %d bytes", len(envD.body))
	}
	rawD := recv.wait(t, "/raw/acme "+largeID)
	header := rawD.header.Get("x-ankusa-body-claim")
	ref, err := envelope.ParseClaim([]byte(header))
	if err != nil || len(rawD.body) != 0 {
		t.Fatalf("large hook raw: header %q (%v), %d body bytes", header, err, len(rawD.body))
	}
	if ref != *e.BodyClaim {
		t.Fatalf("the two sinks got two claims for one hook: %+v and %+v", ref, *e.BodyClaim)
	}
	if ref.Length != int64(len(large)) {
		t.Fatalf("claim length %d, body %d", ref.Length, len(large))
	}
	if _, err := os.Stat(filepath.Join(store, filepath.FromSlash(ref.Key))); err != nil {
		t.Fatalf("the pack is not in the store's directory: %v", err)
	}

	// The admin API gives the exact bytes to the tenant, the one 404 to
	// another tenant's path.
	c := newAdminClient(t, n.admin)
	b64 := base64.RawURLEncoding.EncodeToString(ref.AppendJSON(nil))
	a := c.get("/v1/tenants/acme/claims/"+b64, opsToken)
	if a.status != 200 || !bytes.Equal(a.body, large) || a.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("admin claim: %d %s, %d bytes (equal %v)", a.status, a.header.Get("Content-Type"), len(a.body), bytes.Equal(a.body, large))
	}
	if a := c.get("/v1/tenants/globex/claims/"+b64, opsToken); a.status != 404 {
		t.Fatalf("another tenant's claim: %d %s", a.status, a.body)
	}
	if a := c.get("/v1/tenants/acme/claims/bm90IGpzb24", opsToken); a.status != 400 {
		t.Fatalf("a ref that does not decode: %d %s", a.status, a.body)
	}

	// ankusa claim get, with the JSON and with the base64url form, with
	// the node still running (it only reads).
	code, stdout, stderr := runBin(t, n.dir, "claim", "get", "-config", n.config, header)
	if code != 0 || stdout != string(large) {
		t.Fatalf("claim get JSON: exit %d, %d bytes (equal %v): %s", code, len(stdout), stdout == string(large), stderr)
	}
	out := filepath.Join(n.dir, "body.bin")
	if code, _, stderr := runBin(t, n.dir, "claim", "get", "-config", n.config, "-o", out, b64); code != 0 {
		t.Fatalf("claim get -o: exit %d: %s", code, stderr)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("claim get -o wrote %d bytes (%v)", len(got), err)
	}
	// A damaged pack is refused, naming the key.
	path := filepath.Join(store, filepath.FromSlash(ref.Key))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[ref.Offset+7] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, n.dir, "claim", "get", "-config", n.config, b64); code != 1 || !strings.Contains(stderr, ref.Key) {
		t.Fatalf("claim get of a damaged pack: exit %d: %s", code, stderr)
	}
	if a := c.get("/v1/tenants/acme/claims/"+b64, opsToken); a.status != 500 || !bytes.Contains(a.body, []byte(`"corrupt"`)) {
		t.Fatalf("admin claim of a damaged pack: %d %s", a.status, a.body)
	}
	if code, _, stderr := runBin(t, n.dir, "claim"); code != 2 || !strings.Contains(stderr, "usage: ankusa claim get") {
		t.Fatalf("claim without get: exit %d: %s", code, stderr)
	}
}

// TestClaimS3Store: an s3 claim store whose bucket is missing stops the
// boot, naming claims.stores.<name>; with the bucket, a large hook goes by
// reference into a pack in the bucket and resolves through the admin API.
func TestClaimS3Store(t *testing.T) {
	s3 := s3test.Start(t)
	s3.MakeBucket(t, "claims")
	recv := &claimReceiver{got: map[string]claimDelivery{}}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	n := newTestNode(t)
	ak, sk := filepath.Join(n.dir, "s3.key"), filepath.Join(n.dir, "s3.secret")
	for path, v := range map[string]string{ak: s3.AccessKey, sk: s3.SecretKey} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	storeKeys := func(bucket string) string {
		return fmt.Sprintf("type: s3, endpoint: %q, bucket: %s, prefix: tenants-data, access_key: file:%s, secret_key: file:%s", s3.Endpoint, bucket, ak, sk)
	}
	write := func(bucket string) {
		writeConfig(t, n, fmt.Sprintf(claimNodeYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), storeKeys(bucket), strings.TrimPrefix(srv.URL, "http://")))
	}
	write("no-such-bucket")
	p := startProc(t, n.dir, "serve", "-config", n.config)
	if code := p.wait(30 * time.Second); code == 0 || !strings.Contains(p.stderr.String(), "claims.stores.packs") || !strings.Contains(p.stderr.String(), "no such bucket") {
		t.Fatalf("serve with a missing claims bucket: exit %d:\n%s", code, p.stderr)
	}
	if strings.Contains(p.stderr.String(), s3.SecretKey) {
		t.Fatal("the boot error prints the secret key")
	}
	write("claims")
	p = n.serve(t)
	defer p.stop()
	large := bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 20000)
	id := claimPost(t, n.listen, "acme", large)
	var e envelope.Envelope
	if err := e.UnmarshalJSON(recv.wait(t, "/env/acme "+id).body); err != nil {
		t.Fatal(err)
	}
	if e.BodyClaim == nil || !strings.HasPrefix(e.BodyClaim.Key, "tenants-data/claims/tenant=acme/source=open/") {
		t.Fatalf("claim %+v, want a key under the store's prefix", e.BodyClaim)
	}
	c := newAdminClient(t, n.admin)
	a := c.get("/v1/tenants/acme/claims/"+string(e.BodyClaim.AppendRef(nil)), opsToken)
	if a.status != 200 || !bytes.Equal(a.body, large) {
		t.Fatalf("admin claim from s3: %d, %d bytes (equal %v)", a.status, len(a.body), bytes.Equal(a.body, large))
	}
	code, stdout, stderr := runBin(t, n.dir, "claim", "get", "-config", n.config, string(e.BodyClaim.AppendJSON(nil)))
	if code != 0 || stdout != string(large) {
		t.Fatalf("claim get from s3: exit %d, %d bytes: %s", code, len(stdout), stderr)
	}
}
