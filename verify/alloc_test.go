//go:build !race

// Allocation counts mean nothing under the race detector (sync.Pool drops
// items at random); make test runs this package without it too.

package verify_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

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

// zeroAllocFamilies are the families whose successful Verify allocates
// nothing once warm; twilio parses a form and ecdsa's big-number
// arithmetic allocates.
var zeroAllocFamilies = []string{"hmac", "body-hmac", "standardwebhooks", "ed25519", "token", "basic"}

// TestPresetAllocs runs every preset's vector under AllocsPerRun: each
// shape of the hmac family (list, prefix, template with a header or list
// timestamp, {url}, {method}, {json:...}) allocates nothing.
func TestPresetAllocs(t *testing.T) {
	presets, err := verify.Presets()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range presets {
		if !slices.Contains(zeroAllocFamilies, p.Family) {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			vec := loadVector(t, filepath.Join(vectorDir, p.Name+".yaml"))
			v := mustNew(t, vec.config(t))
			h, body, at := vec.request(t, nil), vec.body(t), time.Unix(vec.Now, 0)
			var err error
			allocs := testing.AllocsPerRun(200, func() { err = v.Verify(h, body, at) })
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if allocs != 0 {
				t.Fatalf("Verify allocates %.1f times per call; want 0", allocs)
			}
		})
	}
}
