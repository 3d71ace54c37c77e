package main

// Helpers of the lifecycle tests that drive the built binary (issue 17):
// a node whose lifecycle sink the test chooses, receivers that take its
// CloudEvents as a customer's service would (an HTTP endpoint checking
// the Standard Webhooks signature with the reference library, a RabbitMQ
// queue), and the outbox read from the data directory once the node is
// down.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ankusa/ankusa/internal/rabbittest"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
)

// lcSecret signs the HTTP lifecycle sink's deliveries (Standard Webhooks
// form: whsec_ and base64 of the key).
const lcSecret = "whsec_bGlmZWN5Y2xlLXNpbmstc2VjcmV0LWtleQ=="

// lcSharedSource is the config's shared source, the one the API's routes
// point at.
const lcSharedSource = "lc-shared"

// lcYAML: opaque catch URLs (the token resolver, so routes take tokens),
// API-managed sources and routes, an ops token that may also set rate
// limits, the lifecycle sink %[6]s (a flow mapping), one shared source.
// %[1]s is the node's name, %[2]s its data_dir, %[3]s and %[4]s its
// listen and admin addresses, %[5]s the ops token's digest.
const lcYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin:
  listen: %[4]s
  tokens:
    - {name: ops, sha256: %[5]s, scopes: ["tenant:*", "tenants:write"]}
route_resolver: {type: token, path: /webhooks/catch/:token}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
log: {level: warn, format: json}
lifecycle:
  sink: %[6]s
sources:
  ` + lcSharedSource + `:
    verify: {type: hmac, header: X-Signature, algorithm: sha256, encoding: hex, secret: "lc-shared-secret-1f0e"}
`

// newLifecycleNode writes lcYAML for a node called name whose lifecycle
// sink is sink, and has check-config accept it.
func newLifecycleNode(t *testing.T, name, sink string) *apiNode {
	t.Helper()
	tn := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(lcYAML, name, n.dataDir, n.listen, n.admin, sha256Hex(opsToken), sink)
	})
	n := &apiNode{testNode: tn, t: t, c: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(n.c.CloseIdleConnections)
	return n
}

// lcHTTPSink is the lifecycle sink spec of an HTTP receiver at addr,
// signed with lcSecret, retrying quickly (retry_max caps the wait between
// attempts).
func lcHTTPSink(addr, retryMax string) string {
	return fmt.Sprintf(`{type: http, url: "http://%s/events", secret: "%s", allow_private: true, retry_base: 10ms, retry_max: %s, timeout: 5s}`, addr, lcSecret, retryMax)
}

// cloudEvent is a lifecycle event as a receiver decodes it.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            string          `json:"time"`
	Tenant          string          `json:"tenant"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// arrival is one delivery a receiver took (acknowledged).
type arrival struct {
	ev   cloudEvent
	body []byte
}

// eventLog is what a receiver took, in arrival order, and what was wrong
// with it.
type eventLog struct {
	node    string // the sender's node.name: events' source is ankusa://<node>
	mu      sync.Mutex
	got     []arrival
	ids     map[string]int // event id -> deliveries taken
	refused int            // deliveries the receiver answered with an error
	bad     []string
}

func newEventLog(node string) *eventLog { return &eventLog{node: node, ids: map[string]int{}} }

// take records a delivery of body whose transport metadata says id and
// tenant and content type ct; it checks the CloudEvents envelope.
func (l *eventLog) take(body []byte, id, tenant, ct string) {
	var ev cloudEvent
	err := json.Unmarshal(body, &ev)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.bad = append(l.bad, fmt.Sprintf("delivery %s is not JSON: %v: %q", id, err, body))
		return
	case ev.SpecVersion != "1.0" || ev.Source != lifecycle.Source(l.node) || ev.DataContentType != "application/json" || !strings.HasPrefix(ev.Type, "io.ankusa."):
		l.bad = append(l.bad, fmt.Sprintf("event %s: specversion %q source %q datacontenttype %q type %q", ev.ID, ev.SpecVersion, ev.Source, ev.DataContentType, ev.Type))
	case ev.ID != id || ev.Tenant != tenant:
		l.bad = append(l.bad, fmt.Sprintf("event %s of tenant %q came with id %q tenant %q", ev.ID, ev.Tenant, id, tenant))
	case ct != lifecycle.ContentType:
		l.bad = append(l.bad, fmt.Sprintf("event %s came as %q, want %q", ev.ID, ct, lifecycle.ContentType))
	}
	if _, err := time.Parse(time.RFC3339Nano, ev.Time); err != nil {
		l.bad = append(l.bad, fmt.Sprintf("event %s: time %q is not RFC 3339", ev.ID, ev.Time))
	}
	l.got = append(l.got, arrival{ev: ev, body: append([]byte(nil), body...)})
	l.ids[ev.ID]++
}

