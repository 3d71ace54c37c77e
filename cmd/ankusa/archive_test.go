package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/s3test"
)

// archiveYAML runs a node that archives to an S3 bucket with small
// segments: three shared sources that trust the URL's tenant.
const archiveYAML = `node: {name: edge-arch, data_dir: %s}
listen: %s
admin:
  listen: %s
  tokens: [{name: ops, sha256: %s, scopes: ["tenant:*"]}]
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 1MiB}
segment: {max_bytes: 64KiB, max_age: 200ms, retain_local: %s}
archive: {type: s3, endpoint: %s, bucket: %s, prefix: prod, region: us-east-1, access_key: "file:%s", secret_key: "file:%s"}
log: {level: warn, format: json}
sources:
  stripe: {verify: {type: none}, trust_url_tenant: true}
  github: {verify: {type: none}, trust_url_tenant: true}
  shop: {verify: {type: none}, trust_url_tenant: true}
`

// archiveNode writes an archiving node's config for the server srv.
func archiveNode(t *testing.T, srv *s3test.Server, bucket, retain string) *testNode {
	t.Helper()
	dir := t.TempDir()
	n := &testNode{dir: dir, config: filepath.Join(dir, "ankusa.yaml"), dataDir: filepath.Join(dir, "data"), listen: freeAddr(t), admin: freeAddr(t)}
	ak, sk := filepath.Join(dir, "s3.key"), filepath.Join(dir, "s3.secret")
	for path, v := range map[string]string{ak: srv.AccessKey, sk: srv.SecretKey} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yaml := fmt.Sprintf(archiveYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), retain, srv.Endpoint, bucket, ak, sk)
	if err := os.WriteFile(n.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, dir, "check-config", "-config", n.config); code != 0 {
		t.Fatalf("the test's own config does not check (exit %d):\n%s", code, stderr)
	}
	return n
}

// sentHook is what a provider sent and the node acknowledged.
type sentHook struct {
	id             string
	tenant, source string
	body           []byte
	phase          int
}

var archiveSources = []string{"stripe", "github", "shop"}

// hookSender posts hooks over keep-alive connections and records the
// acknowledged ones.
type hookSender struct {
	t      *testing.T
	addr   string
	client *http.Client
	next   atomic.Int64
	mu     sync.Mutex
	acked  []sentHook
	other  map[int]int // status -> count of answers other than 201
	errs   atomic.Int64
}

func newHookSender(t *testing.T, addr string) *hookSender {
	return &hookSender{t: t, addr: addr, other: map[int]int{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// send posts hook number i; it returns false on a transport error.
func (s *hookSender) send(phase int) bool {
	i := s.next.Add(1)
	h := sentHook{tenant: fmt.Sprintf("tenant-%d", i%10), source: archiveSources[i%3], phase: phase}
	h.body = fmt.Appendf(nil, `{"id":"evt_%d","type":"invoice.paid","data":{"object":{"amount":%d,"lines":[%d,%d]}},"pad":"%s"}`,
		i, i*37%100000, i%7, i%11, strings.Repeat("x", int(i%400)))
	resp, err := s.client.Post(fmt.Sprintf("http://%s/webhooks/%s/%s", s.addr, h.tenant, h.source), "application/json", bytes.NewReader(h.body))
	if err != nil {
		s.errs.Add(1)
		return false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if resp.StatusCode != http.StatusCreated {
		s.other[resp.StatusCode]++
		return true
	}
	var ans struct{ ID string }
	if err := json.Unmarshal(b, &ans); err != nil || ans.ID == "" {
		s.t.Errorf("201 with body %q", b)
		return true
	}
	h.id = ans.ID
	s.acked = append(s.acked, h)
	return true
}

// sendN sends n hooks with c concurrent senders.
func (s *hookSender) sendN(n, c, phase int) {
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(n))
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				s.send(phase)
			}
		}()
	}
	wg.Wait()
}

// metric reads one unlabelled series from the node's /metrics.
func metric(t *testing.T, admin, name string) float64 {
	t.Helper()
	_, text, _ := getMetrics(t, http.DefaultClient, admin)
	return parseExposition(t, text)[name]
}

