package main

// `ankusa replay` against a dir archive the tests write the way the
// uploader does (segment files and their catalogue objects), with no node
// running: its NDJSON, its filters, re-posting with -to, and its exit codes.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// replayFixture is a dir archive of two nodes and a config naming it.
type replayFixture struct {
	dir     string // working directory of the command
	config  string
	root    string // the archive's directory
	layout  archive.Layout
	hooks   []envelope.Envelope // edge-1's by seq, then edge-2's
	node    []string            // the node of hooks[i]
	segKeys []string
}

// replayFixtureBase is the first receipt time; hooks are 20 minutes apart
// and cross midnight.
var replayFixtureBase = time.Date(2026, 11, 29, 23, 0, 0, 500_000_000, time.UTC)

// replayFixtureHook is hook seq of node ord. Its headers include
// hop-by-hop ones that a re-post must drop (Connection names X-Drop);
// seq 3 of node 1 is quarantined; seq%4 == 0 has a binary body.
func replayFixtureHook(ord uint16, seq uint64) envelope.Envelope {
	at := replayFixtureBase.Add(time.Duration(ord-1)*7*time.Minute + time.Duration(seq-1)*20*time.Minute)
	body := fmt.Appendf(nil, `{"id":"ev_%d_%d","amount":%d}`, ord, seq, seq*100)
	if seq%4 == 0 {
		body = []byte{0x00, 0xff, byte(seq), 0x80}
	}
	e := envelope.Envelope{
		Seq: seq, ID: envelope.MakeID(uint64(at.UnixMilli()), ord, seq), TenantOrdinal: uint32(seq % 2),
		TenantID: []string{"acme", "globex"}[seq%2], SourceID: []string{"stripe", "github", "shop"}[seq%3],
		ReceivedAt: at.UnixNano(),
		Headers: []envelope.Header{
			{Name: "Host", Value: "original.example"},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Content-Length", Value: "999"},
			{Name: "Stripe-Signature", Value: fmt.Sprintf("t=%d,v1=abc%d", seq, seq)},
			{Name: "X-Dup", Value: "one"}, {Name: "x-dup", Value: "two"},
			{Name: "User-Agent", Value: "Stripe/1.0"},
			{Name: "Connection", Value: "keep-alive, X-Drop"},
			{Name: "X-Drop", Value: "hop"},
			{Name: "Keep-Alive", Value: "timeout=5"},
			{Name: "Proxy-Authorization", Value: "Basic cHJveHk="},
		},
		Body:         body,
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    fmt.Sprintf("ev_%d_%d", ord, seq),
	}
	if ord == 1 && seq == 3 {
		e.Verification = envelope.Verification{Verifier: "stripe", Flagged: true, Quarantined: true, Failure: envelope.FailMismatch}
	}
	return e
}

