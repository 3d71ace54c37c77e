package main

// rate_limits.scope: fleet with two appliance processes on a private
// redis-server: one tenant's combined admitted rate stays within 10% of
// its configured rate; stopping Redis mid-run falls back to each node's
// own buckets without an error to any client, and the nodes share the
// buckets again once Redis is back.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/redistest"
)

// fleetRateYAML: %[1]s node name, %[2]s data_dir, %[3]s listen, %[4]s
// admin, %[5]s redis url.
const fleetRateYAML = `node: {name: %[1]s, data_dir: %[2]s}
listen: %[3]s
admin: {listen: %[4]s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  scope: fleet
  default: {rate: 50, burst: 10}
redis: {url: "%[5]s", namespace: "fleet-rate-test:"}
wal: {type: disk, max_file_bytes: 16MiB}
log: {level: warn, format: json}
sources:
  open: {verify: {type: none}, trust_url_tenant: true}
`

// sendBoth sends tenant acme's hooks to both nodes at rate per second in
// all for d and counts the answers by status.
func sendBoth(t *testing.T, nodes []*testNode, rate float64, d time.Duration) map[int]int {
	t.Helper()
	counts := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func(n *testNode) {
			defer wg.Done()
			for _, r := range paced(t, "http://"+n.listen+"/webhooks/acme/open", rate/float64(len(nodes)), d, 4) {
				mu.Lock()
				counts[r.status]++
				mu.Unlock()
			}
		}(n)
	}
	wg.Wait()
	return counts
}

func fleetLocal(t *testing.T, n *testNode) string {
	t.Helper()
	for _, l := range strings.Split(string(newAdminClient(t, n.admin).get("/metrics", "").body), "\n") {
		if v, ok := strings.CutPrefix(l, "ankusa_rate_limit_fleet_local "); ok {
			return v
		}
	}
	return "absent"
}

func TestFleetRateLimit(t *testing.T) {
	srv := redistest.StartServer(t)
	var nodes []*testNode
	for _, name := range []string{"edge-fleet-a", "edge-fleet-b"} {
		nodes = append(nodes, newConfiguredNode(t, func(n *testNode) string {
			return fmt.Sprintf(fleetRateYAML, name, n.dataDir, n.listen, n.admin, srv.URL())
		}))
	}
	for _, n := range nodes {
		defer n.serve(t).stop()
	}
	// Shared: the two nodes together admit burst + rate·t.
	const d = 4 * time.Second
	start := time.Now()
	counts := sendBoth(t, nodes, 300, d)
	elapsed := time.Since(start).Seconds()
	want := 10 + 50*elapsed
	got := float64(counts[http.StatusCreated])
	t.Logf("shared: %v in %.1fs; burst + rate·t = %.0f", counts, elapsed, want)
	if got > want*1.1 || got < want*0.9 {
		t.Errorf("two nodes admitted %.0f hooks of tenant acme in %.1fs, want within 10%% of %.0f", got, elapsed, want)
	}
	if len(counts) != 2 || counts[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers %v: want only 201 and 429", counts)
	}
	// Redis stopped mid-run: each node decides alone, no client sees an
	// error.
	stopped := make(chan struct{})
	go func() {
		time.Sleep(time.Second)
		srv.Stop()
		close(stopped)
	}()
	counts = sendBoth(t, nodes, 300, 3*time.Second)
	<-stopped
	t.Logf("Redis down: %v", counts)
	for status := range counts {
		if status != http.StatusCreated && status != http.StatusTooManyRequests {
			t.Errorf("with Redis down a client was answered %d (%v)", status, counts)
		}
	}
	for _, n := range nodes {
		if v := fleetLocal(t, n); v != "1" {
			t.Errorf("with Redis down ankusa_rate_limit_fleet_local is %s", v)
		}
	}
	// Back: shared again.
	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sendBoth(t, nodes, 40, 500*time.Millisecond)
		if fleetLocal(t, nodes[0]) == "0" && fleetLocal(t, nodes[1]) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes still decide alone 10s after Redis came back")
		}
	}
}
