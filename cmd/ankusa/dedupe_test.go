package main

// Dedupe end to end: 10k hooks with 30% repeated keys, sent concurrently,
// in node scope (one node, then across its restart) and in fleet scope
// (two nodes sharing the real Redis). Each key is stored once; a
// duplicate answers 200 with the original id; keys expire after ttl.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
)

// dedupeYAML: %[1]s node name, %[2]s data_dir, %[3]s listen, %[4]s admin,
// %[5]s dedupe scope, %[6]s redis url, %[7]s redis namespace.
const dedupeYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin: {listen: %[4]s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_age: 200ms}
log: {level: warn, format: json}
dedupe: {scope: %[5]s, ttl: 1h}
redis: {url: "%[6]s", namespace: "%[7]s"}
sources:
  dd:
    verify: {type: none}
    trust_url_tenant: true
    dedupe: {key: "json:id"}
  short:
    verify: {type: none}
    trust_url_tenant: true
    dedupe: {key: "header:X-Delivery", ttl: 2s}
`

func newDedupeNode(t *testing.T, name, scope, redisURL, ns string) *testNode {
	return newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(dedupeYAML, name, n.dataDir, n.listen, n.admin, scope, redisURL, ns)
	})
}

// dedupeAnswer is one answer to a hook with a dedupe key.
type dedupeAnswer struct {
	status int
	id     string
	dup    bool
}

func postKeyed(c *http.Client, url string, body []byte, header string) (dedupeAnswer, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return dedupeAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set("X-Delivery", header)
	}
	resp, err := c.Do(req)
	if err != nil {
		return dedupeAnswer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID        string `json:"id"`
		Duplicate bool   `json:"duplicate"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return dedupeAnswer{}, fmt.Errorf("%d %q: %v", resp.StatusCode, b, err)
	}
	return dedupeAnswer{status: resp.StatusCode, id: v.ID, dup: v.Duplicate}, nil
}

// keyedHook is one hook of the dedupe run: its tenant and key.
type keyedHook struct{ tenant, key string }

// dedupeRun sends 10k hooks over 10 tenants, 7000 distinct keys and 3000
// repeats of them, shuffled, from 16 senders, each hook to one of
// listens at random, and checks every key got one 201 and only
// duplicates of it after. It returns the id each key was stored as.
func dedupeRun(t *testing.T, listens []string) map[keyedHook]string {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var hooks []keyedHook
	for i := 0; i < 7000; i++ {
		hooks = append(hooks, keyedHook{fmt.Sprintf("t%d", i%10), fmt.Sprintf("evt_%06d", i)})
	}
	for i := 0; i < 3000; i++ {
		hooks = append(hooks, hooks[rng.IntN(7000)])
	}
	rng.Shuffle(len(hooks), func(i, j int) { hooks[i], hooks[j] = hooks[j], hooks[i] })
	var mu sync.Mutex
	answers := map[keyedHook][]dedupeAnswer{}
	var bad []string
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := &http.Client{Timeout: 20 * time.Second}
			defer c.CloseIdleConnections()
			for i := range work {
				h := hooks[i]
				listen := listens[(i+w)%len(listens)]
				body := []byte(fmt.Sprintf(`{"id":%q,"n":%d,"object":"event"}`, h.key, i))
				a, err := postKeyed(c, "http://"+listen+"/webhooks/"+h.tenant+"/dd", body, "")
				mu.Lock()
				if err != nil {
					bad = append(bad, err.Error())
				} else {
					answers[h] = append(answers[h], a)
				}
				mu.Unlock()
			}
		}(w)
	}
	for i := range hooks {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d requests failed, first: %s", len(bad), bad[0])
	}
	stored := map[keyedHook]string{}
	dups := 0
	for h, as := range answers {
		created := ""
		for _, a := range as {
			if a.status == http.StatusCreated {
				if created != "" {
					t.Errorf("%v was answered 201 twice (%s and %s)", h, created, a.id)
				}
				created = a.id
			}
		}
		if created == "" {
			t.Errorf("%v was never answered 201: %v", h, as)
			continue
		}
		for _, a := range as {
			switch {
			case a.status == http.StatusCreated:
			case a.status == http.StatusOK && a.dup && a.id == created:
				dups++
			default:
				t.Errorf("%v: answered %d (duplicate %v, id %s); the original is %s", h, a.status, a.dup, a.id, created)
			}
		}
		stored[h] = created
	}
	if len(stored) != 7000 || dups != 3000 {
		t.Errorf("%d keys stored, %d duplicates answered; want 7000 and 3000", len(stored), dups)
	}
	return stored
}

