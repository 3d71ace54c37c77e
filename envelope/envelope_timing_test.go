package envelope

import "testing"

// BenchmarkAppendTo measures encoding a typical hook into a reused buffer,
// as the WAL's tests and tools do. Bytes are encoded bytes.
func BenchmarkAppendTo(b *testing.B) {
	e := sample()
	buf := e.AppendTo(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = e.AppendTo(buf[:0])
	}
}
