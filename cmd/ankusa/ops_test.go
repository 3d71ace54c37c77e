package main

// The operator's view of a running node: the admin listener's health,
// readiness, metrics and profiles.

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOperatorAdmin posts hooks and refused requests to a node and checks
// what the admin listener tells an operator about them.
func TestOperatorAdmin(t *testing.T) {
	n := newNode(t)
	p := n.serve(t)
	admin := &http.Client{Timeout: 10 * time.Second}

	if code, body := get(t, admin, n.admin, "/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q, want 200 \"ok\"", code, body)
	}
	if code, body := get(t, admin, n.admin, "/readyz"); code != 200 {
		t.Fatalf("/readyz while serving: %d %q, want 200", code, body)
	}

	// hooks: the shared source under several tenants, the owned source
	// under its own; refusals: the owned source under another tenant, an
	// unknown source, a URL of the wrong shape.
	hooks := []target{
		{tenant: "t0", source: "open"}, {tenant: "t1", source: "open"}, {tenant: "t1", source: "open"},
		{tenant: "acme", source: "open"}, {tenant: "acme", source: "acme-billing"},
	}
	for i, h := range hooks {
		postOne(t, n.listen, h.tenant, h.source, fmt.Appendf(nil, `{"n":%d}`, i))
	}
	notFound := []string{"/webhooks/globex/acme-billing", "/webhooks/acme/nope", "/webhooks/open", "/nope"}
	public := &http.Client{Timeout: 10 * time.Second}
	for _, path := range notFound {
		resp, err := public.Post("http://"+n.listen+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("POST %s: %d, want 404", path, resp.StatusCode)
		}
	}

	code, text, ctype := getMetrics(t, admin, n.admin)
	if code != 200 || !strings.HasPrefix(ctype, "text/plain") {
		t.Fatalf("/metrics: %d %q, want 200 text/plain", code, ctype)
	}
	m := parseExposition(t, text)
	want := func(series string, v float64) {
		t.Helper()
		got, ok := m[series]
		if !ok {
			t.Errorf("/metrics has no %s", series)
			return
		}
		if got != v {
			t.Errorf("/metrics: %s = %v, want %v", series, got, v)
		}
	}
	want(`ankusa_edge_requests_total{code="201"}`, float64(len(hooks)))
	want(`ankusa_edge_requests_total{code="404"}`, float64(len(notFound)))
	want("ankusa_wal_last_seq", float64(len(hooks)))
	want("ankusa_wal_queue_bytes", 0)

	// Every commit batch is one fsync: the two histograms count the same
	// batches, and the batch sizes add up to the hooks.
	batches := histogram(t, m, "ankusa_wal_commit_batch_records")
	fsyncs := histogram(t, m, "ankusa_wal_fsync_seconds")
	if batches.count < 1 || batches.count > float64(len(hooks)) || batches.sum != float64(len(hooks)) {
		t.Errorf("ankusa_wal_commit_batch_records: %v batches holding %v records, want 1..%d batches holding %d", batches.count, batches.sum, len(hooks), len(hooks))
	}
	if fsyncs.count != batches.count || fsyncs.sum <= 0 {
		t.Errorf("ankusa_wal_fsync_seconds: count %v sum %v, want one observation per batch (%v) and a positive sum", fsyncs.count, fsyncs.sum, batches.count)
	}
	want("ankusa_wal_batches_total", batches.count)
	want("ankusa_wal_records_total", float64(len(hooks)))

	// The profiles need a token with the debug scope (admin's tests hold
	// the scope matrix).
	if code, body := get(t, admin, n.admin, "/debug/pprof/"); code != 401 || !strings.Contains(body, `"error":"unauthorized"`) {
		t.Fatalf("/debug/pprof/ without a token: %d, want 401:\n%.300s", code, body)
	}
	if code, _ := get(t, admin, n.admin, "/healthz"); code != 200 {
		t.Fatalf("/healthz after the hooks: %d", code)
	}
	p.stop()
}

// get fetches an admin path and returns the status and body.
func get(t *testing.T, client *http.Client, addr, path string) (int, string) {
	t.Helper()
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

func getMetrics(t *testing.T, client *http.Client, addr string) (code int, text, contentType string) {
	t.Helper()
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Content-Type")
}

// sampleLine is one sample of the Prometheus text exposition format:
// a metric name, optional labels (blanks allowed between them), a value.
// The appliance writes no timestamps, so one is refused.
var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:\s*[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"\s*,?)*\s*\})? (\S+)$`)

// parseExposition parses the text format into series -> value, failing on
// any line that is neither a comment nor a sample, and on a series given
// twice.
func parseExposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		g := sampleLine.FindStringSubmatch(l)
		if g == nil {
			t.Fatalf("/metrics line %d is not in the Prometheus text format: %q", line, l)
		}
		v, err := strconv.ParseFloat(g[3], 64)
		if err != nil {
			t.Fatalf("/metrics line %d: value %q: %v", line, g[3], err)
		}
		series := g[1] + g[2]
		if _, dup := m[series]; dup {
			t.Fatalf("/metrics line %d: %s is given twice", line, series)
		}
		m[series] = v
	}
	if len(m) == 0 {
		t.Fatal("/metrics is empty")
	}
	return m
}

// hist is a Prometheus histogram read from the exposition.
type hist struct {
	buckets map[float64]float64 // le -> cumulative count
	sum     float64
	count   float64
}

// histogram reads name's _bucket, _sum and _count series and checks their
// shape: buckets cumulative, a +Inf bucket equal to _count.
func histogram(t *testing.T, m map[string]float64, name string) hist {
	t.Helper()
	h := hist{buckets: map[float64]float64{}}
	le := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `_bucket\{le="([^"]+)"\}$`)
	for series, v := range m {
		if g := le.FindStringSubmatch(series); g != nil {
			b, err := strconv.ParseFloat(g[1], 64)
			if err != nil {
				t.Fatalf("%s: le=%q: %v", series, g[1], err)
			}
			h.buckets[b] = v
		}
	}
	var ok1, ok2 bool
	h.sum, ok1 = m[name+"_sum"]
	h.count, ok2 = m[name+"_count"]
	if len(h.buckets) == 0 || !ok1 || !ok2 {
		t.Fatalf("/metrics: %s is not a histogram: %d _bucket series, _sum %v, _count %v", name, len(h.buckets), ok1, ok2)
	}
	les := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		les = append(les, b)
	}
	sort.Float64s(les)
	for i := 1; i < len(les); i++ {
		if h.buckets[les[i]] < h.buckets[les[i-1]] {
			t.Fatalf("%s: bucket le=%v holds %v, fewer than le=%v's %v: buckets must be cumulative", name, les[i], h.buckets[les[i]], les[i-1], h.buckets[les[i-1]])
		}
	}
	if inf, ok := h.buckets[math.Inf(1)]; !ok || inf != h.count {
		t.Fatalf("%s: +Inf bucket %v (present %v), want it equal to _count %v", name, inf, ok, h.count)
	}
	return h
}