// checkStoredOnce reads the logs of stopped nodes and checks each key of
// source dd is stored exactly once, as the id it was answered with.
func checkStoredOnce(t *testing.T, stored map[keyedHook]string, nodes ...*testNode) {
	t.Helper()
	seen := map[keyedHook]string{}
	for _, n := range nodes {
		for _, h := range readWAL(t, n.walDir()).hooks {
			if h.env.SourceID != "dd" {
				continue
			}
			k := keyedHook{h.env.TenantID, h.env.DedupeKey}
			if prev, twice := seen[k]; twice {
				t.Errorf("key %v is stored twice: %s and %s", k, prev, h.env.ID)
			}
			seen[k] = h.env.ID.String()
		}
	}
	if len(seen) != len(stored) {
		t.Errorf("the logs hold %d keyed hooks, %d keys were answered 201", len(seen), len(stored))
	}
	for k, id := range stored {
		if seen[k] != id {
			t.Errorf("key %v answered 201 as %s, stored as %q", k, id, seen[k])
		}
	}
}

// checkTTL: a key of source short (ttl 2s) is a duplicate until it
// expires, then a new hook; sent to listens in turn.
func checkTTL(t *testing.T, listens []string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	url := func(i int) string { return "http://" + listens[i%len(listens)] + "/webhooks/acme/short" }
	first, err := postKeyed(c, url(0), []byte(`{}`), "delivery-1")
	if err != nil || first.status != http.StatusCreated {
		t.Fatalf("first hook with key delivery-1: %+v %v", first, err)
	}
	again, err := postKeyed(c, url(1), []byte(`{"retry":1}`), "delivery-1")
	if err != nil || again.status != http.StatusOK || !again.dup || again.id != first.id {
		t.Fatalf("the same key at once: %+v %v, want 200 duplicate %s", again, err, first.id)
	}
	// A hook without the header has no key: never a duplicate.
	for i := 0; i < 2; i++ {
		if a, err := postKeyed(c, url(i), []byte(`{}`), ""); err != nil || a.status != http.StatusCreated {
			t.Fatalf("a hook without a key: %+v %v", a, err)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	later, err := postKeyed(c, url(1), []byte(`{"retry":2}`), "delivery-1")
	if err != nil || later.status != http.StatusCreated || later.id == first.id {
		t.Fatalf("the same key after its 2s ttl: %+v %v, want a new 201", later, err)
	}
}

func TestDedupeNodeScope(t *testing.T) {
	n := newDedupeNode(t, "edge-dedupe", "node", "", "ankusa:")
	p := n.serve(t)
	stored := dedupeRun(t, []string{n.listen})
	checkTTL(t, []string{n.listen})
	// Keys outlive a restart (they are kept with the rows, under the
	// dispatch checkpoint).
	p.stop()
	p = n.serve(t)
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	i := 0
	for h, id := range stored {
		if i++; i > 200 {
			break
		}
		a, err := postKeyed(c, "http://"+n.listen+"/webhooks/"+h.tenant+"/dd", []byte(fmt.Sprintf(`{"id":%q}`, h.key)), "")
		if err != nil || a.status != http.StatusOK || !a.dup || a.id != id {
			t.Fatalf("after a restart, key %v: %+v %v, want 200 duplicate %s", h, a, err, id)
		}
	}
	p.stop()
	checkStoredOnce(t, stored, n)
}

func TestDedupeFleetScope(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	a := newDedupeNode(t, "edge-dedupe-a", "fleet", u, ns)
	b := newDedupeNode(t, "edge-dedupe-b", "fleet", u, ns)
	pa, pb := a.serve(t), b.serve(t)
	stored := dedupeRun(t, []string{a.listen, b.listen})
	checkTTL(t, []string{a.listen, b.listen})
	pa.stop()
	pb.stop()
	checkStoredOnce(t, stored, a, b)
}
