// Command dispatch is `make bench-dispatch`: the dispatch stage of the
// real binary (bin/ankusa) measured end to end on this machine.
//
// It runs, each on a fresh node and data directory:
//
//   - gcref: bench/gcref's closed-loop maximum under the same loadgen
//     request shape, the reference the open-loop rate is a fraction of;
//   - live, HTTP, RabbitMQ, Kafka and NATS JetStream: loadgen closed
//     loop at full speed for -d while the node delivers to an in-process
//     fasthttp receiver (204), to RabbitMQ (a queue of its own, consumed
//     here), to Kafka (a three-broker kfake cluster in this process: no
//     Kafka broker can be installed here) or to JetStream (a stream of its
//     own on the NATS server, consumed here); ingest req/s,
//     delivered hooks/s over the window, and how long the backlog takes
//     to drain once ingest stops. A first attempt goes from memory when
//     the sink's queue has room, else the hook is read back from the
//     store later; the report counts those reads (most of a run's hooks:
//     the drain is the read-back path's rate, from the open segment and
//     from sealed ones);
//   - with -filter EXPR: each live run again with sinks[].filter EXPR on
//     the sink, right after the one without, and the two compared (a
//     filter is evaluated once per hook on the row writer; the goal is
//     within 5% of the run without);
//   - open loop: loadgen -rate R with every stage running (ingest,
//     sealing, dispatch to the HTTP receiver), the delivery backlog
//     sampled every 250 ms; R starts at -open-frac of gcref's maximum and
//     moves up in steps of 10% while the backlog stays bounded, or, when
//     it did not, halves the interval below it -open-steps times: the
//     highest fraction whose backlog stayed bounded is the node's
//     sustained end-to-end figure.
//   - relay: bench/relay (store-and-forward without the store: each
//     request forwarded to the same in-process receiver, 201 after its
//     2xx) closed loop under the same request for -relay-rounds rounds;
//     its median is its end-to-end rate (it answers only once the
//     receiver has the hook), checked by an open-loop run at that rate.
//     The sustained figure is reported as a ratio to it;
//   - latency, with open and relay: the relay and then the node open loop
//     at half the node's sustained rate, measured the way Hookdeck
//     Outpost's load test does: t0 a request's scheduled send time, t2
//     its 201, t3 the receiver's first reading of the delivery, joined by
//     the body's sha256 (loadgen -sent, and the receiver hashing what it
//     gets); publish latency t2 − t0 and delivery latency t3 − t0, and a
//     ledger of every 201: delivered by the last 201, cut off (arrived
//     within -latency-drain after it) or missing. A run is void, and the
//     command exits 1, unless published = delivered + cut off + missing
//     and nothing is missing.
//
// The client, the node, the receiver (this process) and RabbitMQ share
// the machine's cores, and the report says so. Before each run it waits
// for a quiet machine (no other benchmark or test running,
// benchkit.Benchmarks, and little CPU in use) and runs again a run during
// which one of those started.
//
// It prints one markdown report (also to -out) and writes every figure as
// JSON to -json. Exit 1 when a run could not be made, lost hooks or was
// void, 2 on a usage error. The binaries (ankusa, loadgen, gcref, relay)
// are expected in -bin; `make bench-dispatch` builds them. It drives the node as a
// process and imports of the product only envelope (to read event ids);
// no product package may import it.
package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// options are the command's flags.
type options struct {
	bin, tmp, out, jsonOut, amqpURL, natsURL      string
	filter                                        string
	quick, skipAMQP, skipKafka, skipNATS, amqpAck bool
	conns, tenants, gcrefRounds, openSteps, redo  int
	relayRounds, httpConc                         int
	duration, warmup, openD, settle, drainLimit   time.Duration
	latencyDrain                                  time.Duration
	openFrac, maxFrac                             float64
	only                                          map[string]bool
}

