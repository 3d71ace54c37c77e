package wal_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// BenchmarkCommit measures the commit path as ingest drives it: acquire a
// pooled request, encode an envelope with a 1 KiB body into it, seal it,
// commit, release; many goroutines at once, on a real directory (every
// batch is an fdatasync). Bytes are record bytes.
func BenchmarkCommit(b *testing.B) {
	for _, tenants := range []int{1, 64} {
		b.Run(fmt.Sprintf("tenants=%d", tenants), func(b *testing.B) {
			w, err := wal.Open(wal.Options{FS: vfs.Default, Dir: b.TempDir(), Node: testNode})
			if err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 1024)
			for i := range body {
				body[i] = byte('a' + i%26)
			}
			names := make([]string, tenants)
			for i := range names {
				names[i] = fmt.Sprintf("tenant-%d", i)
			}
			e := envelope.Envelope{
				TenantID:     names[0],
				SourceID:     "stripe",
				Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "Stripe-Signature", Value: "t=1,v1=abc"}},
				Body:         body,
				Verification: envelope.Verification{Verifier: "stripe", Verified: true},
			}
			b.SetBytes(int64(wal.FrameHeaderSize + len(e.AppendTo(nil))))
			b.ReportAllocs()
			var next atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				e := e
				for pb.Next() {
					e.TenantID = names[next.Add(1)%uint64(tenants)]
					req := wal.AcquireRequest()
					req.Buf = e.AppendTo(req.Buf)
					wal.SealPayload(req.Buf)
					if err := w.Commit(req); err != nil {
						b.Error(err)
					}
					wal.ReleaseRequest(req)
				}
			})
			b.StopTimer()
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
