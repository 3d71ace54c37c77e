package main

// A node with sinks and a local receiver that checks every delivery the
// way a customer's service would: its Standard Webhooks signature, with
// the independent reference library.

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Secrets of the two HTTP sinks of twoSinksYAML (Standard Webhooks
// form: whsec_ and base64 of the key).
const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_c2Vjb25kLXNpbmstc2VjcmV0LWtleS0xMjM0NQ=="
)

// dispatchNodeYAML is the head of the dispatch tests' configs: tenant
// routing, the ops token, rates no test reaches, a disk WAL, segments
// sealed after 200ms, and the shared source open, trusting the URL's
// tenant, whose sinks follow. %[1]s is the node's name, %[2]s its
// data_dir, %[3]s and %[4]s its listen and admin addresses, %[5]s the ops
// token's digest.
const dispatchNodeYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin:
  listen: %[4]s
  tokens:
    - {name: ops, sha256: %[5]s, scopes: ["tenant:*"]}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_age: 200ms}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
    sinks:
`

// twoSinksYAML: the sinks of source open of newDispatchNode2, a to the
// receiver at %[1]s and b to the one at %[3]s, each sink's path and
// tenant in the URL template; %[2]s and %[4]s are extra keys of sinks a
// and b.
const twoSinksYAML = `      - {id: a, type: http, url: "http://%[1]s/a/{tenant_id}", secret: "` + secretA + `", allow_private: true, format: raw%[2]s}
      - {id: b, type: http, url: "http://%[3]s/b/{tenant_id}", secret: "` + secretB + `", allow_private: true, format: envelope%[4]s}
`

// newDispatchNode writes a config whose sinks deliver to recv.
func newDispatchNode(t *testing.T, recv *receiver, sinkKeys string) *testNode {
	t.Helper()
	return newDispatchNode2(t, recv, sinkKeys, recv, sinkKeys)
}

// newDispatchNode2 writes a config whose sink a delivers to recvA and sink
// b to recvB, with their own extra keys.
func newDispatchNode2(t *testing.T, recvA *receiver, keysA string, recvB *receiver, keysB string) *testNode {
	t.Helper()
	return newDispatchConfigNode(t, "edge-dispatch-test", fmt.Sprintf(twoSinksYAML, recvA.addr, keysA, recvB.addr, keysB))
}

// newDispatchConfigNode writes the config dispatchNodeYAML heads, for a
// node called name, with rest after it: the sinks of source open, then
// any other sources.
func newDispatchConfigNode(t *testing.T, name, rest string) *testNode {
	t.Helper()
	return newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(dispatchNodeYAML, name, n.dataDir, n.listen, n.admin, sha256Hex(opsToken)) + rest
	})
}

// newConfiguredNode gives a node a fresh temporary directory, its data
// directory and free listen and admin addresses, writes the config that
// yaml makes of them, and checks it with check-config.
func newConfiguredNode(t *testing.T, yaml func(n *testNode) string) *testNode {
	t.Helper()
	dir := t.TempDir()
	n := &testNode{dir: dir, config: filepath.Join(dir, "ankusa.yaml"), dataDir: filepath.Join(dir, "data"), listen: freeAddr(t), admin: freeAddr(t)}
	if err := os.WriteFile(n.config, []byte(yaml(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, dir, "check-config", "-config", n.config); code != 0 {
		t.Fatalf("the test's own config does not check (exit %d):\n%s", code, stderr)
	}
	return n
}

// receiver is a customer's webhook service. Paths are /<sink>/<tenant>.
type receiver struct {
	t    *testing.T
	addr string
	srv  *http.Server
	wh   map[string]*standardwebhooks.Webhook
	// status decides the answer to a delivery (0: 204).
	status atomic.Pointer[func(sink, tenant string) int]

	mu    sync.Mutex
	got   map[string]int       // "<sink>/<event id>" -> deliveries answered 2xx
	first map[string]time.Time // "<sink>/<event id>" -> first 2xx
	tries map[string]int       // "<sink>/<event id>" -> every delivery
	bodyH map[string][32]byte  // "<sink>/<event id>" -> sha256 of the raw body (sink a)
	bad   []string
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, addr: ln.Addr().String(), wh: map[string]*standardwebhooks.Webhook{},
		got: map[string]int{}, first: map[string]time.Time{}, tries: map[string]int{}, bodyH: map[string][32]byte{}}
	for sink, secret := range map[string]string{"a": secretA, "b": secretB} {
		if r.wh[sink], err = standardwebhooks.NewWebhook(secret); err != nil {
			t.Fatal(err)
		}
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

// down closes the receiver's listener and connections: the receiver is
// gone (connection refused).
func (r *receiver) down() {
	r.t.Helper()
	if err := r.srv.Close(); err != nil {
		r.t.Fatal(err)
	}
}

// up listens again on the same address.
func (r *receiver) up() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("cannot listen on %s again: %v", r.addr, err)
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	srv := r.srv
	r.t.Cleanup(func() { srv.Close() })
}

func (r *receiver) setStatus(f func(sink, tenant string) int) { r.status.Store(&f) }

func (r *receiver) fail(format string, a ...any) {
	r.mu.Lock()
	r.bad = append(r.bad, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	sink, tenant, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	id := req.Header.Get("x-ankusa-event-id")
	key := sink + "/" + id
	r.mu.Lock()
	r.tries[key]++
	r.mu.Unlock()
	if f := r.status.Load(); f != nil {
		if st := (*f)(sink, tenant); st != 0 {
			w.WriteHeader(st)
			return
		}
	}
	wh := r.wh[sink]
	switch {
	case wh == nil:
		r.fail("delivery to unknown path %s", req.URL.Path)
	case wh.Verify(body, req.Header) != nil:
		r.fail("%s: the Standard Webhooks signature does not verify: %v", key, wh.Verify(body, req.Header))
		w.WriteHeader(http.StatusUnauthorized)
		return
	case req.Header.Get("webhook-id") != id || req.Header.Get("x-ankusa-tenant") != tenant || req.Header.Get("x-ankusa-source") != "open":
		r.fail("%s: metadata headers disagree: webhook-id %q tenant %q (path %q) source %q", key, req.Header.Get("webhook-id"), req.Header.Get("x-ankusa-tenant"), tenant, req.Header.Get("x-ankusa-source"))
	}
	if sink == "b" {
		var env struct {
			ID       string `json:"id"`
			TenantID string `json:"tenant_id"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.ID != id || env.TenantID != tenant {
			r.fail("%s: the envelope body does not name the hook: %v %q", key, err, body)
		}
	}
	r.mu.Lock()
	if r.got[key] == 0 {
		r.first[key] = time.Now()
		if sink == "a" {
			r.bodyH[key] = sha256.Sum256(body)
		}
	}
	r.got[key]++
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// missing counts the (sink, ack) pairs not delivered yet.
func (r *receiver) missing(acks []ack, sinks ...string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := 0
	for _, a := range acks {
		for _, s := range sinks {
			if r.got[s+"/"+a.id] == 0 {
				m++
			}
		}
	}
	return m
}