// waitAllArchived waits until every hook is sealed and every segment is
// archived.
func waitAllArchived(t *testing.T, n *testNode, p *proc, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			t.Fatalf("the node exited:\n%s", p.stderr)
		}
		sealed := metric(t, n.admin, "ankusa_segment_sealed_total")
		// Sealed up to the log's last hook (unsealed_hooks alone counts only
		// what the sealer has read), and every sealed segment archived.
		if metric(t, n.admin, "ankusa_segment_sealed_seq") == metric(t, n.admin, "ankusa_wal_last_seq") && metric(t, n.admin, "ankusa_archive_lag_segments") == 0 &&
			sealed > 0 && metric(t, n.admin, "ankusa_archive_uploaded_segments_total") >= sealed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not everything archived after %s: sealed %v, uploaded %v, lag %v", timeout, sealed,
				metric(t, n.admin, "ankusa_archive_uploaded_segments_total"), metric(t, n.admin, "ankusa_archive_lag_segments"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replayed runs `ankusa replay` with args and parses its NDJSON.
func replayed(t *testing.T, n *testNode, args ...string) []envelope.Envelope {
	t.Helper()
	code, stdout, stderr := runBin(t, n.dir, append([]string{"replay", "-config", n.config}, args...)...)
	if code != 0 {
		t.Fatalf("ankusa replay %q exited %d:\n%s", args, code, stderr)
	}
	var out []envelope.Envelope
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e envelope.Envelope
		if err := e.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("replay line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// checkReplay compares a replay with the acknowledged hooks keep selects:
// the same ids, bodies byte for byte, tenants and sources, in seq order.
func checkReplay(t *testing.T, what string, got []envelope.Envelope, acked []sentHook, keep func(sentHook) bool) {
	t.Helper()
	want := map[string]sentHook{}
	for _, h := range acked {
		if keep(h) {
			want[h.id] = h
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s: the test selects no hook", what)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: replay gave %d hooks, want %d", what, len(got), len(want))
	}
	for i, e := range got {
		h, ok := want[e.ID.String()]
		if !ok {
			t.Fatalf("%s: replay gave %s, not acknowledged or not selected", what, e.ID)
		}
		if !bytes.Equal(e.Body, h.body) || e.TenantID != h.tenant || e.SourceID != h.source {
			t.Fatalf("%s: %s came back as %s/%s %q, sent %s/%s %q", what, e.ID, e.TenantID, e.SourceID, e.Body, h.tenant, h.source, h.body)
		}
		delete(want, e.ID.String())
		if i > 0 && e.Seq <= got[i-1].Seq {
			t.Fatalf("%s: seq %d after %d: not in seq order", what, e.Seq, got[i-1].Seq)
		}
	}
}

// TestArchiveAndReplay (issue 8, acceptance 1): 50,000 hooks across 10
// tenants and 3 sources, in three phases, into segments of 64 KiB that
// are all archived to a real S3 server; then, with the node stopped,
// `ankusa replay` returns exactly the acknowledged hooks for every filter,
// byte-identical, in seq order.
func TestArchiveAndReplay(t *testing.T) {
	srv := s3test.Start(t)
	srv.MakeBucket(t, "hooks")
	n := archiveNode(t, srv, "hooks", "1s")
	p := n.serve(t)
	s := newHookSender(t, n.listen)
	s.sendN(20000, 32, 0)
	time.Sleep(20 * time.Millisecond)
	since := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	s.sendN(20000, 32, 1)
	time.Sleep(20 * time.Millisecond)
	until := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	s.sendN(10000, 32, 2)
	if len(s.acked) != 50000 || s.errs.Load() != 0 {
		t.Fatalf("acknowledged %d of 50000 (other answers %v, transport errors %d)", len(s.acked), s.other, s.errs.Load())
	}
	waitAllArchived(t, n, p, 60*time.Second)
	sealed := metric(t, n.admin, "ankusa_segment_sealed_total")
	if sealed < 100 {
		t.Fatalf("%v segments: the test wants hundreds", sealed)
	}
	t.Logf("50000 hooks acknowledged in %v segments, all archived", sealed)
	// Retention (1s) removes archived segments: a fetch of an early hook
	// reads the archive.
	deadline := time.Now().Add(20 * time.Second)
	for {
		first, err := filepath.Glob(filepath.Join(n.dataDir, "segments", "00000000000000000001-*.seg"))
		if err != nil {
			t.Fatal(err)
		}
		if len(first) == 0 && metric(t, n.admin, "ankusa_segment_retention_removed_total") > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("retention did not remove the first archived segment")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first hooks' segments are gone from local disk: the admin API
	// fetches them from the archive, body intact. (The first 20 answers
	// are among the first seqs: at most 32 were in flight.)
	ac := newAdminClient(t, n.admin)
	for _, h := range s.acked[:20] {
		a := ac.get(hookPath(h.tenant, h.id), opsToken)
		var e envelope.Envelope
		if a.status != http.StatusOK || e.UnmarshalJSON(a.body) != nil || !bytes.Equal(e.Body, h.body) {
			t.Fatalf("fetch of %s after its segment left local disk: %d %s", h.id, a.status, a.body)
		}
	}
	if metric(t, n.admin, "ankusa_archive_reads_total") == 0 {
		t.Fatal("the fetches did not read the archive")
	}
	p.stop()

	// Every segment is in the bucket once, with its catalogue object.
	var segs, cats int
	for obj := range srv.Client(t).ListObjects(context.Background(), "hooks", minio.ListObjectsOptions{Prefix: "prod/segments/node=edge-arch/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		switch {
		case strings.HasSuffix(obj.Key, ".seg"):
			segs++
		case strings.HasSuffix(obj.Key, ".cat"):
			cats++
		}
	}
	if segs != int(sealed) || cats != int(sealed) {
		t.Fatalf("bucket holds %d segments and %d catalogue objects, the node sealed %v", segs, cats, sealed)
	}

	all := replayed(t, n)
	checkReplay(t, "everything", all, s.acked, func(sentHook) bool { return true })
	checkReplay(t, "-tenant tenant-3", replayed(t, n, "-tenant", "tenant-3"), s.acked, func(h sentHook) bool { return h.tenant == "tenant-3" })
	checkReplay(t, "-source github", replayed(t, n, "-source", "github"), s.acked, func(h sentHook) bool { return h.source == "github" })
	checkReplay(t, "-tenant tenant-7 -source shop", replayed(t, n, "-tenant", "tenant-7", "-source", "shop"), s.acked,
		func(h sentHook) bool { return h.tenant == "tenant-7" && h.source == "shop" })
	window := []string{"-since", since.Format(time.RFC3339Nano), "-until", until.Format(time.RFC3339Nano)}
	checkReplay(t, "the middle phase's window", replayed(t, n, window...), s.acked, func(h sentHook) bool { return h.phase == 1 })
	checkReplay(t, "window and tenant", replayed(t, n, append(window, "-tenant", "tenant-0")...), s.acked,
		func(h sentHook) bool { return h.phase == 1 && h.tenant == "tenant-0" })
	if !slices.IsSortedFunc(all, func(a, b envelope.Envelope) int { return int(a.Seq - b.Seq) }) {
		t.Fatal("replay is not in seq order")
	}
}

// TestArchiveS3Outage (issue 8, acceptance 2): the S3 server stops under
// load. Ingest keeps answering 201, the archive lag grows, no segment that
// is not archived leaves local disk; when the server is back the backlog
// drains and every segment is in the bucket once.
func TestArchiveS3Outage(t *testing.T) {
	srv := s3test.Start(t)
	srv.MakeBucket(t, "hooks")
	n := archiveNode(t, srv, "hooks", "1s")
	p := n.serve(t)
	s := newHookSender(t, n.listen)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.send(0)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	srv.Stop()
	segDir := filepath.Join(n.dataDir, "segments")
	var maxLag float64
	lagSecs := 0.0
	for range 40 { // 4 s without S3
		time.Sleep(100 * time.Millisecond)
		lag := metric(t, n.admin, "ankusa_archive_lag_segments")
		ents, err := os.ReadDir(segDir)
		if err != nil {
			t.Fatal(err)
		}
		local := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".seg") {
				local++
			}
		}
		if float64(local) < lag {
			t.Fatalf("%d segments on local disk but %v not archived: an unarchived segment was deleted", local, lag)
		}
		maxLag = max(maxLag, lag)
		lagSecs = metric(t, n.admin, "ankusa_archive_lag_seconds")
	}
	if maxLag < 5 || lagSecs < 1 {
		t.Fatalf("during the outage the archive lag reached %v segments and %v s: it must grow", maxLag, lagSecs)
	}
	t.Logf("S3 down for 4s: lag reached %v segments and %.1f s; %d hooks acknowledged so far", maxLag, lagSecs, func() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.acked) }())
	if metric(t, n.admin, "ankusa_archive_upload_failures_total") == 0 {
		t.Fatal("no upload failure was counted during the outage")
	}
	srv.Restart()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	s.mu.Lock()
	acked, other, errs := len(s.acked), s.other, s.errs.Load()
	s.mu.Unlock()
	if len(other) != 0 || errs != 0 || acked < 1000 {
		t.Fatalf("under the outage: %d acknowledged, other answers %v, transport errors %d: ingest must keep answering 201", acked, other, errs)
	}
	waitAllArchived(t, n, p, 60*time.Second)
	sealed := metric(t, n.admin, "ankusa_segment_sealed_total")
	uploaded := metric(t, n.admin, "ankusa_archive_uploaded_segments_total")
	// The server is killed mid-request: a PUT it had already stored but
	// not answered is retried and found in place with the same bytes (the
	// idempotent path), so at most one object per upload in flight
	// (archive.concurrency, 4 by default) may be counted as already present.
	present := metric(t, n.admin, "ankusa_archive_already_present_total")
	if uploaded != sealed || present > 4 {
		t.Fatalf("%v segments sealed, %v uploaded, %v found already present: each must be uploaded once, and only an upload in flight when S3 died may be found in place",
			sealed, uploaded, present)
	}
	p.stop()
	keys := map[string]bool{}
	for obj := range srv.Client(t).ListObjects(context.Background(), "hooks", minio.ListObjectsOptions{Prefix: "prod/segments/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasSuffix(obj.Key, ".seg") {
			keys[obj.Key] = true
		}
	}
	if len(keys) != int(sealed) {
		t.Fatalf("bucket holds %d segments, the node sealed %v", len(keys), sealed)
	}
	t.Logf("after the outage: %v segments sealed, %v uploaded once each (%v objects found in place after the kill), %d hooks", sealed, uploaded, present, acked)
	checkReplay(t, "after the outage", replayed(t, n), s.acked, func(sentHook) bool { return true })
}
