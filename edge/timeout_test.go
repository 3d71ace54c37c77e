package edge_test

import (
	"strings"
	"testing"
	"time"
)

// slowConfig has a 300ms read timeout.
const slowConfig = `node: {name: test}
limits: {max_body_bytes: 1MiB, max_header_bytes: 4KiB, read_timeout: 300ms, write_timeout: 1s, idle_timeout: 1s}
route_resolver: {type: path, prefix: [webhooks]}
sources:
  demo: {verify: {type: none}}
`

// TestReadTimeout: a request that stops arriving (in its header, or in its
// body, before or after the first 8KiB fasthttp prefetches) is answered
// 408 request_timeout once limits.read_timeout passes, and the connection
// is closed: a stalled sender cannot hold a connection or a pipeline
// reservation longer than that.
func TestReadTimeout(t *testing.T) {
	n := startNode(t, loadConfig(t, slowConfig))
	for _, tc := range []struct{ name, req string }{
		{"stalls in the request line", "POST /webhooks/de"},
		{"stalls in the header", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nContent-Len"},
		{"stalls in a short body", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n0123456789"},
		{"stalls past the prefetch", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("b", 9000)},
		{"stalls in a chunked body", "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := roundTrip(t, n.addr, exchange{req: []byte(tc.req), deadline: 3 * time.Second})
			wantAnswer(t, tc.name, r, 408, "request_timeout")
			wantClose(t, tc.name, r)
			if r.elapsed < 250*time.Millisecond || r.elapsed > 2*time.Second {
				t.Errorf("answered after %v, want about the 300ms read timeout", r.elapsed)
			}
		})
	}
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("stalled requests committed %d records", got)
	}
	wantPipelineIdle(t, n)
}