// waitDelivered waits until every ack reached every sink.
func (r *receiver) waitDelivered(t *testing.T, p *proc, acks []ack, within time.Duration, sinks ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		m := r.missing(acks, sinks...)
		if m == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries missing after %v\nnode log:\n%s", m, len(acks)*len(sinks), within, tail(p.stderr.String(), 3000))
		}
		if p != nil && p.exited() {
			t.Fatalf("the node exited with %d while %d deliveries were missing:\n%s", p.state.ExitCode(), m, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkClean fails the test on anything the receiver found wrong and
// returns the number of duplicate deliveries.
func (r *receiver) checkClean(t *testing.T, acks []ack) (dups int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("%d bad deliveries, first: %s", len(r.bad), strings.Join(r.bad[:min(5, len(r.bad))], "\n"))
	}
	for _, a := range acks {
		if h, ok := r.bodyH["a/"+a.id]; ok && h != sha256.Sum256(a.body) {
			t.Fatalf("hook %s: the raw body delivered is not the body sent", a.id)
		}
		for _, s := range []string{"a", "b"} {
			dups += max(0, r.got[s+"/"+a.id]-1)
		}
	}
	return dups
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// sendHooks posts count hooks from workers senders over tenants and
// returns the acknowledged ones.
func sendHooks(t *testing.T, listen string, count, workers int, tenant func(i int) string) []ack {
	t.Helper()
	var next atomic.Int64
	var mu sync.Mutex
	var acks []ack
	var bad []string
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				tn := tenant(i)
				body := fmt.Appendf(nil, `{"id":"evt_%d","type":"invoice.paid","tenant":%q,"n":%d}`, i, tn, i)
				a, status, text, err := post(client, "http://"+listen+"/webhooks/"+tn+"/open", body)
				mu.Lock()
				if err != nil || status != http.StatusCreated {
					bad = append(bad, fmt.Sprintf("hook %d: %d %s %v", i, status, text, err))
				} else {
					a.tenant, a.source, a.body = tn, "open", body
					acks = append(acks, a)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d hooks not acknowledged, first: %s", len(bad), bad[0])
	}
	return acks
}

// Acceptance 1: 50k hooks across 20 tenants, two sinks each, all
// delivered; each Standard Webhooks signature verified by the reference
// library; duplicates counted.
func TestDispatchDeliversEverything(t *testing.T) {
	recv := newReceiver(t)
	n := newDispatchNode(t, recv, "")
	p := n.serve(t)
	const count = 50_000
	start := time.Now()
	acks := sendHooks(t, n.listen, count, 32, func(i int) string { return fmt.Sprintf("tenant-%02d", i%20) })
	sent := time.Since(start)
	recv.waitDelivered(t, p, acks, 2*time.Minute, "a", "b")
	all := time.Since(start)
	dups := recv.checkClean(t, acks)
	t.Logf("%d hooks over 20 tenants: sent in %v, all %d deliveries done %v after the first send; %d duplicates", count, sent.Round(time.Millisecond), 2*count, all.Round(time.Millisecond), dups)
	if dups != 0 {
		t.Errorf("%d duplicate deliveries in a clean run (at least once allows them, but a clean run should have none)", dups)
	}
	checkDispatchMetrics(t, n, count+dups)
	p.stop()
}

// checkDispatchMetrics reads /metrics once every delivery is done: the
// attempts by sink and outcome, the backlog by state, the delivery latency
// histogram and the dead letters.
func checkDispatchMetrics(t *testing.T, n *testNode, delivered int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var text string
	for {
		ans := newAdminClient(t, n.admin).get("/metrics", "")
		text = string(ans.body)
		if strings.Contains(text, `ankusa_dispatch_backlog{state="pending"} 0`+"\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{
		fmt.Sprintf(`ankusa_dispatch_attempts_total{sink="open/a",outcome="delivered"} %d`, delivered),
		fmt.Sprintf(`ankusa_dispatch_attempts_total{sink="open/b",outcome="delivered"} %d`, delivered),
		`ankusa_dispatch_backlog{state="pending"} 0`,
		`ankusa_dispatch_backlog{state="in_flight"} 0`,
		`ankusa_dispatch_backlog{state="dead"} 0`,
		`ankusa_dispatch_dead_letters_total 0`,
		fmt.Sprintf(`ankusa_dispatch_delivery_seconds_count %d`, 2*delivered),
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
