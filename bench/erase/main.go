// Command erase is `make bench-erase`: issue 20's acceptance 6, a tenant
// erase under load, measured on the built binary (bin/ankusa).
//
// One node, the tenantpath resolver, one shared source (verify: none,
// trust_url_tenant) delivering to an HTTP receiver in this process
// (url .../in/{tenant_id}), the WAL on disk, segments sealed after 1 s, a
// dir archive, and an admin token with tenants:write, tenant:* and debug:
//
//   - ingest: loadgen sends -hooks hooks (closed loop, -ingest-c
//     connections, the smallest bodies loadgen makes, 512 B) for tenant
//     big. The receiver answers big's deliveries 503 with Retry-After:
//     86400, so each hook has one attempt and then waits as a pending row
//     due a day later: -hooks delivery rows, due entries and attempt-log
//     entries for the erase to delete, and no retries meanwhile. The time
//     to ingest them and for their first attempts is reported;
//   - baseline: loadgen for tenant steady, open loop at -rate for -d
//     (after -warmup), whose deliveries the receiver takes (204);
//   - with the erase: the same run again, and -erase-at into its measured
//     window DELETE /v1/tenants/big?confirm=big; GET
//     /v1/tenants/big/erase is polled every 20 ms until the erase is done.
//     Its duration (from the 202 to erased_at, and the node's started_at
//     to erased_at), when each stage was first seen done, and the removed
//     counts per stage are reported; loadgen's figures are whole-run, so
//     the report says whether the erase ended at least 3 s before the
//     window did;
//   - after (-after): the baseline run once more, after the erase: how
//     far two runs without an erase differ on this machine at the time.
//
// The acceptance is steady's p99 with the erase within 2× of its p99
// without: the report says PASS or FAIL, but only a broken run (a node
// that would not start, an answer but 201, an erase that did not finish
// within -erase-limit) exits non-zero. A CPU profile of the node is taken
// over each steady run (-profile, the admin listener's
// /debug/pprof/profile), for where the erase's time goes.
//
// Before each steady run it waits for the node to go idle and for a quiet
// machine (no other benchmark or test, little CPU in use; -settle), and
// counts the runs that started busy. Like every program under bench/ it
// drives the node as a process; no product package imports it.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// options are the command's flags.
type options struct {
	bin, tmp, out, jsonOut, profile string
	after                           bool
	hooks                           int64
	ingestC, steadyC                int
	rate                            float64
	duration, warmup, eraseAt       time.Duration
	eraseLimit, drainLimit          time.Duration
	alone                           benchkit.Alone // -settle
}

func main() { benchkit.Main("bench-erase", parseFlags, measure) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench-erase", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.bin, "bin", "bin", "directory of the built ankusa and loadgen (make bench-build)")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the node's data directory (default: the system temp dir)")
	fs.StringVar(&o.out, "out", "bin/bench-erase.md", "markdown report")
	fs.StringVar(&o.jsonOut, "json", "bin/bench-erase.json", "figures as JSON")
	fs.StringVar(&o.profile, "profile", "bin/bench-erase", "prefix of the node's CPU profiles over the two steady runs (-baseline.pprof, -erase.pprof; \"\": none)")
	fs.Int64Var(&o.hooks, "hooks", 1_000_000, "hooks of tenant big, erased under load")
	fs.IntVar(&o.ingestC, "ingest-c", 64, "loadgen connections of big's ingest (closed loop)")
	fs.IntVar(&o.steadyC, "c", 64, "loadgen connections of steady's open-loop runs")
	fs.Float64Var(&o.rate, "rate", 2000, "steady's open-loop rate, requests/s")
	fs.DurationVar(&o.duration, "d", 30*time.Second, "measured duration of each steady run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "loadgen warm-up before each steady run's window")
	fs.DurationVar(&o.eraseAt, "erase-at", 5*time.Second, "when, into the measured window of the second steady run, the erase is requested")
	fs.DurationVar(&o.eraseLimit, "erase-limit", 10*time.Minute, "a broken run: the erase not done after this long")
	fs.DurationVar(&o.drainLimit, "drain-limit", 10*time.Minute, "a broken run: big's first attempts not all made this long after its ingest")
	fs.BoolVar(&o.after, "after", true, "run steady once more after the erase, for the spread of two runs without one")
	fs.DurationVar(&o.alone.Limit, "settle", time.Minute, "before each steady run, wait up to this long for a quiet machine")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case o.hooks < 1 || o.ingestC < 1 || o.steadyC < 1 || o.rate <= 0:
		return nil, fmt.Errorf("-hooks %d -ingest-c %d -c %d -rate %v: want at least 1 of each", o.hooks, o.ingestC, o.steadyC, o.rate)
	case o.duration <= 0 || o.warmup < 0 || o.eraseAt < 0 || o.eraseAt >= o.duration:
		return nil, fmt.Errorf("-d %v -warmup %v -erase-at %v: want a positive window, a non-negative warm-up, and the erase inside the window", o.duration, o.warmup, o.eraseAt)
	case o.eraseLimit <= 0 || o.drainLimit <= 0:
		return nil, fmt.Errorf("-erase-limit %v -drain-limit %v: want positive durations", o.eraseLimit, o.drainLimit)
	}
	return o, nil
}
