package dispatch_test

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// fairBound is the p99 receipt-to-delivery latency tenant B keeps while
// tenant A has a 100k backlog to a slow receiver on the same sink.
const fairBound = 250 * time.Millisecond

// Tenant A's backlog of 100k hooks to a slow receiver does not delay
// tenant B's deliveries through the same sink: A holds at most
// tenant_concurrency of the sink's slots and a quarter of its queue, and
// the sink serves tenants round-robin.
func TestFairnessBacklogDoesNotStarveOthers(t *testing.T) {
	var slowDone atomic.Int64
	fk := newFakeSinks(func(sink string, d *dispatch.Delivery) error {
		if d.Envelope.TenantID == "a" {
			time.Sleep(20 * time.Millisecond)
			slowDone.Add(1)
		}
		return nil
	})
	sinks := twoSinks(func(s *config.Sink) { s.Concurrency, s.TenantConcurrency = 32, 8 })[:1]
	n := openNode(t, vfs.NewMem(), fk, nodeOptions{sinks: sinks})
	defer n.close()
	const backlog = 100_000
	start := time.Now()
	n.commitMany(backlog, 16, func(int) string { return "a" })
	t.Logf("committed A's %d hooks in %v", backlog, time.Since(start))
	var lat []time.Duration
	for i := range 200 {
		e := n.commit("b", i)
		waitFor(t, 5*time.Second, "B's delivery", func() bool { return fk.delivered("a", e.ID) == 1 })
		ts := fk.times("a", e.ID)
		lat = append(lat, ts[len(ts)-1].Sub(time.Unix(0, e.ReceivedAt)))
		time.Sleep(5 * time.Millisecond)
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	left := backlog - slowDone.Load()
	t.Logf("B: p50 %v, p99 %v, max %v; A's backlog still %d", p50, p99, lat[len(lat)-1], left)
	if left < backlog/2 {
		t.Fatalf("A's backlog fell to %d: the test did not run under a backlog", left)
	}
	if p99 > fairBound {
		t.Fatalf("B's p99 receipt-to-delivery %v under A's backlog, want under %v", p99, fairBound)
	}
}
