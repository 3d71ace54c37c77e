// Command relay is the reference for delivery: store-and-forward without
// the store. `make bench-dispatch` measures the appliance's end-to-end
// rate against it.
//
// For every request it forwards the method, the headers and the body to
// the receiver at -to with a fasthttp client (one HostClient, up to -conns
// connections), and answers only once the receiver has answered: 201
// {"id":"evt_..."} (as the appliance and bench/gcref answer) after a 2xx,
// 502 {"error":"bad_gateway",...} after any other status, a transport
// error or -timeout. Nothing is kept, retried or written to disk: a
// sender that has its 201 knows the receiver has the hook, which is the
// appliance's promise at its cheapest. Its closed-loop rate under a load
// is therefore its end-to-end rate.
//
// GET /stats answers {"forwarded":N,"failed":M}: the requests answered
// 201 and 502 so far. SIGTERM or SIGINT drains and stops it.
//
// It imports nothing of the product (its 201 answers are benchkit's, as
// bench/ceiling's and bench/gcref's), so that it stays the reference, not
// the appliance's code. No product package may import it.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8083", "address to serve on")
	to := flag.String("to", "", "receiver URL every request is forwarded to, http://host:port/path (required)")
	conns := flag.Int("conns", 4096, "most connections to the receiver at once")
	timeout := flag.Duration("timeout", 10*time.Second, "per forward: waiting for a connection, writing, and reading the receiver's answer")
	flag.Parse()
	r, err := newRelay(*to, *conns, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay: %v\n", err)
		os.Exit(2)
	}
	benchkit.Serve("relay", *listen, r.handle, func() {
		fmt.Fprintf(os.Stderr, "relay: %d forwarded, %d failed\n", r.forwarded.Load(), r.failed.Load())
	})
}
