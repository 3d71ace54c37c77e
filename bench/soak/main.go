// Command soak is the chaos soak of issue 16: open-loop ingest over many
// tenants and sources into the built binary, delivered to an HTTP
// receiver and to RabbitMQ and archived to S3, while a scheduler injects
// faults; at the end it checks that every acknowledged hook reached every
// sink and the archive, byte for byte.
//
//	soak -bin bin -d 10m [-rate 300] [-disk-fault=false] [-json bin/soak.json]
//
// # What runs
//
// Everything the soak kills is its own: a private redis-server, a private
// RabbitMQ node (its own node name, ports and mnesia directory, booted
// once before the run, about 15 s cold and 9 s on a restart on two
// cores), a private versitygw (the S3 archive), and the node, `ankusa
// serve` of -bin, whose data_dir is a tmpfs the soak mounts (it needs
// root) so the disk can be filled. The machine's shared RabbitMQ
// (127.0.0.1:5672) and Redis (127.0.0.1:6379) are never touched.
//
// The node: the tenantpath resolver, -tenants tenants and -sources shared
// sources that trust the URL's tenant; every source delivers to both sinks
// in raw format (the body as received), so each sink receives the very
// bytes that were sent. Rate limits and dedupe are fleet-scoped through the
// private Redis (half the sources dedupe on the body's "id", which is
// unique per request): those are what the Redis fault exercises, and both
// fall back or answer without Redis by design.
//
// # Load
//
// An open-loop generator in this program sends request i at start + i/rate
// with Stripe-like bodies (tools/loadgen/payload) carrying a token unique
// to the request, at most -inflight at once (a request due when all are
// busy is counted "unsent", not queued). Each 201's event id, the sha256
// of the body and the time of the answer are kept; every answer or
// transport error is counted per -interval for the timeline.
//
// # Faults
//
// After the first tenth of the run, and until the last tenth, the
// scheduler injects one fault at a time, each kind in turn in a shuffled
// order (-seed), with a pause between them: kill -9 of the node (restarted
// at once), SIGSTOP then SIGCONT of the node, the receiver answering 503,
// the receiver hanging (it answers only once the window ends, past the
// sink's timeout), RabbitMQ, Redis and the S3 server killed -9 and started
// again, and the node's disk filled and freed (-disk-fault). A node that
// exits when the scheduler did not kill it is a finding: it is written in
// the timeline, fails the run, and is restarted so that the run goes on.
//
// # Check
//
// The faults end (everything restarted, resumed and freed), the load
// stops, and the soak waits up to -drain for every acknowledged hook to
// reach both sinks and the archive (the bucket's segment objects, read
// with the segment package's reader). A hook missing from a sink or the
// archive, or whose body there differs from what was sent, fails the run;
// duplicates (a hook delivered more than once) are counted per sink and
// reported, as at-least-once delivery allows them.
//
// The report: a timeline of the faults (start, kind, duration, what
// happened) beside the answers per interval (201, 429, 503, other,
// transport errors), then a summary (acknowledged, faults by kind,
// duplicates per sink, the largest time from a 201 to the first delivery
// per sink). -json writes the figures for bench/RESULTS.md. The exit code
// is 1 on any missing or differing hook or any unexpected exit of the
// node.
//
// Its test, TestSoak, is a 2-minute soak: make test runs it on its own
// after the other packages' tests, as it loads both cores, and leaves it
// out of its go test ./... with -skip.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// Options is one soak run as the flags describe it.
type Options struct {
	Bin       string        // directory of the built ankusa
	Tmp       string        // parent of the soak's directories ("": system temp)
	Duration  time.Duration // the load's length
	Rate      float64       // hooks per second, open loop
	Inflight  int           // requests in flight at most
	Tenants   int
	Sources   int
	Interval  time.Duration // timeline granularity
	Drain     time.Duration // bound on the wait for delivery after the load
	Pause     time.Duration // between two faults
	Seed      uint64
	DiskFault bool
	Faults    []string // the kinds to inject (all by default)
	Out       string   // markdown report
	JSONOut   string   // figures as JSON
}

func main() {
	benchkit.Main("soak", parseOptions, run)
}

func parseOptions(args []string) (Options, error) {
	o := Options{}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var kinds string
	fs.StringVar(&o.Bin, "bin", "bin", "directory of the built ankusa (make build)")
	fs.StringVar(&o.Tmp, "tmp", "", "parent directory of the soak's data (default: the system temp dir)")
	fs.DurationVar(&o.Duration, "d", 10*time.Minute, "how long the load runs (faults in all but the first and last tenth)")
	fs.Float64Var(&o.Rate, "rate", 300, "hooks per second, open loop")
	fs.IntVar(&o.Inflight, "inflight", 256, "requests in flight at most (a request due when all are busy is counted unsent)")
	fs.IntVar(&o.Tenants, "tenants", 40, "tenants (t0..tN-1), picked uniformly")
	fs.IntVar(&o.Sources, "sources", 4, "shared sources (s0..sN-1), picked uniformly")
	fs.DurationVar(&o.Interval, "interval", 5*time.Second, "timeline granularity")
	fs.DurationVar(&o.Drain, "drain", 2*time.Minute, "how long to wait after the load for every hook to reach every sink and the archive")
	fs.DurationVar(&o.Pause, "pause", 4*time.Second, "pause between two faults")
	fs.Uint64Var(&o.Seed, "seed", uint64(time.Now().UnixNano()), "seed of the fault order and the load's draws")
	fs.BoolVar(&o.DiskFault, "disk-fault", true, "fill and free the node's disk (a tmpfs) as one of the faults")
	fs.StringVar(&kinds, "faults", "all", "comma-separated fault kinds to inject, or all, or none: "+allKindsList())
	fs.StringVar(&o.Out, "out", "", "write the report's markdown to `FILE`")
	fs.StringVar(&o.JSONOut, "json", "", "write the figures as JSON to `FILE`")
	if err := benchkit.Parse(fs, args); err != nil {
		return o, err
	}
	faults, err := parseKinds(kinds, o.DiskFault)
	if err != nil {
		return o, err
	}
	o.Faults = faults
	return o, o.validate()
}

func (o Options) validate() error {
	switch {
	case o.Duration < 20*time.Second:
		return fmt.Errorf("-d %v: a soak runs at least 20s", o.Duration)
	case o.Rate <= 0:
		return fmt.Errorf("-rate %g: must be positive", o.Rate)
	case o.Inflight < 1:
		return fmt.Errorf("-inflight %d: must be at least 1", o.Inflight)
	case o.Tenants < 1 || o.Sources < 1:
		return fmt.Errorf("-tenants %d, -sources %d: need at least one of each", o.Tenants, o.Sources)
	case o.Interval < time.Second:
		return fmt.Errorf("-interval %v: at least 1s", o.Interval)
	case o.Drain <= 0 || o.Pause < 0:
		return fmt.Errorf("-drain %v, -pause %v: the drain must be positive, the pause not negative", o.Drain, o.Pause)
	case os.Geteuid() != 0:
		return errors.New("the soak mounts a tmpfs for the node's data and needs root")
	}
	if _, err := os.Stat(filepath.Join(o.Bin, "ankusa")); err != nil {
		return fmt.Errorf("-bin %q: %w (make build)", o.Bin, err)
	}
	return nil
}

// run is the soak: set up, load with faults, check, report.
func run(ctx context.Context, o Options) (*Report, error) {
	s, err := setUp(ctx, o)
	if err != nil {
		return nil, err
	}
	defer s.tearDown()
	return s.soak(ctx)
}
