package tenant

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBucketBurstThenRate(t *testing.T) {
	const sec = int64(time.Second)
	b := NewBucket(10, 5, 0)
	for i := 0; i < 5; i++ {
		if ok, _ := b.Take(0); !ok {
			t.Fatalf("take %d of a full bucket of 5 refused", i)
		}
	}
	ok, wait := b.Take(0)
	if ok || wait != 100*time.Millisecond {
		t.Fatalf("empty bucket: ok %v wait %v, want refused and 100ms", ok, wait)
	}
	if ok, _ := b.Take(sec/10 - 1); ok {
		t.Fatal("a token 1ns before it was earned")
	}
	if ok, _ := b.Take(sec / 10); !ok {
		t.Fatal("the token earned after 100ms was refused")
	}
	// A long idle time refills to the burst, not beyond.
	n := 0
	for {
		if ok, _ := b.Take(1000 * sec); !ok {
			break
		}
		n++
	}
	if n != 5 {
		t.Fatalf("after a long idle time took %d, want the burst 5", n)
	}
}

func TestBucketZeroRate(t *testing.T) {
	b := NewBucket(0, 0, 0)
	if ok, _ := b.Take(0); !ok {
		t.Fatal("burst 0 is 1: the first take must pass")
	}
	ok, wait := b.Take(int64(time.Hour))
	if ok || wait != time.Duration(1<<63-1) {
		t.Fatalf("rate 0: ok %v wait %v, want never", ok, wait)
	}
}

func TestBucketClockGoingBack(t *testing.T) {
	b := NewBucket(1, 1, 100)
	b.Take(100)
	if ok, _ := b.Take(50); ok {
		t.Fatal("a clock going back earned a token")
	}
}

func TestBucketReconfigure(t *testing.T) {
	b := NewBucket(1, 100, 0)
	b.Reconfigure(1, 3, 0)
	n := 0
	for ok, _ := b.Take(0); ok; ok, _ = b.Take(0) {
		n++
	}
	if n != 3 {
		t.Fatalf("after lowering the burst to 3 took %d", n)
	}
}

// TestBucketNeverAdmitsMore is the property: over any window of length t
// a bucket admits at most burst + rate·t, and one drained to empty and
// asked constantly admits exactly that (refills exactly).
func TestBucketNeverAdmitsMore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		rate := float64(1 + r.IntN(1000))
		burst := 1 + r.IntN(200)
		b := NewBucket(rate, burst, 0)
		var times []int64
		now := int64(0)
		for i := 0; i < 5000; i++ {
			now += int64(r.ExpFloat64() * float64(time.Second) / (rate * 2))
			if ok, _ := b.Take(now); ok {
				times = append(times, now)
			}
		}
		// Every window starting at an admission.
		for i := range times {
			for j := i; j < len(times); j += 1 + j/8 {
				window := float64(times[j]-times[i]) / 1e9
				if got, bound := float64(j-i+1), float64(burst)+rate*window; got > bound+1e-6 {
					t.Fatalf("rate %v burst %d: %v admitted in %.6fs, bound %.3f", rate, burst, got, window, bound)
				}
			}
		}
	}
	// Exact refill: drained, then asked every microsecond for 2s.
	b := NewBucket(250, 10, 0)
	for ok, _ := b.Take(0); ok; ok, _ = b.Take(0) {
	}
	n := 0
	for now := int64(0); now <= 2*int64(time.Second); now += int64(time.Microsecond) {
		if ok, _ := b.Take(now); ok {
			n++
		}
	}
	if n != 500 {
		t.Fatalf("refilled %d tokens in 2s at 250/s, want 500", n)
	}
}

func TestBucketConcurrent(t *testing.T) {
	b := NewBucket(0, 1000, 0)
	var got atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if ok, _ := b.Take(0); ok {
					got.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got.Load() != 1000 {
		t.Fatalf("8 goroutines took %d tokens of 1000", got.Load())
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {1500 * time.Millisecond, 2}, {time.Duration(1<<63 - 1), 86400}} {
		if got := RetryAfterSeconds(c.d); got != c.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}