// newReplayFixture archives edge-1's seqs 1..5 and 6..8 and edge-2's 1..5
// under prefix "prod" and writes a config with archive.type dir.
func newReplayFixture(t *testing.T) *replayFixture {
	t.Helper()
	dir := t.TempDir()
	fx := &replayFixture{dir: dir, config: filepath.Join(dir, "ankusa.yaml"), root: filepath.Join(dir, "archive"), layout: archive.Layout{Prefix: "prod"}}
	d, err := archive.NewDir(fx.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		ord  uint16
		segs [][2]uint64
	}{{1, [][2]uint64{{1, 5}, {6, 8}}}, {2, [][2]uint64{{1, 5}}}} {
		node := fmt.Sprintf("edge-%d", n.ord)
		for _, s := range n.segs {
			var envs []envelope.Envelope
			for seq := s[0]; seq <= s[1]; seq++ {
				envs = append(envs, replayFixtureHook(n.ord, seq))
				fx.node = append(fx.node, node)
			}
			fx.hooks = append(fx.hooks, envs...)
			fx.segKeys = append(fx.segKeys, replayArchiveSegment(t, d, fx.layout, node, envs))
		}
	}
	yaml := fmt.Sprintf("archive: {type: dir, path: %s, prefix: prod}\nlog: {level: warn}\n", fx.root)
	if err := os.WriteFile(fx.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

// replayArchiveSegment seals envs into a segment and puts it and its
// catalogue object into d as the uploader does; it returns the segment's key.
func replayArchiveSegment(t *testing.T, d *archive.Dir, l archive.Layout, node string, envs []envelope.Envelope) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg")
	w, err := segment.Create(vfs.Default, path, segment.NewEncoder(), 256)
	if err != nil {
		t.Fatal(err)
	}
	for i := range envs {
		if err := w.Append(envs[i].AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
	}
	foot, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := meta.SegmentEntry{FirstSeq: foot.FirstSeq, LastSeq: foot.LastSeq, MinReceivedAt: foot.MinReceivedAt}
	cat := archive.Catalogue{
		Node: node, Name: segment.FileName(foot.FirstSeq, foot.LastSeq), FirstSeq: foot.FirstSeq, LastSeq: foot.LastSeq,
		FirstID: foot.FirstID.String(), LastID: foot.LastID.String(),
		MinReceivedAt: time.Unix(0, foot.MinReceivedAt).UTC(), MaxReceivedAt: time.Unix(0, foot.MaxReceivedAt).UTC(),
		Count: foot.Count, RawBytes: foot.RawBytes, Size: int64(len(data)), SealedAt: time.Unix(0, foot.MaxReceivedAt).UTC(),
		SHA256: replaySHA(data),
	}
	replayPutObject(t, d, l.SegmentKey(node, &e), data)
	replayPutObject(t, d, l.CatalogueKey(node, &e), cat.Marshal())
	return l.SegmentKey(node, &e)
}

func replaySHA(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func replayPutObject(t *testing.T, d *archive.Dir, key string, data []byte) {
	t.Helper()
	if err := d.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), replaySHA(data)); err != nil {
		t.Fatal(err)
	}
}

// where returns the indexes of the hooks keep selects, in archive order.
func (fx *replayFixture) where(keep func(i int, e *envelope.Envelope) bool) []int {
	var out []int
	for i := range fx.hooks {
		if keep(i, &fx.hooks[i]) {
			out = append(out, i)
		}
	}
	return out
}

func replayNotQuarantined(_ int, e *envelope.Envelope) bool { return !e.Verification.Quarantined }

// replaySummaryRE is the summary line on stderr.
var replaySummaryRE = regexp.MustCompile(`^replay: (\d+) hooks \((\d+) bytes\) from (\d+) segments in \S+(, (\d+) skipped \(tenant erased\))?$`)

// run runs `ankusa replay -config` with args.
func (fx *replayFixture) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBin(t, fx.dir, append([]string{"replay", "-config", fx.config}, args...)...)
}

// checkNDJSON requires stdout to be the JSON form of the hooks want
// indexes, one a line, in order, and the summary to count them.
func (fx *replayFixture) checkNDJSON(t *testing.T, what, stdout, stderr string, want []int, segments int) {
	t.Helper()
	var b bytes.Buffer
	var bodies int
	for _, i := range want {
		b.Write(fx.hooks[i].AppendJSON(nil))
		b.WriteByte('\n')
		bodies += len(fx.hooks[i].Body)
	}
	if stdout != b.String() {
		t.Fatalf("%s: stdout is not the NDJSON of the %d selected hooks:\ngot\n%s\nwant\n%s", what, len(want), stdout, b.String())
	}
	summary := fmt.Sprintf("replay: %d hooks (%d bytes) from %d segments in ", len(want), bodies, segments)
	if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], summary) || !replaySummaryRE.MatchString(lines[0]) {
		t.Fatalf("%s: stderr %q, want one summary line starting %q", what, stderr, summary)
	}
}

