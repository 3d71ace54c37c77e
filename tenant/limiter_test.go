package tenant

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

type fakeClock struct{ now int64 }

func (c *fakeClock) mono() int64 { return c.now }

func TestLimiterDefaultAndOverride(t *testing.T) {
	c := &fakeClock{}
	l := NewLimiter(config.RateLimits{
		Default: &config.RateLimit{Rate: 1, Burst: 2},
		Tenants: map[string]config.RateLimit{"big": {Rate: 100, Burst: 5}, "free": {Rate: math.Inf(1), Burst: 1}},
	}, c.mono)
	count := func(tenant string) int {
		n := 0
		for i := 0; i < 20; i++ {
			if ok, _ := l.Take(tenant); ok {
				n++
			}
		}
		return n
	}
	if n := count("acme"); n != 2 {
		t.Errorf("default burst 2: took %d", n)
	}
	if n := count("big"); n != 5 {
		t.Errorf("override burst 5: took %d", n)
	}
	if n := count("free"); n != 20 {
		t.Errorf("an infinite rate limits nothing: took %d of 20", n)
	}
	ok, wait := l.Check("acme")
	if ok || wait != time.Second {
		t.Errorf("empty default bucket: Check = %v, %v; want refused, 1s", ok, wait)
	}
	c.now += int64(time.Second)
	if ok, _ := l.Check("acme"); !ok {
		t.Error("after 1s at 1/s Check refuses")
	}
	if ok, _ := l.Check("acme"); !ok {
		t.Error("Check took the token")
	}
}

func TestLimiterUnlimitedWithoutDefault(t *testing.T) {
	l := NewLimiter(config.RateLimits{}, (&fakeClock{}).mono)
	for i := 0; i < 1000; i++ {
		if ok, _ := l.Take(fmt.Sprint("t", i%3)); !ok {
			t.Fatal("no rate_limits.default: a tenant was limited")
		}
	}
	if l.Tracked() != 0 {
		t.Fatalf("unlimited tenants hold %d buckets", l.Tracked())
	}
}

// TestLimiterForgetsFullBuckets: a million invented tenant names, each
// sending once, leave only the buckets not yet refilled.
func TestLimiterForgetsFullBuckets(t *testing.T) {
	c := &fakeClock{}
	l := NewLimiter(config.RateLimits{Default: &config.RateLimit{Rate: 10, Burst: 10}}, c.mono)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 1_000_000; i++ {
		if ok, _ := l.Take(fmt.Sprintf("tenant-%d", i)); !ok {
			t.Fatal("a new tenant was refused")
		}
		c.now += int64(time.Microsecond) // 1M names in 1s: each refills in 100ms
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// A bucket refills its one token in 100ms = 100k names; sweeps run
	// every max(256, len) decisions per shard, so at most about twice
	// that are held.
	if n := l.Tracked(); n > 250_000 {
		t.Fatalf("%d buckets held after 1M one-off tenants, want under 250k", n)
	}
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("buckets held %d, heap grew %d KiB", l.Tracked(), grown>>10)
	if grown > 64<<20 {
		t.Fatalf("heap grew %d MiB for 1M one-off tenants", grown>>20)
	}
	// Once they are all full again, traffic from a thousand tenants
	// sweeps every shard: only those are left.
	c.now += int64(time.Second)
	for i := 0; i < 1_000_000; i++ {
		l.Take(fmt.Sprintf("busy-%d", i%1000))
	}
	if n := l.Tracked(); n > 2000 {
		t.Fatalf("%d buckets held once every one-off tenant's bucket is full again", n)
	}
}

func TestLimiterNoAllocs(t *testing.T) {
	l := NewLimiter(config.RateLimits{Default: &config.RateLimit{Rate: 1e9, Burst: 1e9}}, (&fakeClock{}).mono)
	name := "acme"
	l.Take(name)
	if n := testing.AllocsPerRun(1000, func() { l.Check(name); l.Take(name) }); n != 0 {
		t.Fatalf("a known tenant's decision allocates %.1f times", n)
	}
}
