package main

// wal.type: none (DESIGN.md §2.4): no log on the node, so a hook is
// answered 201 only once a durable sink (RabbitMQ, publisher confirms)
// has it, and 503 when it does not; boot refuses a source without one.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
)

// Acceptance 7a: `ankusa serve` (not only check-config) with wal.type:
// none refuses, exit 78, a config with sources that have no durable sink,
// naming each of them, and creates nothing.
func TestWALNoneServeRefusesSourceWithoutDurableSink(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ankusa.yaml")
	data := filepath.Join(dir, "data")
	yaml := `node: {name: wal-none-refused, data_dir: ` + data + `}
listen: ` + freeAddr(t) + `
admin: {listen: ` + freeAddr(t) + `}
route_resolver: {type: tenantpath}
rate_limits: {default: {rate: 5, burst: 5}}
wal: {type: none}
sources:
  web-only:
    verify: {type: none}
    trust_url_tenant: true
    sinks: [{type: http, url: "https://receiver.example.com/{tenant_id}"}]
  no-sinks:
    verify: {type: none}
    trust_url_tenant: true
  orders:
    verify: {type: none}
    trust_url_tenant: true
    sinks: [{type: rabbitmq, url: "amqp://guest:guest@127.0.0.1:5672/", exchange: hooks}]
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBin(t, dir, "serve", "-config", cfg)
	for _, want := range []string{"sources.web-only.sinks: wal.type is none", "sources.no-sinks.sinks: wal.type is none"} {
		if code != exitConfig || !strings.Contains(stderr, want) {
			t.Fatalf("serve: exit %d, stderr:\n%s\nwant %d and %q", code, stderr, exitConfig, want)
		}
	}
	if strings.Contains(stderr, "sources.orders") {
		t.Fatalf("serve named sources.orders, which has a durable sink:\n%s", stderr)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("serve created %s for a config it refused (stat: %v)", data, err)
	}
	t.Logf("exit %d:\n%s", code, strings.TrimSpace(stderr))
}

// walNoneYAML: no WAL; source orders publishes to exchange %[5]s, source
// capped to %[6]s (default routing key ankusa.<source>).
const walNoneYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin: {listen: %[4]s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: none}
log: {level: warn, format: json}
sources:
  orders:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {id: mq, type: rabbitmq, url: %[7]q, exchange: %[5]q, connect_timeout: 2s, timeout: 3s}
  capped:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
      - {id: mq, type: rabbitmq, url: %[7]q, exchange: %[6]q, connect_timeout: 2s, timeout: 3s}
`

// answered is one hook and the node's answer.
type answered struct {
	tenant, source string
	body           []byte
	status         int
	id             string // from a 201
	text           string
	retryAfter     string
	start, end     time.Time
	err            error
}

// postHook sends one hook and reads the answer; a 201 must carry an
// evt_ id.
func postHook(client *http.Client, listen, tenant, source string, body []byte) answered {
	a := answered{tenant: tenant, source: source, body: body, start: time.Now()}
	resp, err := client.Post("http://"+listen+"/webhooks/"+tenant+"/"+source, "application/json", bytes.NewReader(body))
	if err != nil {
		a.err, a.end = err, time.Now()
		return a
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.end, a.status, a.text, a.retryAfter, a.err = time.Now(), resp.StatusCode, string(b), resp.Header.Get("Retry-After"), err
	if a.status == http.StatusCreated {
		var v struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			a.err = fmt.Errorf("201 %s: %v", b, err)
		} else if _, err := envelope.ParseID([]byte(v.ID)); err != nil {
			a.err = fmt.Errorf("201 %s: the id is not an evt_ id: %v", b, err)
		}
		a.id = v.ID
	}
	return a
}

func (a answered) ack() ack {
	return ack{id: a.id, tenant: a.tenant, source: a.source, body: a.body, at: a.end}
}

func (a answered) is503() bool {
	return a.err == nil && a.status == http.StatusServiceUnavailable && strings.Contains(a.text, `"error":"unavailable"`) && a.retryAfter != ""
}

func (a answered) String() string {
	return fmt.Sprintf("POST /webhooks/%s/%s: %d %s (Retry-After %q) %v", a.tenant, a.source, a.status, a.text, a.retryAfter, a.err)
}

// idOf parses a 201's id.
func idOf(t *testing.T, a answered) envelope.ID {
	t.Helper()
	id, err := envelope.ParseID([]byte(a.id))
	if err != nil {
		t.Fatalf("%v: %v", a, err)
	}
	return id
}

// waitLog waits until the node's log holds s.
func waitLog(t *testing.T, p *proc, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(p.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("the node's log does not say %q after %v:\n%s", s, within, tail(p.stderr.String(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Acceptance 7b: with wal.type: none a hook is answered 201 only once the
// broker confirmed it: every 201'd id is in the queue. A missing exchange,
// an exchange with no queue bound, an exchange deleted while 8 senders
// post, and a full queue that rejects publishes are each answered 503
// (unavailable, Retry-After); the 201s resume when the exchange is back.
// A restart (SIGTERM) keeps the numbering above what was handed out.
func TestWALNoneAcksOnlyConfirmed(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Name("x") // declared later: missing at first
	q := b.Queue(nil, "")
	x2 := b.Exchange("direct")
	q2 := b.Queue(amqp.Table{"x-max-length": int32(3), "x-overflow": "reject-publish"}, x2, "ankusa.capped")

	n := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(walNoneYAML, fmt.Sprintf("wal-none-%08x", rand.Uint32()), n.dataDir, n.listen, n.admin, x, x2, rabbittest.URL())
	})
	p := n.serve(t)
	client := &http.Client{Timeout: 15 * time.Second}
	defer client.CloseIdleConnections()
	var acked []answered // every 201 of source orders
	seq := 0
	send := func(source string) answered {
		seq++
		return postHook(client, n.listen, "acme", source, fmt.Appendf(nil, `{"n":%d,"source":%q}`, seq, source))
	}

	// 1. The exchange does not exist: 503.
	for range 3 {
		if a := send("orders"); !a.is503() {
			t.Fatalf("exchange %s missing: %v, want 503 unavailable with Retry-After", x, a)
		}
	}
	waitLog(t, p, "NOT_FOUND", 5*time.Second)

	// 2. It exists but no queue is bound: the broker returns the
	// (mandatory) message, 503 again.
	b.DeclareExchange(x, "direct")
	for start := time.Now(); !strings.Contains(p.stderr.String(), "unroutable"); {
		if a := send("orders"); !a.is503() {
			t.Fatalf("exchange %s with no queue bound: %v, want 503", x, a)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no hook was refused as unroutable in 10s:\n%s", tail(p.stderr.String(), 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 3. Bound: 201 once the sink's channels are back.
	b.Bind(q, x, "ankusa.orders")
	cons := consume(t, b, q)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		a := send("orders")
		if a.status == http.StatusCreated && a.err == nil {
			acked = append(acked, a)
			break
		}
		if !a.is503() || time.Since(start) > 15*time.Second {
			t.Fatalf("exchange %s bound to %s: %v, want 201 within 15s", x, q, a)
		}
	}

	// 4. 8 senders; the exchange is deleted under them, then declared and
	// bound again.
	var (
		mu      sync.Mutex
		results []answered
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		n201    atomic.Int64
	)
	for w := range 8 {
		wg.Go(func() {
			c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tn := fmt.Sprintf("t%d", w%4)
				a := postHook(c, n.listen, tn, "orders", fmt.Appendf(nil, `{"sender":%d,"i":%d}`, w, i))
				mu.Lock()
				results = append(results, a)
				mu.Unlock()
				if a.status == http.StatusCreated {
					n201.Add(1)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	halted := false
	halt := func() {
		if !halted {
			halted = true
			close(stop)
			wg.Wait()
		}
	}
	defer halt()
	count := func(since time.Time, ok func(answered) bool) int {
		mu.Lock()
		defer mu.Unlock()
		c := 0
		for _, a := range results {
			if a.start.After(since) && ok(a) {
				c++
			}
		}
		return c
	}
	is201 := func(a answered) bool { return a.status == http.StatusCreated }
	waitCount := func(what string, since time.Time, ok func(answered) bool, want int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for count(since, ok) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d after %v, want %d\n%s", what, count(since, ok), within, want, tail(p.stderr.String(), 3000))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	loadStart := time.Now()
	waitCount("201s under load", loadStart, is201, 300, 10*time.Second)
	time.Sleep(time.Until(loadStart.Add(500 * time.Millisecond)))
	b.DeleteExchange(x)
	deleted := time.Now()
	waitCount("503s after the exchange was deleted", deleted, answered.is503, 50, 5*time.Second)
	time.Sleep(500 * time.Millisecond)
	b.DeclareExchange(x, "direct")
	b.Bind(q, x, "ankusa.orders")
	restored := time.Now()
	waitCount("201s after the exchange is back", restored, is201, 200, 20*time.Second)
	halt()

	var bad []string
	n503, late201 := 0, 0
	for _, a := range results {
		switch {
		case a.err == nil && a.status == http.StatusCreated:
			acked = append(acked, a)
			if a.start.After(deleted) && a.end.Before(restored) {
				late201++ // sent after the delete, answered before the restore: impossible
			}
		case a.is503():
			n503++
		default:
			bad = append(bad, a.String())
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d answers that are neither 201 nor 503 unavailable, first: %s", len(bad), bad[0])
	}
	if late201 > 0 {
		t.Fatalf("%d hooks sent after the exchange was deleted were answered 201 before it was back", late201)
	}

	// 5. A full queue rejects publishes (basic.nack): 503.
	var capped []answered
	for i := range 5 {
		a := send("capped")
		switch {
		case i < 3 && a.status == http.StatusCreated && a.err == nil:
			capped = append(capped, a)
		case i >= 3 && a.is503():
		default:
			t.Fatalf("capped hook %d (queue max-length 3, reject-publish): %v, want 201 for the first 3, then 503", i+1, a)
		}
	}
	waitLog(t, p, "nacked", 5*time.Second)

	// Every 201 is in its queue, once.
	ids := make([]string, len(acked))
	byID := map[string]answered{}
	for i, a := range acked {
		ids[i] = a.id
		byID[a.id] = a
	}
	if missing := cons.waitAll(ids, 10*time.Second, 300*time.Millisecond); len(missing) > 0 {
		t.Fatalf("%d of %d hooks answered 201 are not in the queue, first %v", len(missing), len(ids), byID[missing[0]])
	}
	msgs, inQueue := cons.snapshot()
	extra := 0
	for id, idx := range inQueue {
		if len(idx) != 1 {
			t.Fatalf("hook %s is in the queue %d times; without a WAL nothing is retried", id, len(idx))
		}
		m := msgs[idx[0]]
		a, ok := byID[id]
		if !ok {
			extra++ // answered 503, yet the broker had it: the provider's retry makes a new hook
			tn, _ := m.delivery.Headers["x-ankusa-tenant"].(string)
			a = answered{tenant: tn, source: "orders"}
			var e envelope.Envelope
			if err := e.UnmarshalJSON(m.body); err == nil {
				a.body = e.Body
			}
		}
		if err := checkMessage(m, a.ack()); err != nil || m.attempt != 1 {
			t.Fatalf("attempt %d: %v", m.attempt, err)
		}
	}
	c2 := consume(t, b, q2)
	var cappedIDs []string
	for _, a := range capped {
		cappedIDs = append(cappedIDs, a.id)
	}
	if missing := c2.waitAll(cappedIDs, 5*time.Second, 300*time.Millisecond); len(missing) > 0 || c2.count() != 3 {
		t.Fatalf("capped queue: %d messages, missing %v of the 201'd %v", c2.count(), missing, cappedIDs)
	}

	// 6. SIGTERM writes the numbering floor: after a restart seqs and ids
	// continue above everything handed out.
	var maxID envelope.ID
	for _, a := range append(acked, capped...) {
		if id := idOf(t, a); bytes.Compare(id[:], maxID[:]) > 0 {
			maxID = id
		}
	}
	var maxSeq uint64
	for _, a := range append(acked, capped...) {
		maxSeq = max(maxSeq, idOf(t, a).Seq())
	}
	p.stop()
	p = n.serve(t)
	var after []answered
	for i := range 3 {
		a := send("orders")
		if a.status != http.StatusCreated || a.err != nil {
			t.Fatalf("after the restart, hook %d: %v", i, a)
		}
		id := idOf(t, a)
		if id.Seq() <= maxSeq || bytes.Compare(id[:], maxID[:]) <= 0 {
			t.Fatalf("after the restart: id %s (seq %d), not above %v (highest seq before: %d)", a.id, id.Seq(), maxID, maxSeq)
		}
		maxSeq, maxID = id.Seq(), id
		after = append(after, a)
	}
	var afterIDs []string
	for _, a := range after {
		afterIDs = append(afterIDs, a.id)
	}
	if missing := cons.waitAll(afterIDs, 5*time.Second, 0); len(missing) > 0 {
		t.Fatalf("after the restart: %v answered 201 but not in the queue", missing)
	}
	p.stop()

	t.Logf("under load: %d answers, %d 201 (all %d in the queue once), %d 503 unavailable; %d messages of 503'd hooks are in the queue too (at-least-once)",
		len(results), n201.Load(), len(acked), n503, extra)
	t.Logf("exchange deleted %v after the load started, back %v later; 201s resumed; capped queue: 3 201 then 503 (nack); after the restart seqs continue at %d",
		deleted.Sub(loadStart).Round(time.Millisecond), restored.Sub(deleted).Round(time.Millisecond), idOf(t, after[0]).Seq())
}