// TestReplayCommandNDJSON: without -to, the selected hooks come out as
// their JSON form, one a line, node after node in seq order, for every
// filter; the window's edges are exact and its bounds parse as RFC 3339
// (with or without fractional seconds) or as a date.
func TestReplayCommandNDJSON(t *testing.T) {
	fx := newReplayFixture(t)
	recv := func(i int) int64 { return fx.hooks[i].ReceivedAt }
	rfc := func(i int) string { return time.Unix(0, recv(i)).UTC().Format(time.RFC3339Nano) }
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, tc := range []struct {
		name     string
		args     []string
		keep     func(i int, e *envelope.Envelope) bool
		n        int
		segments int
	}{
		{"everything", nil, replayNotQuarantined, 12, 3},
		{"quarantined too", []string{"-quarantined"}, func(int, *envelope.Envelope) bool { return true }, 13, 3},
		{"tenant", []string{"-tenant", "acme"}, func(i int, e *envelope.Envelope) bool { return e.TenantID == "acme" }, 6, 3},
		{"source", []string{"-source", "github"}, func(i int, e *envelope.Envelope) bool { return e.SourceID == "github" && replayNotQuarantined(i, e) }, 5, 3},
		{"tenant and source", []string{"-tenant", "globex", "-source", "shop"}, func(i int, e *envelope.Envelope) bool {
			return e.TenantID == "globex" && e.SourceID == "shop" && replayNotQuarantined(i, e)
		}, 2, 3},
		{"node", []string{"-node", "edge-2"}, func(i int, e *envelope.Envelope) bool { return fx.node[i] == "edge-2" }, 5, 1},
		// hooks[3] is edge-1 seq 4, received at 00:00:00.5 on the 30th.
		{"since is inclusive", []string{"-since", rfc(3)}, func(i int, e *envelope.Envelope) bool { return e.ReceivedAt >= recv(3) }, 7, 3},
		{"until is exclusive", []string{"-until", rfc(3)}, func(i int, e *envelope.Envelope) bool { return e.ReceivedAt < recv(3) && replayNotQuarantined(i, e) }, 5, 2},
		{"since and until without fractional seconds, with an offset", []string{"-since", "2026-11-30T00:20:00+01:00", "-until", "2026-11-30T01:00:00+01:00"},
			func(i int, e *envelope.Envelope) bool {
				return e.ReceivedAt >= midnight-40*int64(time.Minute) && e.ReceivedAt < midnight && replayNotQuarantined(i, e)
			}, 3, 2},
		{"dates", []string{"-since", "2026-11-30", "-until", "2026-12-01"}, func(i int, e *envelope.Envelope) bool { return e.ReceivedAt >= midnight }, 7, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := fx.where(tc.keep)
			if len(want) != tc.n {
				t.Fatalf("the test's own selection has %d hooks, want %d", len(want), tc.n)
			}
			code, stdout, stderr := fx.run(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			fx.checkNDJSON(t, tc.name, stdout, stderr, want, tc.segments)
		})
	}
}

// TestReplayCommandTombstone: an erased tenant's earlier hooks are left
// out and counted in the summary.
func TestReplayCommandTombstone(t *testing.T) {
	fx := newReplayFixture(t)
	d, err := archive.NewDir(fx.root)
	if err != nil {
		t.Fatal(err)
	}
	erasedAt := fx.hooks[4].ReceivedAt // edge-1 seq 5, globex
	replayPutObject(t, d, fx.layout.TombstoneKey("globex"),
		fmt.Appendf(nil, `{"tenant":"globex","erased_at":%q}`, time.Unix(0, erasedAt).UTC().Format(time.RFC3339Nano)))
	code, stdout, stderr := fx.run(t)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	want := fx.where(func(i int, e *envelope.Envelope) bool {
		return replayNotQuarantined(i, e) && !(e.TenantID == "globex" && e.ReceivedAt <= erasedAt)
	})
	if n := len(fx.hooks) - 1 - len(want); n != 4 {
		t.Fatalf("the test's own selection erases %d hooks, want 4", n)
	}
	if !strings.Contains(stderr, ", 4 skipped (tenant erased)\n") {
		t.Fatalf("stderr %q does not count 4 erased hooks", stderr)
	}
	fx.checkNDJSON(t, "tombstone", stdout, stderr, want, 3)
}

// replayReceiver is a target for -to that records what it is sent;
// answer, if set, chooses the answer to request n (0-based).
type replayReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	n      int
	got    []*replayRequest
	at     []time.Time // of every request
	answer func(n int, r *replayRequest) (status int, header http.Header, body string)
}

type replayRequest struct {
	method, path string
	header       http.Header
	host         string
	body         []byte
	length       int64
}

