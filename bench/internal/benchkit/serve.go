package benchkit

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/envelope"
)

// Serve is the main loop of the reference servers (bench/ceiling,
// bench/gcref): it serves handler on listen, bare (no Server, Date or
// default Content-Type header), until SIGTERM or SIGINT, then shuts the
// server down, which waits for its handlers, and calls stopped. A listener
// it cannot serve on exits 1.
func Serve(name, listen string, handler fasthttp.RequestHandler, stopped func()) {
	srv := &fasthttp.Server{
		Handler:               handler,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe(listen) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		_ = srv.Shutdown()
		stopped()
	case err := <-errc:
		fmt.Fprintf(os.Stderr, "%s: cannot serve on %s: %v\n", name, listen, err)
		os.Exit(1)
	}
}

var (
	contentJSON = []byte("application/json")
	notAllowed  = []byte(`{"error":"method_not_allowed"}`)
)

// Handler is the reference servers' handler: a POST, to any path (whose
// body fasthttp has read whole), is answered 201 {"id":"evt_..."} as the
// appliance answers, once commit has taken the body and returned its
// seq; GET /stats answers stats(), a JSON object; anything else is 405.
func Handler(commit func(body []byte) uint64, stats func() string) fasthttp.RequestHandler {
	startMs := uint64(time.Now().UnixMilli())
	return func(ctx *fasthttp.RequestCtx) {
		if !ctx.IsPost() {
			if ctx.IsGet() && string(ctx.Path()) == "/stats" {
				ctx.SetContentTypeBytes(contentJSON)
				ctx.SetBodyString(stats())
				return
			}
			ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
			ctx.SetBody(notAllowed)
			return
		}
		Created(ctx, startMs, commit(ctx.PostBody()))
	}
}

// Created answers 201 {"id":"evt_..."} as the appliance answers, the id
// made of startMs (the server's start, unix ms) and seq.
func Created(ctx *fasthttp.RequestCtx, startMs, seq uint64) {
	var out [64]byte
	b := append(out[:0], `{"id":"`...)
	b = envelope.MakeID(startMs, 0, seq).AppendText(b)
	b = append(b, `"}`...)
	ctx.SetStatusCode(fasthttp.StatusCreated)
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.Response.SetBody(b)
}
