package edge_test

import (
	"fmt"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkRouterPath measures "request in, ready to commit": a parsed
// header through HeaderReceived and Handle, the body streamed into a pooled
// WAL record and sealed, a Committer that returns at once, the 201 written.
// Bytes are body bytes.
func BenchmarkRouterPath(b *testing.B) {
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			p := newPathCtx(b, pathRouter(b, &instantWAL{}), size)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if p.serve(true) != fasthttp.StatusCreated {
					b.Fatal("not 201")
				}
			}
		})
		b.Run(fmt.Sprintf("body=%d/parallel", size), func(b *testing.B) {
			r := pathRouter(b, &instantWAL{})
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.RunParallel(func(pb *testing.PB) {
				p := newPathCtx(b, r, size)
				for pb.Next() {
					if p.serve(true) != fasthttp.StatusCreated {
						b.Error("not 201")
						return
					}
				}
			})
		})
	}
}
