package verify_test

import (
	"testing"
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
