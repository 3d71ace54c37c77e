// Command ceiling is the physical limit of this machine for the appliance's
// request shape: a bare fasthttp server that reads each POST body and
// answers 201 {"id":"evt_..."} as the appliance does, storing nothing.
// `make bench` runs it beside bench/gcref and the appliance under the same
// load.
//
// Every POST, to any path, gets the 201. GET /stats answers
// {"requests":N}, the POSTs answered so far. SIGTERM or SIGINT stops it.
// Like every program under bench/ it may import product packages
// (envelope, for the ids); no product package may import it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/envelope"
)

var (
	requests    atomic.Uint64
	startMs     = uint64(time.Now().UnixMilli())
	contentJSON = []byte("application/json")
	notAllowed  = []byte(`{"error":"method_not_allowed"}`)
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	flag.Parse()
	benchkit.Serve("ceiling", *listen, handle, func() {
		fmt.Fprintf(os.Stderr, "ceiling: %d requests\n", requests.Load())
	})
}

// handle answers a POST with 201 and a fresh id. fasthttp has read the
// whole body before it calls the handler.
func handle(ctx *fasthttp.RequestCtx) {
	if !ctx.IsPost() {
		if ctx.IsGet() && string(ctx.Path()) == "/stats" {
			ctx.SetContentTypeBytes(contentJSON)
			ctx.SetBodyString(`{"requests":` + strconv.FormatUint(requests.Load(), 10) + `}`)
			return
		}
		ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		ctx.SetBody(notAllowed)
		return
	}
	seq := requests.Add(1)
	var out [64]byte
	b := append(out[:0], `{"id":"`...)
	b = envelope.MakeID(startMs, 0, seq).AppendText(b)
	b = append(b, `"}`...)
	ctx.SetStatusCode(fasthttp.StatusCreated)
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.Response.SetBody(b)
}
