package benchkit

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/valyala/fasthttp"
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
