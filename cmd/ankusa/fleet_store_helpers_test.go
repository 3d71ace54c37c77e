package main

// Helpers of the redis source store's fleet tests (fleet_store_test.go):
// a node of srcAPIYAML whose source_store is a Redis namespace, the
// hooks and metrics the tests read from the outside, and a pacer of
// steady ingest.

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fsStore is srcAPIYAML's source_store value for a redis store at url
// under namespace ns, checked every tick.
func fsStore(url, ns string, tick time.Duration) string {
	return fmt.Sprintf("redis, url: %q, namespace: %q, tick_ms: %d", url, ns, tick.Milliseconds())
}

// fsNewNode is a node (srcAPIYAML, config not started) whose sources
// and routes live in Redis at url under ns; top and sources as for
// newAPINode.
func fsNewNode(t *testing.T, url, ns string, tick time.Duration, top, sources string) *apiNode {
	t.Helper()
	return newAPINode(t, fsStore(url, ns, tick), top, sources)
}

// fsCreate creates source name of tenant acme with the JSON spec fields
// spec (without braces, e.g. `"verify":{"type":"none"}`) and requires a
// 201.
func fsCreate(t *testing.T, n *apiNode, name, spec string) {
	t.Helper()
	a := n.do("POST", sourcesOf("acme"), opsToken, fmt.Sprintf(`{"name":%q,%s}`, name, spec))
	wantStatus(t, "POST "+name, a, http.StatusCreated)
}

// fsHookUntil posts hooks to acme's source name on n, back to back, until
// one answers want or within has passed; it returns how long that took
// from start and whether it did.
func fsHookUntil(n *apiNode, start time.Time, name string, want int, within time.Duration, hdr ...string) (time.Duration, bool) {
	for {
		a, err := n.tryHookAt("/webhooks/acme/"+name, `{"fleet":true}`, hdr...)
		if err == nil && a.status == want {
			return time.Since(start), true
		}
		if time.Since(start) > within {
			return time.Since(start), false
		}
	}
}

// fsMetric is the value of the unlabelled metric name on n's /metrics,
// "absent" when it is not there.
func fsMetric(t *testing.T, n *apiNode, name string) string {
	t.Helper()
	a, err := n.tryDo("GET", "/metrics", "", "")
	if err != nil || a.status != http.StatusOK {
		t.Fatalf("GET /metrics: %v %d", err, a.status)
	}
	for _, l := range strings.Split(string(a.body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return "absent"
}

// fsWaitMetric waits up to within for n's metric name to read want.
func fsWaitMetric(t *testing.T, n *apiNode, name, want string, within time.Duration) {
	t.Helper()
	var got string
	if !waitFor(within, func() bool { got = fsMetric(t, n, name); return got == want }) {
		t.Fatalf("%s on %s is %s after %s, want %s", name, n.admin, got, within, want)
	}
}

// fsPercentiles are the p50, p99 and max of ds (sorted in place).
func fsPercentiles(ds []time.Duration) (p50, p99, top time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return at(0.50), at(0.99), ds[len(ds)-1]
}

// fsIngest posts hooks to acme's sources names on n, round robin, at
// about rate per second until stop is closed, and counts the answers by
// status (-1: no answer at all).
type fsIngest struct {
	mu     sync.Mutex
	counts map[int]int
	done   chan struct{}
}

func fsStartIngest(n *apiNode, names []string, rate int, stop <-chan struct{}) *fsIngest {
	in := &fsIngest{counts: map[int]int{}, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			status := -1
			if a, err := n.tryHookAt("/webhooks/acme/"+names[i%len(names)], fmt.Sprintf(`{"i":%d}`, i)); err == nil {
				status = a.status
			}
			in.mu.Lock()
			in.counts[status]++
			in.mu.Unlock()
		}
	}()
	return in
}

// wait waits for the ingest to end and returns its counts.
func (in *fsIngest) wait() map[int]int {
	<-in.done
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.counts
}
