package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// Targets.
const (
	targetHTTP  = "http"
	targetAMQP  = "rabbitmq"
	targetKafka = "kafka"
	targetNATS  = "nats"
)

// measureAll runs gcref, the live runs, the open-loop search, then the
// relay and the latency runs at half the sustained rate.
func measureAll(ctx context.Context, o *options) (*report, error) {
	rep := newReport(o)
	fmt.Fprintf(os.Stderr, "bench-dispatch: gcref (%d round(s)), live runs, the open loop, then the relay and the latency runs\n", o.gcrefRounds)
	if o.only["open"] {
		if err := rep.measureGcref(ctx, o); err != nil {
			return nil, err
		}
	}
	targets := []string{targetHTTP}
	if !o.skipAMQP {
		targets = append(targets, targetAMQP)
	}
	if !o.skipKafka {
		targets = append(targets, targetKafka)
	}
	if !o.skipNATS {
		targets = append(targets, targetNATS)
	}
	for _, t := range targets {
		if !o.only["live"] {
			break
		}
		filters := []string{""}
		if o.filter != "" {
			filters = append(filters, o.filter)
		}
		for _, f := range filters {
			what := "live " + t
			if f != "" {
				what += " + filter"
			}
			var r *liveResult
			if err := rep.undisturbed(ctx, o, what, func() (err error) { r, err = liveRun(ctx, o, t, f); return err }); err != nil {
				return nil, err
			}
			rep.Live = append(rep.Live, r)
			rep.fail(r.Problems...)
		}
	}
	if o.only["open"] {
		if err := rep.openSearch(ctx, o); err != nil {
			return nil, err
		}
	}
	if o.only["relay"] {
		if err := rep.measureRelay(ctx, o); err != nil {
			return nil, err
		}
		if s := rep.sustained(); s != nil {
			rep.VsRelay = s.Rate / rep.Relay.Sustained
		}
		if o.only["open"] {
			if err := rep.measureLatency(ctx, o); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// quietCPU is how busy the machine may be, in percent of one core over
// half a second, to count as quiet (an idle RabbitMQ uses a few per cent).
const quietCPU = 25

// undisturbed runs f once the machine is quiet (nothing of
// benchkit.Benchmarks running, under quietCPU in use), and again (up to
// o.redo times) while a test or another benchmark started during it.
func (rep *report) undisturbed(ctx context.Context, o *options, what string, f func() error) error {
	others := benchkit.Others(benchkit.Benchmarks)
	q := benchkit.Quiet{CPU: quietCPU, Others: others, Waiting: func(cpu float64, busy []string) {
		fmt.Fprintf(os.Stderr, "bench-dispatch: waiting for a quiet machine (CPU %.0f%% of a core; running: %s)\n", cpu, strings.Join(busy, "; "))
	}}
	for attempt := 0; ; attempt++ {
		quiet, waited, err := q.Settle(ctx, o.settle)
		if err != nil {
			return err
		}
		if !quiet {
			rep.note("%s started on a busy machine, after waiting %s for it to go quiet", what, waited.Round(time.Second))
		}
		fmt.Fprintf(os.Stderr, "bench-dispatch: %s...\n", what)
		w := benchkit.Watch(others)
		err = f()
		seen := w.End()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if seen == "" {
			return nil
		}
		if attempt == o.redo {
			rep.note("%s ran while %s ran too (kept after %d runs)", what, seen, attempt+1)
			return nil
		}
		fmt.Fprintf(os.Stderr, "bench-dispatch: %s ran while %s ran; running it again\n", what, seen)
	}
}

// gcrefResult is gcref's closed-loop maximum.
type gcrefResult struct {
	Command string    `json:"command"`
	Rounds  []float64 `json:"rounds_rps"`
	P99     []float64 `json:"rounds_p99_us"`
	Max     float64   `json:"max_rps"` // the median of the rounds
}

func (rep *report) measureGcref(ctx context.Context, o *options) (err error) {
	g := &rep.Gcref
	g.Rounds, g.P99, g.Max, err = rep.closedRounds(ctx, o, "gcref", o.gcrefRounds, func() (result.Summary, error) {
		return rep.gcrefRound(ctx, o)
	})
	return err
}

// gcrefRound is one closed-loop run of gcref.
func (rep *report) gcrefRound(ctx context.Context, o *options) (result.Summary, error) {
	g, err := benchkit.StartRef(ctx, o.bin, o.tmp, "gcref")
	if err != nil {
		return result.Summary{}, err
	}
	defer g.Shut(10 * time.Second)
	args := closedArgs(o, g.Addrs[0], o.duration, o.warmup)
	rep.Gcref.Command = commandLine(args, g.Addrs[0])
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.duration+o.warmup)
	if err != nil {
		return result.Summary{}, err
	}
	r, _, exited, err := l.Wait()
	if err != nil {
		return result.Summary{}, err
	}
	rep.fail(benchkit.Prefixed("gcref", append(exited, benchkit.LoadProblems(&r)...))...)
	return r, nil
}

// closedRounds runs n closed-loop rounds of a reference named name, each
// made by run on an undisturbed machine, and returns their rates, their
// p99s (µs) and the median rate, which the open loop runs at.
func (rep *report) closedRounds(ctx context.Context, o *options, name string, n int, run func() (result.Summary, error)) (rounds, p99 []float64, median float64, err error) {
	for round := 1; round <= n; round++ {
		var res result.Summary
		err := rep.undisturbed(ctx, o, fmt.Sprintf("%s round %d", name, round), func() (err error) {
			res, err = run()
			return err
		})
		if err != nil {
			return nil, nil, 0, err
		}
		rounds = append(rounds, res.ThroughputRPS)
		p99 = append(p99, float64(res.LatencyUs.P99))
		fmt.Fprintf(os.Stderr, "bench-dispatch: %s %.0f req/s, p99 %.2f ms\n", name, res.ThroughputRPS, float64(res.LatencyUs.P99)/1000)
	}
	median = benchkit.Median(rounds)
	if median < 100 {
		return rounds, p99, median, fmt.Errorf("%s made %.0f req/s: no rate to run the open loop at", name, median)
	}
	return rounds, p99, median, nil
}
