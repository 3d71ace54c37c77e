// Command controlplane is `make bench-controlplane`: what the control plane
// costs at a SaaS's scale (issue 15, "Scale"), measured on the built
// binary with the persistent source store, the tenantpath resolver and
// -sources stored sources spread over -tenants tenants:
//
//   - boot: from process start to the admin listener's /readyz 200 with
//     the sources stored (seeded in-process beforehand through
//     source.Persistent over the node's own meta store, while the node is
//     not running: pebble holds a lock), and the RSS after boot against a
//     node with -small sources: bytes per source;
//   - the request path: tools/loadgen against one source for -load-d, on
//     the node with -sources and on one with -small, the same config
//     otherwise;
//   - creates/s over the admin API (POST /v1/tenants/{t}/sources, each a
//     synced meta write with its audit row) with the sources existing, at
//     each -clients level, with p50/p99 per create; a CPU profile of the
//     node (/debug/pprof/profile) is taken during the busiest level, and
//     a heap profile after the last boot;
//   - write-to-serve: after each of -serve creates' 201, a signed hook to
//     the new source's catch URL at once: how many answers are not 201
//     (any is a bug) and the time from the admin 201 to the edge's 201.
//
// Before each measurement it waits for a quiet machine, as bench/segment
// does. Like every program under bench/ it may import product packages
// (config, meta, source: for the seeding); no product package imports it.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

type options struct {
	bin, tmp, out, jsonOut string
	profile, heapProfile   string
	sources, tenants       int
	small                  int
	boots                  int
	clients                []int
	createD                time.Duration
	serve, serveClients    int
	loadD, loadWarm        time.Duration
	loadC                  int
	alone                  benchkit.Alone // -settle
}

func main() { benchkit.Main("bench-controlplane", parseFlags, measure) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench-controlplane", flag.ContinueOnError)
	o := &options{clients: []int{1, 16, 64}}
	fs.Var((*benchkit.Ints)(&o.clients), "clients", "concurrent admin clients of the creates/s runs, comma-separated")
	fs.StringVar(&o.bin, "bin", "bin", "directory of the built ankusa and loadgen (make bench-build)")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the data directories (default: the system temp dir)")
	fs.StringVar(&o.out, "out", "bin/bench-controlplane.md", "markdown report")
	fs.StringVar(&o.jsonOut, "json", "bin/bench-controlplane.json", "figures as JSON")
	fs.StringVar(&o.profile, "profile", "bin/bench-controlplane-creates.pprof", "CPU profile of the node during the busiest creates run (\"\": none)")
	fs.StringVar(&o.heapProfile, "heap-profile", "bin/bench-controlplane-heap.pprof", "heap profile of the node after its last boot with the sources stored (\"\": none)")
	fs.IntVar(&o.sources, "sources", 100000, "stored sources")
	fs.IntVar(&o.tenants, "tenants", 10000, "tenants the sources are spread over")
	fs.IntVar(&o.small, "small", 10, "stored sources of the node the request path is compared with")
	fs.IntVar(&o.boots, "boots", 3, "boots with the sources stored (median)")
	fs.DurationVar(&o.createD, "create-d", 5*time.Second, "length of each creates/s run")
	fs.IntVar(&o.serve, "serve", 1000, "creates each followed at once by a hook (write-to-serve)")
	fs.IntVar(&o.serveClients, "serve-clients", 16, "concurrent clients of the write-to-serve run")
	fs.DurationVar(&o.loadD, "load-d", 10*time.Second, "loadgen's measured duration on each node")
	fs.DurationVar(&o.loadWarm, "load-warmup", 2*time.Second, "loadgen's warm-up")
	fs.IntVar(&o.loadC, "load-c", 64, "loadgen's connections")
	fs.DurationVar(&o.alone.Limit, "settle", 2*time.Minute, "before each measurement, wait up to this long for a quiet machine")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.sources < 1 || o.tenants < 1 || o.tenants > o.sources || o.small < 1 || o.boots < 1 || o.serve < 1 || o.serveClients < 1 || o.loadC < 1 {
		return nil, fmt.Errorf("-sources %d -tenants %d -small %d -boots %d -serve %d -serve-clients %d -load-c %d: want at least 1 of each, and no more tenants than sources",
			o.sources, o.tenants, o.small, o.boots, o.serve, o.serveClients, o.loadC)
	}
	return o, nil
}
