//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts mean nothing under it: this file is left out of race builds.

package httpsink

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// TestBuildRequestAllocs: building a request with pooled attempts does
// not allocate (static url, headers and secret).
func TestBuildRequestAllocs(t *testing.T) {
	for _, format := range []string{FormatRaw, FormatEnvelope} {
		s := newSink(t, config.Sink{
			URL:     "https://receiver.example.com/hooks",
			Format:  format,
			Headers: map[string]string{"Authorization": "Bearer token"},
			Secret:  config.Secret{Value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		}, withNow(testNow))
		d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 2}
		allocs := testing.AllocsPerRun(200, func() {
			a := acquireAttempt()
			if err := s.buildRequest(a, d); err != nil {
				t.Fatal(err)
			}
			releaseAttempt(a)
		})
		if allocs != 0 {
			t.Errorf("format %s: %v allocations per request, want 0", format, allocs)
		}
	}
}
