//go:build !race

// Allocation counts mean nothing under the race detector (sync.Pool drops
// items at random); make test runs this package without it too.

package verify_test

import (
	"testing"

	"github.com/ankusa/ankusa/verify"
)

// TestVerifyAllocs proves the package doc's promise: a successful Verify
// allocates nothing, for every verifier, whether the headers are
// fasthttp's or a plain map.
func TestVerifyAllocs(t *testing.T) {
	for _, f := range fixtures(t, 1024) {
		for _, hc := range []struct {
			name string
			h    verify.Headers
		}{{"fasthttp", f.fh}, {"map", f.mh}} {
			t.Run(f.name+"/"+hc.name, func(t *testing.T) {
				var err error
				allocs := testing.AllocsPerRun(200, func() {
					err = f.v.Verify(hc.h, f.body, now)
				})
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if allocs != 0 {
					t.Fatalf("Verify allocates %.1f times per call; want 0", allocs)
				}
			})
		}
	}
}
