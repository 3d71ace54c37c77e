package dispatch_test

import (
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// Full jitter: attempt n waits uniformly in [0, min(retry_max,
// retry_base*2^(n-1))], never less than Retry-After.
func TestBackoffFullJitter(t *testing.T) {
	spec := config.Sink{RetryBase: config.Duration(100 * time.Millisecond), RetryMax: config.Duration(5 * time.Second)}
	for _, tc := range []struct {
		n    int
		ceil time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {6, 3200 * time.Millisecond}, {7, 5 * time.Second}, {60, 5 * time.Second}} {
		const samples = 4000
		var sum time.Duration
		lo, hi := tc.ceil, time.Duration(0)
		for range samples {
			d := dispatch.Backoff(spec, tc.n, 0)
			if d < 0 || d > tc.ceil {
				t.Fatalf("attempt %d: wait %v outside [0, %v]", tc.n, d, tc.ceil)
			}
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
		mean := sum / samples
		if mean < tc.ceil*4/10 || mean > tc.ceil*6/10 {
			t.Fatalf("attempt %d: mean wait %v, want about %v (uniform over [0, %v])", tc.n, mean, tc.ceil/2, tc.ceil)
		}
		if lo > tc.ceil/10 || hi < tc.ceil*9/10 {
			t.Fatalf("attempt %d: waits span [%v, %v], want most of [0, %v]", tc.n, lo, hi, tc.ceil)
		}
	}
	for range 100 {
		if d := dispatch.Backoff(spec, 1, 3*time.Second); d < 3*time.Second {
			t.Fatalf("a Retry-After of 3s gave a wait of %v", d)
		}
	}
}
