package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// liveResult is loadgen closed loop at full speed while the node
// delivers.
type liveResult struct {
	Target       string         `json:"target"`
	Filter       string         `json:"filter,omitempty"` // the sink's filter ("": none)
	Command      string         `json:"command"`
	Load         result.Summary `json:"loadgen"`
	Hooks        int64          `json:"hooks"` // committed over the whole run, warm-up included
	WindowS      float64        `json:"window_s"`
	IngestRPS    float64        `json:"ingest_rps"`
	DeliveredRPS float64        `json:"delivered_rps"` // first deliveries over the measured window
	BacklogAtEnd int64          `json:"backlog_at_ingest_end"`
	BacklogMax   int64          `json:"backlog_max"`
	DrainS       float64        `json:"drain_s"` // ingest end to the last first delivery
	DrainRPS     float64        `json:"drain_rps"`
	EndToEndRPS  float64        `json:"end_to_end_rps"` // every hook / (first send to last delivery)
	PastIntake   int64          `json:"past_intake"`    // hooks past the intake's memory bound
	ReadBack     int64          `json:"read_back"`      // hooks read back from the store (segment fetches) instead of attempted from memory
	CacheHitRate float64        `json:"block_cache_hit_rate"`
	Retries      int64          `json:"retries"`
	Duplicates   int64          `json:"duplicates"`
	LatencyUS    result.Latency `json:"delivery_latency_us"`
	CPU          cpuShares      `json:"cpu_window"`
	Drained      bool           `json:"drained"`
	outcome
}

func liveRun(ctx context.Context, o *options, kind, filter string) (*liveResult, error) {
	r, err := startRun(ctx, o, kind, filter)
	if err != nil {
		return nil, err
	}
	res := &liveResult{Target: kind, Filter: filter}
	args := closedArgs(o, r.n.Listen, o.duration, o.warmup)
	res.Command = commandLine(args, r.n.Listen)
	l, a, clientA, err := r.startWindow(ctx, args, o.duration)
	if err != nil {
		return nil, err
	}
	if res.Load, err = r.wait(l, &res.outcome); err != nil {
		return nil, err
	}
	b := r.s.take()
	res.problem(benchkit.Prefixed("live "+kind, benchkit.LoadProblems(&res.Load))...)
	last, ok := r.waitDelivered(ctx, b.Records, o.drainLimit)
	final := r.s.take()
	r.endSampling()
	unique, total, bad := r.t.tallied().counts()
	res.LatencyUS = r.t.tallied().latency()
	r.close(&res.outcome)
	res.figures(r, a, b, final, last)
	res.CPU = shares(a, b, l.CPU()-clientA)
	res.Drained, res.EndToEndRPS, res.Duplicates = ok, float64(unique)/last.Sub(l.Started).Seconds(), total-unique-bad
	if !ok {
		res.problem(fmt.Sprintf("live %s: %d of %d hooks delivered after waiting %s", kind, unique, b.Records, o.drainLimit))
	}
	if bad > 0 {
		res.problem(fmt.Sprintf("live %s: %d deliveries without a parsable event id", kind, bad))
	}
	if filter != "" {
		kind += " + filter"
	}
	fmt.Fprintf(os.Stderr, "bench-dispatch: live %s: ingest %.0f/s, delivered %.0f/s while ingesting, backlog %d at ingest end, drained in %.1fs (%.0f/s)\n",
		kind, res.IngestRPS, res.DeliveredRPS, res.BacklogAtEnd, res.DrainS, res.DrainRPS)
	return res, nil
}

// figures are the live run's rates and backlog from its samples: a at the
// start of the measured window, b at ingest end, final once drained, last
// the last first delivery.
func (res *liveResult) figures(r *nodeRun, a, b, final sample, last time.Time) {
	res.Hooks = b.Records
	res.WindowS = b.at.Sub(a.at).Seconds()
	res.IngestRPS = res.Load.ThroughputRPS
	res.DeliveredRPS = float64(b.Delivered-a.Delivered) / res.WindowS
	res.BacklogAtEnd = b.Pending
	for _, p := range r.series {
		res.BacklogMax = max(res.BacklogMax, p.Pending)
	}
	res.DrainS = max(0, last.Sub(b.at).Seconds())
	if res.DrainS > 0 {
		res.DrainRPS = float64(b.Records-b.Delivered) / res.DrainS
	}
	res.PastIntake, res.ReadBack, res.Retries = final.Overflow, final.Fetches, final.Retries
	res.CacheHitRate = hitRate(r.series[0], final)
}