func main() { benchkit.Main("bench-dispatch", parseFlags, measureAll) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench-dispatch", flag.ContinueOnError)
	o := &options{}
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the ankusa, loadgen, gcref and relay binaries")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the data directories (default: the system temp dir; it must be on the disk under test)")
	fs.StringVar(&o.out, "out", "", "also write the report as markdown to this file")
	fs.StringVar(&o.jsonOut, "json", "", "write every figure as JSON to this file")
	fs.BoolVar(&o.quick, "quick", false, "the smoke run, about a minute: -d 1s, -gcref-rounds 1, -relay-rounds 1, one open-loop run of 5 s at -open-frac 0.1 (the sustained figure recorded in bench/RESULTS.md) (flags given explicitly win)")
	fs.IntVar(&o.httpConc, "http-concurrency", 256, "the HTTP sink's concurrency (tenant_concurrency a quarter of it): as many deliveries in flight as the relay forwards at once with -c 256; 0 leaves the sink's defaults (32 and 8)")
	fs.IntVar(&o.conns, "c", 256, "loadgen connections, closed and open loop")
	fs.IntVar(&o.tenants, "tenants", 16, "tenants the hooks are spread over (loadgen -tenants; URL /webhooks/{tenant}/demo)")
	fs.DurationVar(&o.duration, "d", 5*time.Second, "measured duration of the gcref and live runs")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "loadgen warm-up before each measured window")
	fs.IntVar(&o.gcrefRounds, "gcref-rounds", 2, "rounds of gcref's closed-loop run; its maximum is their median")
	fs.DurationVar(&o.openD, "open-d", 15*time.Second, "measured duration of each open-loop run")
	fs.Float64Var(&o.openFrac, "open-frac", 0.5, "first open-loop rate, as a fraction of gcref's maximum")
	fs.Float64Var(&o.maxFrac, "max-frac", 0.7, "highest fraction tried, in steps of 10%, while the backlog stays bounded")
	fs.IntVar(&o.openSteps, "open-steps", 4, "when -open-frac is not bounded: runs halving the interval between 0 and the lowest unbounded fraction")
	fs.StringVar(&o.amqpURL, "amqp", "amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ URL; the runs declare their own exchange and queue and delete them")
	fs.BoolVar(&o.skipAMQP, "no-amqp", false, "skip the RabbitMQ runs")
	fs.BoolVar(&o.amqpAck, "amqp-ack", false, "consume the RabbitMQ queue with acks (prefetch 4096, acked in groups) instead of no-ack: the broker then spends about twice the CPU per message, taken from the cores the node shares")
	fs.BoolVar(&o.skipKafka, "no-kafka", false, "skip the Kafka runs (an in-process kfake cluster)")
	fs.StringVar(&o.natsURL, "nats", "nats://127.0.0.1:4222", "NATS server with JetStream; the runs create a stream of their own and delete it")
	fs.BoolVar(&o.skipNATS, "no-nats", false, "skip the NATS JetStream runs")
	fs.IntVar(&o.relayRounds, "relay-rounds", 2, "rounds of the relay's closed-loop run; its maximum is their median")
	fs.DurationVar(&o.latencyDrain, "latency-drain", 10*time.Second, "latency runs: after the last 201, wait this long for every published hook to reach the receiver (what arrives after the window is cut off, what never does is missing)")
	only := fs.String("only", "live,open,relay", "the kinds of run to make, comma-separated (gcref runs with open; the latency runs at half the appliance's sustained rate need open and relay)")
	fs.DurationVar(&o.settle, "settle", 15*time.Minute, "before each run, wait up to this long for a quiet machine")
	fs.IntVar(&o.redo, "redo", 2, "run again, up to this many times, a run during which a test or another benchmark started")
	fs.StringVar(&o.filter, "filter", "", "also make each live run with this sinks[].filter (CEL) on the sink, right after the same run without it, and compare the two; it must match every hook (each run checks that every hook is delivered)")
	fs.DurationVar(&o.drainLimit, "drain-limit", 90*time.Second, "give up waiting for a backlog to drain after this long")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	o.only = map[string]bool{}
	for _, k := range strings.Split(*only, ",") {
		switch k = strings.TrimSpace(k); k {
		case "live", "open", "relay":
			o.only[k] = true
		default:
			return nil, fmt.Errorf("-only %q: want live, open and relay, comma-separated", *only)
		}
	}
	if o.quick {
		benchkit.Unset(fs, map[string]func(){
			"d":            func() { o.duration = time.Second },
			"gcref-rounds": func() { o.gcrefRounds = 1 },
			"relay-rounds": func() { o.relayRounds = 1 },
			"open-d":       func() { o.openD = 5 * time.Second },
			"max-frac":     func() { o.maxFrac = 0 },
			"open-steps":   func() { o.openSteps = 0 },
			"open-frac":    func() { o.openFrac = 0.1 },
		})
	}
	switch {
	case o.conns < 1 || o.tenants < 1:
		return nil, fmt.Errorf("-c %d -tenants %d: want at least 1 of each", o.conns, o.tenants)
	case o.duration <= 0 || o.openD <= 0 || o.warmup < 0:
		return nil, fmt.Errorf("-d %v -open-d %v -warmup %v: want positive durations and a non-negative warm-up", o.duration, o.openD, o.warmup)
	case o.gcrefRounds < 1 || o.relayRounds < 1:
		return nil, fmt.Errorf("-gcref-rounds %d -relay-rounds %d: want at least 1 of each", o.gcrefRounds, o.relayRounds)
	case o.latencyDrain <= 0:
		return nil, fmt.Errorf("-latency-drain %v: want a positive duration", o.latencyDrain)
	case o.openFrac <= 0 || o.openFrac > 1 || o.maxFrac < 0 || o.maxFrac > 1:
		return nil, fmt.Errorf("-open-frac %v -max-frac %v: want (0, 1] and [0, 1]", o.openFrac, o.maxFrac)
	case o.openSteps < 0:
		return nil, fmt.Errorf("-open-steps %d: want 0 or more", o.openSteps)
	case o.redo < 0:
		return nil, fmt.Errorf("-redo %d: want 0 or more", o.redo)
	}
	return o, nil
}
