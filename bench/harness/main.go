// Command harness is `make bench` and `make bench-quick`: it runs the bare
// fasthttp ceiling (bench/ceiling), the group-commit reference
// (bench/gcref) and the appliance (`ankusa serve`, WAL on disk, default
// durable settings) in turn under the identical tools/loadgen command, for
// several rounds and connection counts, then open-loop rounds at half the
// appliance's measured maximum, and prints one table of the medians.
//
// It writes the table as markdown to -out and every raw figure as JSON to
// -json. It exits 1 if any server answered anything but 201 or a request
// failed, or if the appliance's best round falls below -min-ratio of
// gcref's best round (the guard CI runs with -quick; best rounds because
// one round on shared cores can land in a low mode a regression does not
// explain), and 2 on a usage error.
//
// The binaries (ankusa, loadgen, ceiling, gcref) are expected in -bin; the
// Makefile builds them first. It drives each of them as a process: it
// imports no product package (its test loads the appliance's config with
// package config), and nothing outside bench/ may import it.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// options are the harness's flags.
type options struct {
	bin, out, jsonOut, tmp   string
	rounds, openConns, redo  int
	openRounds               int
	conns                    []int
	duration, warmup, settle time.Duration
	openFrac, minRatio       float64
	quick                    bool
}

func main() { benchkit.Main("harness", parseFlags, measureAll) }

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	o := &options{conns: []int{64, 256}}
	fs.Var((*benchkit.Ints)(&o.conns), "conns", "comma-separated connection counts of the closed-loop runs")
	fs.StringVar(&o.bin, "bin", "bin", "directory holding the ankusa, loadgen, ceiling and gcref binaries")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of the closed-loop runs; the table shows their medians")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "measured duration of each run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up before each measured run, excluded from the figures")
	fs.Float64Var(&o.openFrac, "open-frac", 0.5, "open-loop rate as a fraction of the appliance's median req/s at -open-conns")
	fs.IntVar(&o.openRounds, "open-rounds", 3, "rounds of the open-loop run, gcref and the appliance taking turns; the table shows their medians (one 10 s run's p99 on shared cores swings several-fold from one run to the next)")
	fs.IntVar(&o.openConns, "open-conns", 256, "connections of the open-loop run; the rate comes from the closed-loop run at this count")
	fs.Float64Var(&o.minRatio, "min-ratio", 0, "fail if the appliance's best round's req/s is below this fraction of gcref's best round's (0: no guard)")
	fs.BoolVar(&o.quick, "quick", false, "the CI run: 3 rounds, 256 connections, -d 3s -warmup 1s, -min-ratio 0.6 (flags given explicitly win)")
	fs.StringVar(&o.out, "out", "", "also write the table as markdown to this file")
	fs.StringVar(&o.jsonOut, "json", "", "write every raw figure as JSON to this file")
	fs.DurationVar(&o.settle, "settle", time.Minute, "before each run, wait up to this long for the rest of the machine to go quiet (under 20% of one core for half a second)")
	fs.IntVar(&o.redo, "redo", 2, "run again, up to this many times, a run during which other processes used more than 15% of one core")
	fs.StringVar(&o.tmp, "tmp", "", "parent of the servers' data directories (default: the system temp dir; it must be on the disk under test)")
	if err := benchkit.Parse(fs, args); err != nil {
		return nil, err
	}
	if o.quick {
		benchkit.Unset(fs, map[string]func(){
			"rounds":    func() { o.rounds = 3 },
			"conns":     func() { o.conns = []int{256} },
			"d":         func() { o.duration = 3 * time.Second },
			"warmup":    func() { o.warmup = time.Second },
			"min-ratio": func() { o.minRatio = 0.6 },
		})
	}
	switch {
	case o.rounds < 1:
		return nil, fmt.Errorf("-rounds %d: want at least 1", o.rounds)
	case o.openRounds < 1:
		return nil, fmt.Errorf("-open-rounds %d: want at least 1", o.openRounds)
	case o.duration <= 0 || o.warmup < 0:
		return nil, fmt.Errorf("-d %v -warmup %v: want a positive duration and a non-negative warm-up", o.duration, o.warmup)
	case o.redo < 0:
		return nil, fmt.Errorf("-redo %d: want 0 or more", o.redo)
	case o.openFrac < 0 || o.openFrac > 1:
		return nil, fmt.Errorf("-open-frac %v: want 0 (no open-loop run) to 1", o.openFrac)
	}
	return o, nil
}
