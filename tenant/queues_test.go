package tenant

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ankusa/ankusa/config"
)

func TestQueuesCaps(t *testing.T) {
	q := NewQueues(config.RateLimits{
		Default: &config.RateLimit{MaxQueue: 2},
		Tenants: map[string]config.RateLimit{"bytes": {MaxQueueBytes: 100}, "free": {}},
	})
	for i := 0; i < 2; i++ {
		if !q.Reserve("acme", 10, 0) {
			t.Fatalf("hook %d within max_queue 2 refused", i+1)
		}
	}
	if q.Reserve("acme", 10, 0) {
		t.Fatal("a third hook past max_queue 2 admitted")
	}
	if !q.Reserve("bytes", 60, 0) || q.Reserve("bytes", 41, 0) || !q.Reserve("bytes", 40, 0) {
		t.Fatal("max_queue_bytes 100 not applied exactly")
	}
	for i := 0; i < 50; i++ {
		if !q.Reserve("free", 1000, 0) {
			t.Fatal("a tenant without caps refused")
		}
	}
	// A share refuses a tenant already holding some, never a newcomer.
	if q.Reserve("acme2", 500, 100) != true {
		t.Fatal("a newcomer refused by its share")
	}
	if q.Reserve("acme2", 1, 100) {
		t.Fatal("a tenant past its share admitted")
	}
	if q.Active() != 4 {
		t.Fatalf("%d tenants active, want 4", q.Active())
	}
	q.Release("acme", 10)
	q.Release("acme", 10)
	q.Release("bytes", 60)
	q.Release("bytes", 40)
	for i := 0; i < 50; i++ {
		q.Release("free", 1000)
	}
	q.Release("acme2", 500)
	if h, b := q.Totals(); h != 0 || b != 0 || q.Active() != 0 {
		t.Fatalf("after every release: %d hooks %d bytes %d tenants", h, b, q.Active())
	}
}

func TestQueuesReleaseUnknownPanics(t *testing.T) {
	q := NewQueues(config.RateLimits{})
	defer func() {
		if recover() == nil {
			t.Fatal("releasing what was never reserved did not panic")
		}
	}()
	q.Release("acme", 1)
}

func TestQueuesConcurrent(t *testing.T) {
	q := NewQueues(config.RateLimits{Default: &config.RateLimit{MaxQueue: 1000}})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				name := fmt.Sprintf("t%d", (g+i)%13)
				if q.Reserve(name, int64(i%7+1), 0) {
					q.Release(name, int64(i%7+1))
				}
			}
		}(g)
	}
	wg.Wait()
	if h, b := q.Totals(); h != 0 || b != 0 || q.Active() != 0 {
		t.Fatalf("after concurrent reserve/release: %d hooks %d bytes %d tenants", h, b, q.Active())
	}
}

func TestQueuesNoAllocs(t *testing.T) {
	q := NewQueues(config.RateLimits{Default: &config.RateLimit{MaxQueue: 1 << 30}})
	q.Reserve("acme", 1, 0)
	q.Release("acme", 1) // idle now: its entry stays
	if n := testing.AllocsPerRun(1000, func() { q.Reserve("acme", 5, 0); q.Release("acme", 5) }); n != 0 {
		t.Fatalf("reserve and release of a tenant sending one hook at a time allocate %.1f times", n)
	}
}

// TestQueuesSweepIdle: 200k one-off tenants leave a bounded map.
func TestQueuesSweepIdle(t *testing.T) {
	q := NewQueues(config.RateLimits{})
	for i := 0; i < 200_000; i++ {
		name := fmt.Sprintf("tenant-%d", i)
		q.Reserve(name, 1, 0)
		q.Release(name, 1)
	}
	n := 0
	for i := range q.shards {
		n += len(q.shards[i].m)
	}
	if n > 64*512 {
		t.Fatalf("%d idle entries kept after 200k one-off tenants", n)
	}
}
