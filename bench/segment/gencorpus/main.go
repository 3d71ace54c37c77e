// Command gencorpus writes the corpus bench/segment measures segments on:
// Stripe-like and GitHub-like webhook events, one JSON object a line,
//
//	{"source":"stripe","tenant":"acme-shop","event":"invoice.paid","body":{...}}
//
// It is deterministic: the same flags give the same bytes. The checked-in
// corpus, 12,000 events (60% Stripe), was made with
//
//	go run ./bench/segment/gencorpus | zstd -19 --long=27 -o bench/segment/testdata/corpus.jsonl.zst
//
// 12,000 rather than 20,000 events keep it under 3 MB: about 240 bytes of every event are fresh ids, secrets, shas
// and prose, which nothing compresses away.
//
// The events are drawn from a small world, not from independent random
// values: a few merchants and organisations (the tenants), each with its
// customers, products, repositories and members, referred to again and
// again, and payments whose events follow each other; ids, secrets, shas,
// URLs with tokens and prose are fresh. Recurring entities are much of
// what a compressor finds in real webhook traffic, and what a generator
// drawing every value afresh (tools/loadgen's, built to fill request
// bodies) leaves out.
// Bodies are minified and 0.5 to 8 KiB.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

const (
	minSize = 512
	maxSize = 8 << 10
)

func main() {
	n := flag.Int("n", 12000, "number of events")
	stripeShare := flag.Float64("stripe", 0.6, "share of Stripe events (the rest are GitHub)")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "-", "output file (- is stdout)")
	flag.Parse()
	if err := run(*n, *stripeShare, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}

func run(n int, stripeShare float64, seed uint64, out string) error {
	w := os.Stdout
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("cannot create %q: %w", out, err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	wd := newWorld(seed, stripeShare)
	var line []byte
	for range n {
		source, tenant, event, body := wd.next()
		line = fmt.Appendf(line[:0], `{"source":%q,"tenant":%q,"event":%q,"body":`, source, tenant, event)
		line = append(append(line, body...), '}', '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("cannot write the corpus: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write the corpus: %w", err)
	}
	fmt.Fprintf(os.Stderr, "gencorpus: %d events (%d drawn again for passing %d bytes)\n", n, wd.redrawn, maxSize)
	return w.Close()
}
