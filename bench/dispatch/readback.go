package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// readbackResult is the drain of preloaded dead letters over HTTP: every
// body read back from the node's store.
type readbackResult struct {
	Target       string    `json:"target"` // http
	Store        string    `json:"store"`  // where the bodies are read back from
	Command      string    `json:"preload_command"`
	Hooks        int64     `json:"hooks"`
	PreloadRPS   float64   `json:"preload_rps"`
	DeadLetterS  float64   `json:"dead_lettering_s"` // preload start until every hook was a dead letter (and sealed, for sealed segments)
	Revived      int       `json:"revived"`
	RetryCallS   float64   `json:"retry_calls_s"` // the admin API's retry of every tenant's dead letters
	DrainS       float64   `json:"drain_s"`       // first retry call to the last delivery
	DeliveredRPS float64   `json:"delivered_rps"` // hooks / DrainS
	SteadyRPS    float64   `json:"steady_rps"`    // 80% of the hooks / time from 10% to 90% delivered
	Duplicates   int64     `json:"duplicates"`
	ReadBack     int64     `json:"read_back"` // segment fetches during the drain
	CacheHitRate float64   `json:"block_cache_hit_rate"`
	CPU          cpuShares `json:"cpu_drain"`
	Drained      bool      `json:"drained"`
	outcome
}

// Segment settings of the read-back runs: hooks kept in the open segment
// (nothing seals for ten minutes; the hooks stay under segment.max_bytes),
// or sealed a second after the last one.
const (
	segmentKeepOpen = "segment: {max_age: 10m}\n"
	segmentSealSoon = "segment: {max_age: 1s}\n"
)

func storeName(sealed bool) string {
	if sealed {
		return "sealed segments"
	}
	return "the open segment"
}

// readbackRun preloads -n hooks while the receiver answers 503 and the
// sink makes one attempt (max_attempts 1), so that each becomes a dead
// letter, heals the receiver, retries them all through the admin API and
// measures the drain, every body read back from the store (kept in the
// open segment, or sealed).
func readbackRun(ctx context.Context, o *options, sealed bool) (*readbackResult, error) {
	segment := segmentKeepOpen
	if sealed {
		segment = segmentSealSoon
	}
	recv, err := startReceiver(false)
	if err != nil {
		return nil, err
	}
	r, err := startRun(ctx, o, recv, ", max_attempts: 1", segment)
	if err != nil {
		return nil, err
	}
	res := &readbackResult{Target: targetHTTP, Store: storeName(sealed)}
	if err := res.preload(ctx, r, sealed); err != nil {
		return nil, err
	}
	recv.failing.Store(false)
	res.drain(ctx, r)
	fmt.Fprintf(os.Stderr, "bench-dispatch: read-back from %s: %d hooks drained in %.1fs (%.0f/s; %.0f/s from 10%% to 90%%)\n",
		res.Store, res.Hooks, res.DrainS, res.DeliveredRPS, res.SteadyRPS)
	return res, nil
}

// preload sends the hooks and waits until they are all dead letters. On
// an error the run is finished.
func (res *readbackResult) preload(ctx context.Context, r *nodeRun, sealed bool) error {
	args := countArgs(r.o, r.n.listen, r.o.readbackN)
	res.Command = commandLine(args, r.n.listen)
	began := time.Now()
	l, err := startLoad(ctx, r.o, args, 5*time.Minute)
	if err != nil {
		r.finish()
		return err
	}
	lr, err := r.wait(l, &res.outcome)
	if err != nil {
		return err
	}
	res.PreloadRPS = lr.ThroughputRPS
	res.problem(prefixed("read-back preload "+res.Target, benchkit.LoadProblems(&lr))...)
	p, err := res.waitDead(ctx, r, sealed)
	if err != nil {
		return err
	}
	res.DeadLetterS = time.Since(began).Seconds()
	res.Hooks = p.Records
	if !sealed && p.Unsealed != p.Records {
		res.problem(fmt.Sprintf("read-back %s: %d of %d hooks in the open segment at the retry", res.Target, p.Unsealed, p.Records))
	}
	return nil
}

// waitDead waits, at most -drain-limit, until every hook is a dead letter
// and nothing is pending (sealed: and nothing is left unsealed), and
// returns the last sample. On an error the run is finished.
func (res *readbackResult) waitDead(ctx context.Context, r *nodeRun, sealed bool) (sample, error) {
	ready := func(p sample) bool {
		if p.err != nil || p.Records == 0 || p.Dead < p.Records || p.Pending > 0 {
			return false
		}
		return !sealed || p.Unsealed == 0
	}
	deadline := time.Now().Add(r.o.drainLimit)
	for {
		p := r.s.take()
		if ready(p) {
			return p, nil
		}
		if !r.n.alive() {
			res.problem(r.finish()...)
			return p, fmt.Errorf("the node exited while dead-lettering the preloaded hooks: %s", strings.Join(res.Problems, "; "))
		}
		if time.Now().After(deadline) {
			res.problem(fmt.Sprintf("read-back %s: the preloaded hooks were not all dead letters in %s within %s (%d hooks, %d dead, %d pending, %d unsealed); retrying the dead ones anyway",
				res.Target, res.Store, r.o.drainLimit, p.Records, p.Dead, p.Pending, p.Unsealed))
			return p, nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			r.finish()
			return p, err
		}
	}
}

// drain retries every tenant's dead letters at once, waits until they are
// delivered, and finishes the run.
func (res *readbackResult) drain(ctx context.Context, r *nodeRun) {
	o := r.o
	r.t.tallied().watch(res.Hooks)
	a := r.s.take()
	revived, err := r.n.retryDead(tenantNames(o))
	res.RetryCallS, res.Revived = time.Since(a.at).Seconds(), revived
	if err != nil {
		res.problem(err.Error())
	}
	last, ok := r.waitDelivered(ctx, res.Hooks, o.drainLimit)
	b := r.s.take()
	r.endSampling()
	unique, total, bad := r.t.tallied().counts()
	marks := r.t.tallied().watched()
	r.close(&res.outcome)
	res.Drained, res.DrainS = ok, last.Sub(a.at).Seconds()
	if res.DrainS > 0 {
		res.DeliveredRPS = float64(res.Hooks) / res.DrainS
	}
	if !marks[0].IsZero() && !marks[1].IsZero() && marks[1].After(marks[0]) {
		res.SteadyRPS = 0.8 * float64(res.Hooks) / marks[1].Sub(marks[0]).Seconds()
	}
	res.Duplicates = total - unique - bad
	res.ReadBack, res.CacheHitRate = b.Fetches-a.Fetches, hitRate(a, b)
	res.CPU = shares(a, b, 0)
	if !ok {
		res.problem(fmt.Sprintf("read-back %s: %d of %d hooks delivered after waiting %s", res.Target, unique, res.Hooks, o.drainLimit))
	}
	if int64(revived) != res.Hooks {
		res.problem(fmt.Sprintf("read-back %s: the retry calls revived %d dead letters, want %d", res.Target, revived, res.Hooks))
	}
}

// tenantNames are loadgen's tenants: -tenant-prefix t, 0..tenants-1.
func tenantNames(o *options) []string {
	out := make([]string, o.tenants)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}