// unique is how many distinct events arrived.
func (l *eventLog) unique() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// snapshot is a copy of the arrivals and of the problems found.
func (l *eventLog) snapshot() (got []arrival, refused int, bad []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]arrival(nil), l.got...), l.refused, append([]string(nil), l.bad...)
}

// lcReceiver is the HTTP endpoint of the lifecycle sink: it verifies each
// delivery's Standard Webhooks signature with the reference library,
// answers 204 and logs it; down makes it answer 503, flaky refuses one in
// every flaky deliveries (0: none).
type lcReceiver struct {
	*eventLog
	addr  string
	wh    *standardwebhooks.Webhook
	down  atomic.Bool
	flaky atomic.Int64
	seen  atomic.Int64 // every delivery, refused ones too
}

func newLCReceiver(t *testing.T, node string) *lcReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(lcSecret)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &lcReceiver{eventLog: newEventLog(node), addr: ln.Addr().String(), wh: wh}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *lcReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	n := r.seen.Add(1)
	if f := r.flaky.Load(); r.down.Load() || f > 0 && n%f == 0 {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	id := req.Header.Get("webhook-id")
	if err := r.wh.Verify(body, req.Header); err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("delivery %s: the Standard Webhooks signature does not verify: %v", id, err))
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if req.URL.Path != "/events" || req.Header.Get("x-ankusa-event-id") != id || req.Header.Get("x-ankusa-source") != lifecycle.SourceID {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("delivery %s to %s: x-ankusa-event-id %q x-ankusa-source %q", id, req.URL.Path,
			req.Header.Get("x-ankusa-event-id"), req.Header.Get("x-ankusa-source")))
		r.mu.Unlock()
	}
	r.take(body, id, req.Header.Get("x-ankusa-tenant"), req.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusNoContent)
}

// lcRabbit is the RabbitMQ side of the lifecycle sink: an exchange and a
// queue bound to it that the test declares, consumed until the test ends.
type lcRabbit struct {
	*eventLog
	exchange, queue string
}

// newLCRabbit declares a direct exchange and a queue bound to it with the
// lifecycle sink's routing key, and consumes the queue.
func newLCRabbit(t *testing.T, node string) *lcRabbit {
	t.Helper()
	b := rabbittest.New(t)
	r := &lcRabbit{eventLog: newEventLog(node), exchange: b.Exchange("direct")}
	r.queue = b.Queue(nil, r.exchange, "lifecycle-events")
	deliveries, stop := b.Consume(r.queue, 1000, true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			tenant, _ := d.Headers["x-ankusa-tenant"].(string)
			r.checkMessage(&d)
			r.take(d.Body, d.MessageId, tenant, d.ContentType)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return r
}

// checkMessage checks what the RabbitMQ sink says of a message besides
// its body.
func (r *lcRabbit) checkMessage(d *amqp.Delivery) {
	id, _ := d.Headers["x-ankusa-event-id"].(string)
	src, _ := d.Headers["x-ankusa-source"].(string)
	if id != d.MessageId || src != lifecycle.SourceID || d.Exchange != r.exchange || d.RoutingKey != "lifecycle-events" {
		r.mu.Lock()
		r.bad = append(r.bad, fmt.Sprintf("message %s: x-ankusa-event-id %q x-ankusa-source %q exchange %q routing key %q", d.MessageId, id, src, d.Exchange, d.RoutingKey))
		r.mu.Unlock()
	}
}

// sinkSpec is the lifecycle sink spec that publishes to r's exchange.
func (r *lcRabbit) sinkSpec() string {
	return fmt.Sprintf(`{type: rabbitmq, url: %q, exchange: %q, routing_key: lifecycle-events, retry_base: 10ms, retry_max: 200ms, timeout: 5s}`, rabbittest.URL(), r.exchange)
}

// readOutbox opens the stopped node's meta store and returns every event
// of its outbox in seq order, and the publisher's checkpoint.
func readOutbox(t *testing.T, n *testNode) (events []meta.EventRecord, published uint64) {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(n.dataDir, "meta")})
	if err != nil {
		t.Fatalf("cannot open the node's meta store: %v", err)
	}
	defer ms.Close()
	err = ms.Events(0, math.MaxUint64, func(ev *meta.EventRecord) (bool, error) {
		events = append(events, *ev)
		return false, nil
	})
	if err != nil {
		t.Fatalf("cannot read the outbox: %v", err)
	}
	if published, err = ms.EventsPublished(); err != nil {
		t.Fatalf("cannot read the publisher's checkpoint: %v", err)
	}
	return events, published
}

