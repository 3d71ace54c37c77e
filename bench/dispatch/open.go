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

// openResult is one open-loop run with every stage running.
type openResult struct {
	Frac         float64        `json:"fraction_of_gcref"`
	Rate         float64        `json:"rate"`
	Command      string         `json:"command"`
	Load         result.Summary `json:"loadgen"`
	WindowS      float64        `json:"window_s"`
	DeliveredRPS float64        `json:"delivered_rps"`
	ReadBack     int64          `json:"read_back"` // hooks read back from the store over the window (the rest went from memory)
	BacklogMax   int64          `json:"backlog_max"`
	BacklogFinal int64          `json:"backlog_final"` // median of the window's last second
	Slope        float64        `json:"backlog_slope_per_s"`
	Bound        float64        `json:"backlog_bound"`
	LatencyUS    result.Latency `json:"delivery_latency_us"`
	CPU          cpuShares      `json:"cpu_window"`
	DrainS       float64        `json:"drain_s"`
	Bounded      bool           `json:"bounded"`
	Why          string         `json:"why,omitempty"`
	outcome
}

// Bounded backlog: the ingest kept the rate, the backlog grew by at most
// slopeShare of the rate per second over the window, and the backlog at
// the end is within boundFactor times the rate times the median delivery
// latency (Little's law: rows in the system = rate × time in it).
const (
	ingestShare = 0.98
	slopeShare  = 0.01
	boundFactor = 10
)

// openRun runs loadgen open loop at frac of gcref's maximum with every
// stage running and judges whether the delivery backlog stayed bounded.
func openRun(ctx context.Context, o *options, frac, gcrefMax float64) (*openResult, error) {
	r, err := startRun(ctx, o, targetHTTP, "")
	if err != nil {
		return nil, err
	}
	res := &openResult{Frac: frac, Rate: frac * gcrefMax}
	args := openArgs(o, r.n.Listen, res.Rate, o.openD, o.warmup)
	res.Command = commandLine(args, r.n.Listen)
	l, a, clientA, err := r.startWindow(ctx, args, o.openD)
	if err != nil {
		return nil, err
	}
	r.t.tallied().latency() // the warm-up's, left out
	if res.Load, err = r.wait(l, &res.outcome); err != nil {
		return nil, err
	}
	b := r.s.take()
	res.LatencyUS = r.t.tallied().latency()
	res.figures(between(r.s.snapshot(), a, b), a, b)
	res.CPU = shares(a, b, l.CPU()-clientA)
	why := res.unbounded()
	// A run already unbounded is not drained (its backlog could take
	// minutes); a bounded one must drain.
	res.DrainS = -1
	if len(why) == 0 {
		last, ok := r.waitDelivered(ctx, b.Records, o.drainLimit)
		res.DrainS = max(0, last.Sub(b.at).Seconds())
		if !ok {
			why = append(why, fmt.Sprintf("not drained %s after ingest stopped", o.drainLimit))
		}
	}
	r.endSampling()
	r.close(&res.outcome)
	res.Bounded, res.Why = len(why) == 0, strings.Join(why, "; ")
	fmt.Fprintf(os.Stderr, "bench-dispatch: open loop at %.0f%% of gcref (%.0f/s): ingest %.0f/s p99 %.1f ms, delivered %.0f/s, backlog max %d final %d slope %.0f/s, bounded %v %s\n",
		100*frac, res.Rate, res.Load.ThroughputRPS, float64(res.Load.LatencyUs.P99)/1000, res.DeliveredRPS, res.BacklogMax, res.BacklogFinal, res.Slope, res.Bounded, res.Why)
	return res, nil
}

// figures are the window's delivery rate and backlog from its samples,
// a at its start, b at its end.
func (res *openResult) figures(window []sample, a, b sample) {
	res.WindowS = b.at.Sub(a.at).Seconds()
	res.DeliveredRPS = float64(b.Delivered-a.Delivered) / res.WindowS
	res.ReadBack = b.Fetches - a.Fetches
	var tailPending []int64
	for _, p := range window {
		res.BacklogMax = max(res.BacklogMax, p.Pending)
		if b.at.Sub(p.at) <= time.Second {
			tailPending = append(tailPending, p.Pending)
		}
	}
	res.BacklogFinal = int64(benchkit.Median(tailPending))
	res.Slope = slope(window)
	res.Bound = boundFactor * res.Rate * float64(max(res.LatencyUS.P50, 1000)) / 1e6
}

// unbounded says why the backlog was not bounded (nothing when it was).
func (res *openResult) unbounded() []string {
	var why []string
	if p := benchkit.LoadProblems(&res.Load); len(p) > 0 {
		why = append(why, "ingest: "+strings.Join(p, ", "))
	}
	if res.Load.ThroughputRPS < ingestShare*res.Rate {
		why = append(why, fmt.Sprintf("ingest made %.0f req/s of %.0f", res.Load.ThroughputRPS, res.Rate))
	}
	if res.Slope > slopeShare*res.Rate {
		why = append(why, fmt.Sprintf("backlog grew %.0f rows/s (more than %.0f%% of the rate)", res.Slope, 100*slopeShare))
	}
	if float64(res.BacklogFinal) > res.Bound {
		why = append(why, fmt.Sprintf("final backlog %d above the bound %.0f", res.BacklogFinal, res.Bound))
	}
	return why
}

// openSearch runs the open loop at -open-frac; while the backlog stays
// bounded, 10% of gcref higher up to -max-frac; if it was not bounded,
// -open-steps halvings of the interval between 0 and the lowest unbounded
// fraction (to the percent).
func (rep *report) openSearch(ctx context.Context, o *options) error {
	try := func(frac float64) (*openResult, error) {
		var res *openResult
		err := rep.undisturbed(ctx, o, fmt.Sprintf("open loop at %.0f%%", 100*frac), func() (err error) {
			res, err = openRun(ctx, o, frac, rep.Gcref.Max)
			return err
		})
		if err != nil {
			return nil, err
		}
		rep.Open = append(rep.Open, res)
		rep.fail(res.Problems...)
		if res.Bounded {
			rep.SustainedFrac = max(rep.SustainedFrac, frac)
		}
		return res, nil
	}
	res, err := try(o.openFrac)
	if err != nil {
		return err
	}
	if res.Bounded {
		for f := round2(o.openFrac + 0.1); f <= o.maxFrac+1e-9; f = round2(f + 0.1) {
			res, err := try(f)
			if err != nil || !res.Bounded {
				return err
			}
		}
		return nil
	}
	lo, hi := 0.0, o.openFrac
	for range o.openSteps {
		mid := round2((lo + hi) / 2)
		if mid <= lo || mid >= hi {
			return nil
		}
		res, err := try(mid)
		if err != nil {
			return err
		}
		if res.Bounded {
			lo = mid
		} else {
			hi = mid
		}
	}
	return nil
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}