func newReplayReceiver(t *testing.T, answer func(n int, r *replayRequest) (int, http.Header, string)) *replayReceiver {
	rr := &replayReceiver{answer: answer}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &replayRequest{method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), host: r.Host, body: body, length: r.ContentLength}
		rr.mu.Lock()
		n := rr.n
		rr.n++
		rr.at = append(rr.at, time.Now())
		rr.mu.Unlock()
		status, h, text := http.StatusCreated, http.Header(nil), ""
		if rr.answer != nil {
			status, h, text = rr.answer(n, req)
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		if status/100 == 2 {
			rr.mu.Lock()
			rr.got = append(rr.got, req)
			rr.mu.Unlock()
		}
		w.WriteHeader(status)
		io.WriteString(w, text)
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

// checkPosted requires r to be hook e re-posted to /in/<tenant>/<source>/<id>:
// its body, its headers but the hop-by-hop ones.
func checkPosted(t *testing.T, r *replayRequest, e *envelope.Envelope) {
	t.Helper()
	if want := fmt.Sprintf("/in/%s/%s/%s", e.TenantID, e.SourceID, e.ID); r.method != http.MethodPost || r.path != want {
		t.Fatalf("%s %s, want POST %s", r.method, r.path, want)
	}
	if !bytes.Equal(r.body, e.Body) || r.length != int64(len(e.Body)) {
		t.Fatalf("%s: body %q (length %d), want %q", e.ID, r.body, r.length, e.Body)
	}
	want := http.Header{}
	for _, h := range e.Headers {
		want.Add(h.Name, h.Value)
	}
	for _, k := range []string{"Stripe-Signature", "Content-Type", "User-Agent", "X-Dup"} {
		if !slices.Equal(r.header[k], want[k]) {
			t.Fatalf("%s: header %s is %q, want %q", e.ID, k, r.header[k], want[k])
		}
	}
	for _, k := range []string{"Connection", "X-Drop", "Keep-Alive", "Proxy-Authorization"} {
		if v, ok := r.header[k]; ok {
			t.Fatalf("%s: hop-by-hop header %s: %q was sent", e.ID, k, v)
		}
	}
	if r.host == "original.example" {
		t.Fatalf("%s: the stored Host header was sent", e.ID)
	}
}

// TestReplayCommandPost: -to posts every selected hook with its headers
// and body, in order with one worker; a 503 and a 429 are retried, the
// 429 after its Retry-After.
func TestReplayCommandPost(t *testing.T) {
	fx := newReplayFixture(t)
	rr := newReplayReceiver(t, func(n int, _ *replayRequest) (int, http.Header, string) {
		switch n {
		case 0:
			return http.StatusServiceUnavailable, nil, "busy"
		case 1:
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, "slow down"
		}
		return http.StatusAccepted, nil, ""
	})
	code, stdout, stderr := fx.run(t, "-to", rr.srv.URL+"/in/{tenant_id}/{source_id}/{event_id}")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if stdout != "" {
		t.Fatalf("stdout %q with -to, want nothing", stdout)
	}
	want := fx.where(replayNotQuarantined)
	if len(rr.got) != len(want) || rr.n != len(want)+2 {
		t.Fatalf("%d hooks taken in %d requests, want %d in %d", len(rr.got), rr.n, len(want), len(want)+2)
	}
	for j, i := range want {
		checkPosted(t, rr.got[j], &fx.hooks[i])
	}
	if gap := rr.at[2].Sub(rr.at[1]); gap < time.Second {
		t.Fatalf("retried %v after a 429 with Retry-After: 1", gap)
	}
	if !regexp.MustCompile(fmt.Sprintf(`^replay: %d hooks \(\d+ bytes\) from 3 segments in \S+\n$`, len(want))).MatchString(stderr) {
		t.Fatalf("stderr %q, want the summary line", stderr)
	}
}

// TestReplayCommandPostWorkers: with -c 4 every hook arrives once.
func TestReplayCommandPostWorkers(t *testing.T) {
	fx := newReplayFixture(t)
	rr := newReplayReceiver(t, nil)
	code, _, stderr := fx.run(t, "-to", rr.srv.URL+"/in/{tenant_id}/{source_id}/{event_id}", "-c", "4", "-quarantined")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	byPath := map[string]*replayRequest{}
	for _, r := range rr.got {
		if byPath[r.path] != nil {
			t.Fatalf("%s posted twice", r.path)
		}
		byPath[r.path] = r
	}
	if len(byPath) != len(fx.hooks) {
		t.Fatalf("%d hooks posted, want %d", len(byPath), len(fx.hooks))
	}
	for i := range fx.hooks {
		e := &fx.hooks[i]
		r := byPath[fmt.Sprintf("/in/%s/%s/%s", e.TenantID, e.SourceID, e.ID)]
		if r == nil {
			t.Fatalf("%s was not posted", e.ID)
		}
		checkPosted(t, r, e)
	}
}

// TestReplayCommandPostRefused: an answer that is neither 2xx, 429 nor
// 5xx stops the replay: exit 1 naming the event, the status and the first
// 200 bytes of the answer; nothing after it is posted.
func TestReplayCommandPostRefused(t *testing.T) {
	fx := newReplayFixture(t)
	refused := fx.hooks[3] // edge-1 seq 4; the 3rd hook replayed (seq 3 is quarantined)
	answer := strings.Repeat("a", 150) + strings.Repeat("b", 50) + "NOT-SHOWN"
	rr := newReplayReceiver(t, func(_ int, r *replayRequest) (int, http.Header, string) {
		if strings.HasSuffix(r.path, refused.ID.String()) {
			return http.StatusBadRequest, nil, answer
		}
		return http.StatusOK, nil, ""
	})
	code, _, stderr := fx.run(t, "-to", rr.srv.URL+"/in/{tenant_id}/{source_id}/{event_id}")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	for _, s := range []string{refused.ID.String(), "400", answer[:200], "replay: 2 hooks"} {
		if !strings.Contains(stderr, s) {
			t.Fatalf("stderr %q does not contain %q", stderr, s)
		}
	}
	if strings.Contains(stderr, "NOT-SHOWN") {
		t.Fatalf("stderr %q shows more than 200 bytes of the answer", stderr)
	}
	if rr.n != 3 || len(rr.got) != 2 {
		t.Fatalf("%d requests, %d taken; want 3 and 2: the replay goes on after a refusal", rr.n, len(rr.got))
	}
}

// TestReplayCommandErrors: bad flags exit 2 naming the flag; a config
// without a usable archive exits 78 like check-config; a damaged archive
// exits 1 naming the object, after the summary of what was replayed.
func TestReplayCommandErrors(t *testing.T) {
	fx := newReplayFixture(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"-since", "yesterday"}, 2, `-since "yesterday"`},
		{[]string{"-until", "2026-13-01"}, 2, `-until "2026-13-01"`},
		{[]string{"-since", "2026-11-30", "-until", "2026-11-30"}, 2, "-since 2026-11-30 is not before -until"},
		{[]string{"-c", "0", "-to", "http://127.0.0.1:1/"}, 2, "-c 0"},
		{[]string{"-c", "2"}, 2, "-c needs -to"},
		{[]string{"-to", "ftp://example.com/x"}, 2, `-to "ftp://example.com/x"`},
		{[]string{"-to", "/relative"}, 2, `-to "/relative"`},
		{[]string{"-bogus"}, 2, "-bogus"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		code, stdout, stderr := fx.run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.says) || stdout != "" {
			t.Errorf("replay %q: exit %d, stderr %q, stdout %q; want %d and a message with %q", tc.args, code, stderr, stdout, tc.code, tc.says)
		}
	}

	none := filepath.Join(fx.dir, "none.yaml")
	if err := os.WriteFile(none, []byte("archive: {type: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingDir := filepath.Join(fx.dir, "missing-dir.yaml")
	if err := os.WriteFile(missingDir, []byte("archive: {type: dir, path: "+filepath.Join(fx.dir, "nowhere")+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		config string
		code   int
		says   string
	}{
		{none, exitConfig, "config: archive.type is none: there is no archive to replay"},
		{filepath.Join(fx.dir, "absent.yaml"), exitConfig, "config: cannot read config"},
		{missingDir, 1, "archive.path"},
	} {
		code, _, stderr := runBin(t, fx.dir, "replay", "-config", tc.config)
		if code != tc.code || !strings.Contains(stderr, tc.says) {
			t.Errorf("replay -config %s: exit %d, stderr %q; want %d and %q", filepath.Base(tc.config), code, stderr, tc.code, tc.says)
		}
	}
	if _, err := os.Stat(filepath.Join(fx.dir, "nowhere")); err == nil {
		t.Error("replay created the missing archive.path")
	}

	// A flipped byte in edge-1's second segment: its first segment's
	// hooks are out, then the error.
	key := fx.segKeys[1]
	path := filepath.Join(fx.root, filepath.FromSlash(key))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := fx.run(t)
	if code != 1 || !strings.Contains(stderr, key) || !strings.Contains(stderr, "replay: 4 hooks") {
		t.Fatalf("damaged segment: exit %d, stderr %q; want 1 naming %s and a summary of 4 hooks", code, stderr, key)
	}
	if n := strings.Count(stdout, "\n"); n != 4 {
		t.Fatalf("damaged segment: %d hooks printed before the error, want the first segment's 4", n)
	}
}

// TestReplayCommandEmptyArchive: an archive with nothing in it replays
// nothing, successfully.
func TestReplayCommandEmptyArchive(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "archive"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "ankusa.yaml")
	if err := os.WriteFile(config, []byte("archive: {type: dir, path: "+filepath.Join(dir, "archive")+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBin(t, dir, "replay", "-config", config)
	if code != 0 || stdout != "" || !strings.HasPrefix(stderr, "replay: 0 hooks (0 bytes) from 0 segments in ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
