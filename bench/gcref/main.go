// Command gcref is the reference for durable ingest on this disk: the
// bench/ceiling server plus the simplest correct group commit, and nothing
// else. `make bench` measures the appliance against it.
//
// A handler copies the POST body into a record and hands it to the one
// commit goroutine, then waits. The commit goroutine takes every record
// waiting in the queue, appends them to DIR/gcref.log with one writev,
// fdatasyncs once, and only then releases the whole batch, whose handlers
// answer 201 {"id":"evt_..."}. There is no linger timer: a batch is what
// arrived while the previous fdatasync ran. A failed write or fdatasync
// exits at once (status 3): nothing after it is acknowledged.
//
// The file is a run of records, each a 4-byte big-endian body length and
// the body:
//
//	+----------------+----------------+
//	| len (uint32 BE)| body (len B)   | ...
//	+----------------+----------------+
//
// GET /stats answers {"records":N,"fsyncs":M,"fsync_ns":T}: the records
// made durable, the fdatasyncs that did it and the time they took.
// SIGTERM or SIGINT drains and stops it.
//
// It imports nothing of the product (its answers, ids included, are
// benchkit.Handler's, as bench/ceiling's), so that it stays the
// reference: the simplest correct group commit, not the appliance's code.
// No product package may import it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "address to serve on")
	dir := flag.String("dir", ".", "directory for gcref.log (truncated at start)")
	flag.Parse()
	c, err := openCommitter(filepath.Join(*dir, "gcref.log"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gcref: %v\n", err)
		os.Exit(1)
	}
	// Shutdown waits for the handlers, and so for their batches.
	benchkit.Serve("gcref", *listen, c.handle, func() {
		c.close()
		fmt.Fprintf(os.Stderr, "gcref: %d records in %d fdatasyncs\n", c.records.Load(), c.fsyncs.Load())
	})
}
