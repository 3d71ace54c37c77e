package tenant

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/redistest"
	"github.com/ankusa/ankusa/internal/redisx"
)

func monoClock() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// TestFleetSharesOneRate: two nodes' limiters on one Redis admit one
// tenant's configured rate between them, not twice it.
func TestFleetSharesOneRate(t *testing.T) {
	u := redistest.URL(t)
	ns := redistest.Namespace(t, u)
	rl := config.RateLimits{Scope: "fleet", Default: &config.RateLimit{Rate: 100, Burst: 10}}
	var nodes []*FleetLimiter
	for i := 0; i < 2; i++ {
		rdb, _, err := redisx.NewClient(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		nodes = append(nodes, NewFleetLimiter(rl, rdb, ns, monoClock(), nil))
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	const run = 2 * time.Second
	for _, n := range nodes {
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(n *FleetLimiter) {
				defer wg.Done()
				for time.Since(start) < run {
					if ok, _ := n.Take("acme"); ok {
						admitted.Add(1)
					}
					time.Sleep(500 * time.Microsecond)
				}
			}(n)
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	want := 10 + 100*elapsed
	got := float64(admitted.Load())
	t.Logf("admitted %.0f in %.2fs across 2 nodes; burst + rate·t = %.0f", got, elapsed, want)
	if got > want*1.1 || got < want*0.9 {
		t.Fatalf("two nodes admitted %.0f, want within 10%% of %.0f", got, want)
	}
	for _, n := range nodes {
		if n.Local() {
			t.Fatal("a node fell back to local buckets with Redis up")
		}
	}
	// Peeking takes nothing; a refusal says how long to wait.
	ok, wait := nodes[0].Check("acme")
	if !ok && (wait <= 0 || wait > 20*time.Millisecond) {
		t.Fatalf("refused with wait %v at 100/s", wait)
	}
}

// TestFleetFallsBackAndReturns: with Redis stopped, decisions go on with
// the node's own buckets (no error to a client); with Redis back, they
// are shared again.
func TestFleetFallsBackAndReturns(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb, _, err := redisx.NewClient(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	f := NewFleetLimiter(config.RateLimits{Default: &config.RateLimit{Rate: 1000, Burst: 1000}}, rdb, "test:", monoClock(), nil)
	if ok, _ := f.Take("acme"); !ok || f.Local() {
		t.Fatalf("with Redis up: ok %v local %v", ok, f.Local())
	}
	srv.Stop()
	for i := 0; i < 50; i++ {
		start := time.Now()
		if ok, _ := f.Take("acme"); !ok {
			t.Fatal("a decision was refused while Redis was down")
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("a decision took %v while Redis was down", d)
		}
	}
	if !f.Local() {
		t.Fatal("not falling back with Redis down")
	}
	srv.Start()
	deadline := time.Now().Add(5 * time.Second)
	for f.Local() && time.Now().Before(deadline) {
		f.Take("acme")
		time.Sleep(50 * time.Millisecond)
	}
	if f.Local() {
		t.Fatal("still local 5s after Redis came back")
	}
	// Shared again: another node sees the token this one took.
	rl := config.RateLimits{Default: &config.RateLimit{Rate: 1000, Burst: 1000}, Tenants: map[string]config.RateLimit{"slow": {Rate: 0.01, Burst: 1}}}
	f = NewFleetLimiter(rl, rdb, "test:", monoClock(), nil)
	other := NewFleetLimiter(rl, rdb, "test:", monoClock(), nil)
	if ok, _ := f.Take("slow"); !ok {
		t.Fatal("the first token of slow was refused")
	}
	if ok, wait := other.Take("slow"); ok || wait < 90*time.Second {
		t.Fatalf("another node took a second token of a burst of 1 (ok %v, wait %v): the bucket is not shared", ok, wait)
	}
}

// TestFleetUnlimitedTenantsSkipRedis: a tenant without a finite rate
// costs no round trip.
func TestFleetUnlimitedTenantsSkipRedis(t *testing.T) {
	rdb, _, err := redisx.NewClient("redis://127.0.0.1:1/0") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	f := NewFleetLimiter(config.RateLimits{}, rdb, "test:", monoClock(), nil)
	if ok, _ := f.Take("acme"); !ok || f.Local() {
		t.Fatal("an unlimited tenant went to Redis")
	}
}
