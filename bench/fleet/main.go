// Command fleet is `make bench-fleet`: what the redis source store
// (source_store: redis, issue 18) costs, measured on the built binary
// with two nodes, A and B (each its own data directory), sharing a fresh
// namespace of the Redis at -redis, deleted at the end; tick_ms 1000,
// secrets.kek set (stored secrets sealed), the tenantpath resolver:
//
//   - seeding: -sources stored sources over -tenants tenants written into
//     the namespace before the nodes boot, in-process through
//     source.OpenFleet over a meta store of its own, from -seeders
//     goroutines, each write as an admin create makes it (a synced
//     pending record, the Lua check-and-set, a synced audit row): the
//     seeding rate;
//   - boot of A, from process start to /readyz 200, and the RSS then:
//     its first boot (no local mirror: it reads every source from
//     Redis), a boot with its local mirror (Redis up), and one with
//     source_store.url at a port where nothing listens (same namespace:
//     it serves the mirror); then B's first boot;
//   - propagation: -writes sequential creates on A (a source verified by
//     nothing); after each 201 the bench posts a hook to B for the new
//     source in a tight loop until B answers 201: the time from A's 201
//     to B's, p50/p99/p99.9/max. The same with -small sources stored
//     (default 0), to show the cost does not grow with the store: a node
//     reads only what changed;
//   - creates/s over A's admin API at each -clients level, with p50/p99
//     per create.
//
// Before each measurement it waits for a quiet machine, as
// bench/controlplane does. Like every program under bench/ it may import
// product packages (config, meta, source, secrets: for the seeding); no
// product package imports it.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

type options struct {
	bin, tmp, out, jsonOut string
	redis                  string
	sources, tenants       int
	small                  int
	seeders                int
	writes                 int
	clients                []int
	createD                time.Duration
	alone                  benchkit.Alone // -settle
}

func main() { benchkit.Main("bench-fleet", parseFlags, measure) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench-fleet", flag.ContinueOnError)
	o := &options{clients: []int{1, 16}}
	fs.Var((*benchkit.Ints)(&o.clients), "clients", "concurrent admin clients of the creates/s runs, comma-separated")
	fs.StringVar(&o.bin, "bin", "bin", "directory of the built ankusa (make bench-build)")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the data directories (default: the system temp dir)")
	fs.StringVar(&o.out, "out", "bin/bench-fleet.md", "markdown report")
	fs.StringVar(&o.jsonOut, "json", "bin/bench-fleet.json", "figures as JSON")
	fs.StringVar(&o.redis, "redis", "redis://127.0.0.1:6379/0", "the Redis of the nodes' source_store.url (a fresh namespace per run, deleted at the end)")
	fs.IntVar(&o.sources, "sources", 100000, "stored sources")
	fs.IntVar(&o.tenants, "tenants", 10000, "tenants the sources are spread over")
	fs.IntVar(&o.small, "small", 0, "stored sources of the store the propagation is compared with")
	fs.IntVar(&o.seeders, "seeders", 32, "goroutines writing the seeded sources")
	fs.IntVar(&o.writes, "writes", 1000, "sequential creates on A whose propagation to B is timed, with each store")
	fs.DurationVar(&o.createD, "create-d", 5*time.Second, "length of each creates/s run")
	fs.DurationVar(&o.alone.Limit, "settle", 2*time.Minute, "before each measurement, wait up to this long for a quiet machine")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.sources < 1 || o.tenants < 1 || o.tenants > o.sources || o.small < 0 || o.seeders < 1 || o.writes < 1 {
		return nil, fmt.Errorf("-sources %d -tenants %d -small %d -seeders %d -writes %d: want at least 1 of each (-small may be 0), and no more tenants than sources",
			o.sources, o.tenants, o.small, o.seeders, o.writes)
	}
	if u, err := url.Parse(o.redis); err != nil || u.Scheme != "redis" {
		return nil, fmt.Errorf("-redis %q: want redis://host:port/db", o.redis)
	}
	return o, nil
}
