//go:build !race

// Allocation counts mean nothing under the race detector (sync.Pool drops
// items at random).

package verify_test

import (
	"path/filepath"
	"testing"
	"time"
)

// TestJWSAllocs: Netlify's HS256 allocates nothing once warm; ES256 and
// RSA verification allocate in crypto/ecdsa and crypto/rsa only (the
// numbers are logged, and bounded so that a regression shows).
func TestJWSAllocs(t *testing.T) {
	for _, tc := range []struct {
		preset string
		max    float64
	}{{"netlify", 0}, {"plaid", 40}, {"paypal", 40}} {
		t.Run(tc.preset, func(t *testing.T) {
			vec := loadVector(t, filepath.Join(vectorDir, tc.preset+".yaml"))
			v := mustNew(t, vec.config(t))
			h, body, at := vec.request(t, nil), vec.body(t), time.Unix(vec.Now, 0)
			var err error
			allocs := testing.AllocsPerRun(200, func() { err = v.Verify(h, body, at) })
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			t.Logf("%s: %.0f allocs per Verify", tc.preset, allocs)
			if allocs > tc.max {
				t.Fatalf("Verify allocates %.1f times per call; want at most %.0f", allocs, tc.max)
			}
		})
	}
}
