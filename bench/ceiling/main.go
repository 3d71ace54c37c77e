// Command ceiling is the physical limit of this machine for the appliance's
// request shape: a bare fasthttp server that reads each POST body and
// answers 201 {"id":"evt_..."} as the appliance does, storing nothing.
// `make bench` runs it beside bench/gcref and the appliance under the same
// load.
//
// Every POST, to any path, gets the 201 (benchkit.Handler). GET /stats
// answers {"requests":N}, the POSTs answered so far. SIGTERM or SIGINT
// stops it. Like every program under bench/ it may import product
// packages; no product package may import it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

var requests atomic.Uint64

// handle answers a POST with 201 and a fresh id.
var handle = benchkit.Handler(func([]byte) uint64 { return requests.Add(1) }, func() string {
	return `{"requests":` + strconv.FormatUint(requests.Load(), 10) + `}`
})

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	flag.Parse()
	benchkit.Serve("ceiling", *listen, handle, func() {
		fmt.Fprintf(os.Stderr, "ceiling: %d requests\n", requests.Load())
	})
}
