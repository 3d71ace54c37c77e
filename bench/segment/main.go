// Command segment is `make bench-segment`: what the segment format costs
// on this machine, measured through the segment package's public API on
// hooks made of tools/loadgen's payloads (hooks.go), and printed as one
// table:
//
//   - sealing: MB/s of raw records through segment.Create, Append and
//     Finish into real files at the format's defaults (256 KiB blocks,
//     zstd SpeedFastest), cut where the store cuts (segment.max_bytes,
//     64 MiB), each written as a partial file, fsynced, renamed and its
//     directory fsynced; its CPU per MB against the spine's 70 MB/s, and
//     the compression ratio;
//   - the compression ratio on the checked-in corpus (corpus.go): its
//     first tenth sealed as the segment a running node sealed before,
//     the rest as the next one, with the dictionary the first left it
//     (segment.dictionary, the default) and without;
//   - Store.Fetch latency of random ids from those segments: with no
//     block cache (every fetch reads and decompresses its block, the
//     file's pages in the page cache), with the file's pages dropped too
//     (the block read from the disk), and warm (the default 64 MiB cache).
//
// The store opened for the fetches has its catalogue in a meta store of
// its own and a log with nothing in it: it adopts the sealed files at
// Open, as a boot adopts whole segments, and tails nothing. The WAL commit
// with sealing behind it is the appliance's own path, which `make bench`
// measures through the built binary.
//
// Before each measurement it waits for a quiet machine: no other
// benchmark or test running (benchkit.Benchmarks) and little CPU in use;
// two heavy processes at once on a small machine measure each other.
//
// Like every program under bench/ it may import product packages (segment,
// meta, wal, envelope) and tools/loadgen/payload; no product package may
// import it.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

type options struct {
	tmp, out, kind, corpus              string
	hooks, rounds, fetches, diskFetches int
	sizes                               payload.SizeMix
	alone                               benchkit.Alone // -settle
}

func main() { benchkit.Main("bench-segment", parseFlags, measure) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench-segment", flag.ContinueOnError)
	o := &options{}
	size := fs.String("size", "70%1KiB,25%8KiB,5%64KiB", "body sizes, as loadgen -size")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the segment files (default: the system temp dir; it must be on the disk under test)")
	fs.StringVar(&o.out, "out", "bin/bench-segment.md", "markdown report")
	fs.IntVar(&o.hooks, "n", 20000, "hooks sealed in each round")
	fs.StringVar(&o.corpus, "corpus", "bench/segment/testdata/corpus.jsonl.zst", "the corpus the compression ratio is measured on (empty: none)")
	fs.StringVar(&o.kind, "kind", "mixed", "payload shape, as loadgen -kind: stripe, github or mixed")
	fs.IntVar(&o.rounds, "rounds", 5, "sealing rounds (median)")
	fs.IntVar(&o.fetches, "fetches", 3000, "random ids fetched, cold and warm")
	fs.IntVar(&o.diskFetches, "disk-fetches", 300, "of which fetched with the file's pages dropped first")
	fs.DurationVar(&o.alone.Limit, "settle", 10*time.Minute, "before each measurement, wait up to this long for a quiet machine")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	var err error
	if o.sizes, err = payload.ParseSizeMix(*size); err != nil {
		return nil, fmt.Errorf("-size %q: %w", *size, err)
	}
	if o.hooks < 1 || o.rounds < 1 || o.fetches < 1 || o.diskFetches < 0 {
		return nil, fmt.Errorf("-n %d -rounds %d -fetches %d -disk-fetches %d: want at least 1 of each (0 disk fetches allowed)", o.hooks, o.rounds, o.fetches, o.diskFetches)
	}
	return o, nil
}