// checkReceived holds what a receiver took to the outbox: every event
// arrived at least once (by CloudEvent id), each arrival is an outbox
// event exactly as Render makes it, and the first arrivals of the events
// come in outbox order, so per entity too. It returns how many
// deliveries repeated an event already taken.
func checkReceived(t *testing.T, what string, l *eventLog, outbox []meta.EventRecord) (dups int) {
	t.Helper()
	got, _, bad := l.snapshot()
	for _, b := range bad {
		t.Errorf("%s: %s", what, b)
	}
	byID := make(map[string]*meta.EventRecord, len(outbox))
	for i := range outbox {
		byID[outbox[i].ID.String()] = &outbox[i]
	}
	first := map[string]bool{}
	var lastSeq uint64
	lastOf := map[string]uint64{} // entity -> seq of its last event first seen
	for _, a := range got {
		rec := byID[a.ev.ID]
		if rec == nil {
			t.Errorf("%s: event %s (%s %s of %s) is not in the outbox", what, a.ev.ID, a.ev.Type, a.ev.Subject, a.ev.Tenant)
			continue
		}
		if want := lifecycle.Render(rec, l.node); string(a.body) != string(want) {
			t.Errorf("%s: event %s arrived as\n  %s\nthe outbox renders it\n  %s", what, a.ev.ID, a.body, want)
		}
		if first[a.ev.ID] {
			dups++
			continue
		}
		first[a.ev.ID] = true
		ent := entityOf(rec)
		if rec.Seq <= lastOf[ent] {
			t.Errorf("%s: event %d of %s first arrived after its event %d", what, rec.Seq, ent, lastOf[ent])
		}
		lastOf[ent] = rec.Seq
		if rec.Seq < lastSeq {
			t.Errorf("%s: event %d first arrived after event %d: the publisher sends in outbox order", what, rec.Seq, lastSeq)
		}
		lastSeq = max(lastSeq, rec.Seq)
	}
	missing := 0
	for i := range outbox {
		if !first[outbox[i].ID.String()] {
			if missing++; missing <= 10 {
				t.Errorf("%s: outbox event %d (%s %s %s of %s) never arrived", what, outbox[i].Seq, outbox[i].ID, outbox[i].Type, outbox[i].Subject, outbox[i].Tenant)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d outbox events never arrived", what, missing, len(outbox))
	}
	return dups
}

// entityOf names the entity an event is about: tenant, kind, subject.
func entityOf(ev *meta.EventRecord) string {
	kind := strings.TrimPrefix(ev.Type, "io.ankusa.")
	kind = kind[:max(strings.LastIndexByte(kind, '.'), 0)]
	return ev.Tenant + "/" + kind + "/" + ev.Subject
}

// lcMetrics reads the lifecycle series from the node's /metrics.
type lcMetrics struct {
	lagEvents, lagSeconds, failures, published, written float64
}

func readLCMetrics(t *testing.T, admin string) lcMetrics {
	t.Helper()
	_, text, _ := getMetrics(t, http.DefaultClient, admin)
	m := parseExposition(t, text)
	for _, k := range []string{"ankusa_lifecycle_lag_events", "ankusa_lifecycle_lag_seconds", "ankusa_lifecycle_publish_failures_total",
		"ankusa_lifecycle_events_published_total", "ankusa_lifecycle_events_written_total"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("/metrics has no %s", k)
		}
	}
	return lcMetrics{lagEvents: m["ankusa_lifecycle_lag_events"], lagSeconds: m["ankusa_lifecycle_lag_seconds"],
		failures: m["ankusa_lifecycle_publish_failures_total"], published: m["ankusa_lifecycle_events_published_total"],
		written: m["ankusa_lifecycle_events_written_total"]}
}

// waitCaughtUp waits until the node's publisher has no lag.
func waitCaughtUp(t *testing.T, p *proc, admin string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if p.exited() {
			t.Fatalf("the node exited:\n%s", p.stderr)
		}
		m := readLCMetrics(t, admin)
		if m.lagEvents == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lifecycle publisher still lags %v events (%.1fs) after %s", m.lagEvents, m.lagSeconds, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
