package verify_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// BenchmarkVerify measures a successful Verify of each verifier, the cost
// per hook, on a 1 KiB and a 64 KiB body signed by the second of two
// secrets, with fasthttp's headers as the edge passes them.
func BenchmarkVerify(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}} {
		for _, f := range fixtures(b, size.n) {
			b.Run(f.name+"/"+size.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(f.body)))
				for b.Loop() {
					if err := f.v.Verify(f.fh, f.body, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVerifyParallel is BenchmarkVerify from every P at once: the
// verifiers share pooled HMAC states, which must not become a point of
// contention. It reads the map headers: a fasthttp.RequestHeader's Peek
// uses a scratch buffer and is not safe for concurrent use.
func BenchmarkVerifyParallel(b *testing.B) {
	for _, f := range fixtures(b, 1024) {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(f.body)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := f.v.Verify(f.mh, f.body, now); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkTwilio measures the twilio family on a 2 KiB form of about
// forty parameters (the shape bench/verifycost measures), beside the
// github preset, HMAC-SHA256 over the same number of bytes, which the
// family's cost is held to within 2×.
func BenchmarkTwilio(b *testing.B) {
	form := url.Values{"CallSid": {"CA1"}, "From": {"+15550001"}, "To": {"+15550002"}}
	for i := 0; len(form.Encode()) < 2048-40; i++ {
		form.Set(fmt.Sprintf("Param%02d", i), strings.Repeat("v", 40))
	}
	body := []byte(form.Encode())
	const u = "https://h.example/tw?a=1"
	tw := mustNew(b, config.Verify{Type: "twilio", Secret: secret("tok"), URL: u})
	th := header("X-Twilio-Signature", twilioRef("tok", u, form), "Content-Type", "application/x-www-form-urlencoded")
	th.SetRequestURI("/tw?a=1")
	gh := mustNew(b, config.Verify{Type: "github", Secret: secret(githubNew)})
	gfh := header("X-Hub-Signature-256", gh256(githubNew, string(body)))
	for _, c := range []struct {
		name string
		v    verify.Verifier
		h    verify.Headers
	}{{"github", gh, gfh}, {"twilio", tw, th}} {
		b.Run(c.name, func(b *testing.B) {
			if err := c.v.Verify(c.h, body, now); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := c.v.Verify(c.h, body, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
