package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// Targets.
const (
	targetHTTP = "http"
	targetAMQP = "rabbitmq"
)

// measureAll runs gcref, the live and read-back runs, then the open-loop
// search.
func measureAll(ctx context.Context, o *options) (*report, error) {
	rep := newReport(o)
	fmt.Fprintf(os.Stderr, "bench-dispatch: gcref (%d round(s)), live and read-back runs, then the open loop\n", o.gcrefRounds)
	if o.only["open"] {
		if err := rep.measureGcref(ctx, o); err != nil {
			return nil, err
		}
	}
	targets := []string{targetHTTP}
	if !o.skipAMQP {
		targets = append(targets, targetAMQP)
	}
	for _, t := range targets {
		if o.only["live"] {
			var r *liveResult
			err := rep.undisturbed(ctx, o, "live "+t, func() (err error) { r, err = liveRun(ctx, o, t); return err })
			if err != nil {
				return nil, err
			}
			rep.Live = append(rep.Live, r)
			rep.fail(r.Problems...)
		}
		if !o.only["read-back"] {
			continue
		}
		// HTTP from the open segment and from sealed ones; RabbitMQ from
		// sealed ones. -quick: HTTP from the open segment only.
		stores := []bool{false, true}
		switch {
		case t == targetAMQP && o.quick:
			stores = nil
		case t == targetAMQP:
			stores = []bool{true}
		case o.quick:
			stores = []bool{false}
		}
		for _, sealed := range stores {
			var rb *readbackResult
			err := rep.undisturbed(ctx, o, "read-back "+t+" from "+storeName(sealed), func() (err error) { rb, err = readbackRun(ctx, o, t, sealed); return err })
			if err != nil {
				return nil, err
			}
			rep.Readback = append(rep.Readback, rb)
			rep.fail(rb.Problems...)
		}
	}
	if o.only["open"] {
		if err := rep.openSearch(ctx, o); err != nil {
			return nil, err
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

func (rep *report) measureGcref(ctx context.Context, o *options) error {
	for round := 1; round <= o.gcrefRounds; round++ {
		var res result.Summary
		err := rep.undisturbed(ctx, o, fmt.Sprintf("gcref round %d", round), func() error {
			g, err := startGcref(ctx, o)
			if err != nil {
				return err
			}
			defer g.stop()
			args := closedArgs(o, g.addr, o.duration, o.warmup)
			rep.Gcref.Command = commandLine(args, g.addr)
			l, err := startLoad(ctx, o, args, o.duration+o.warmup+time.Minute)
			if err != nil {
				return err
			}
			r, problem, err := loadResultOf(l)
			if err != nil {
				return err
			}
			if problem != "" {
				rep.fail("gcref: " + problem)
			}
			rep.fail(prefixed("gcref", benchkit.LoadProblems(&r))...)
			res = r
			return nil
		})
		if err != nil {
			return err
		}
		rep.Gcref.Rounds = append(rep.Gcref.Rounds, res.ThroughputRPS)
		rep.Gcref.P99 = append(rep.Gcref.P99, float64(res.LatencyUs.P99))
		fmt.Fprintf(os.Stderr, "bench-dispatch: gcref %.0f req/s, p99 %.2f ms\n", res.ThroughputRPS, float64(res.LatencyUs.P99)/1000)
	}
	rep.Gcref.Max = benchkit.Median(rep.Gcref.Rounds)
	if rep.Gcref.Max < 100 {
		return fmt.Errorf("gcref made %.0f req/s: no rate to run the open loop at", rep.Gcref.Max)
	}
	return nil
}

// target is a started receiver or broker: where the node delivers, and
// the tally of what arrived.
type target struct {
	kind  string
	recv  *receiver
	mq    *broker
	tally *tally
}

func startTarget(o *options, kind string, healthy bool) (*target, error) {
	t := &target{kind: kind}
	switch kind {
	case targetHTTP:
		r, err := startReceiver()
		if err != nil {
			return nil, err
		}
		r.failing.Store(!healthy)
		t.recv, t.tally = r, r.tally
	case targetAMQP:
		b, err := openBroker(o.amqpURL, healthy)
		if err != nil {
			return nil, err
		}
		t.mq, t.tally = b, b.tally
	}
	return t, nil
}

// sink is the node's sink to t; extra is more sink keys.
func (t *target) sink(o *options, extra string) sinkSpec {
	if t.kind == targetHTTP {
		return httpSink(t.recv.addr, extra)
	}
	return amqpSink(o.amqpURL, t.mq.exchange, extra)
}

// heal makes the target accept deliveries: the receiver answers 204, the
// queue is bound.
func (t *target) heal() error {
	if t.kind == targetHTTP {
		t.recv.failing.Store(false)
		return nil
	}
	return t.mq.bind()
}

func (t *target) close() error {
	if t.kind == targetHTTP {
		t.recv.close()
		return nil
	}
	return t.mq.close()
}

// nodeRun is one node with its target, sampler and the bookkeeping every
// run shares.
type nodeRun struct {
	o       *options
	t       *target
	n       *node
	s       *sampler
	began   time.Time
	earlier []sample // sampled before a restart
	series  []sample
	errors  map[string]int // the node's error log lines by message
}

// startRun starts a target and a node delivering to it; extra is more
// sink keys, segment more config.
func startRun(ctx context.Context, o *options, kind string, healthy bool, extra, segment string) (*nodeRun, error) {
	t, err := startTarget(o, kind, healthy)
	if err != nil {
		return nil, err
	}
	n, err := startNode(ctx, o, t.sink(o, extra), segment)
	if err != nil {
		t.close()
		return nil, err
	}
	r := &nodeRun{o: o, t: t, n: n, began: time.Now()}
	r.s = startSampler(n, t.tally, r.began)
	return r, nil
}

// restart restarts the node on its data with other sink keys.
func (r *nodeRun) restart(ctx context.Context, extra, segment string) error {
	r.earlier = append(r.earlier, r.s.end()...)
	if err := r.n.restart(ctx, r.o, r.t.sink(r.o, extra), segment); err != nil {
		return err
	}
	r.s = startSampler(r.n, r.t.tally, r.began)
	return nil
}

// endSampling stops the sampler and returns every sample of the run.
func (r *nodeRun) endSampling() []sample {
	if r.series == nil {
		r.series = append(r.earlier, r.s.end()...)
	}
	return r.series
}

// finish stops sampling, the node and the target; what went wrong is
// returned as problems.
func (r *nodeRun) finish() []string {
	var problems []string
	r.endSampling()
	if err := r.n.stop(); err != nil {
		problems = append(problems, err.Error())
	}
	r.errors = r.n.loggedErrors()
	if err := r.t.close(); err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

// waitDelivered waits until the target has received want hooks and the
// node's backlog is empty, at most limit; it returns the time of the last
// first delivery and whether everything arrived.
func (r *nodeRun) waitDelivered(ctx context.Context, want int64, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	for r.t.tally.uniqueCount() < want {
		if time.Now().After(deadline) || !r.n.alive() || ctx.Err() != nil {
			return r.t.tally.lastDelivery(), false
		}
		time.Sleep(5 * time.Millisecond)
	}
	last := r.t.tally.lastDelivery()
	for time.Now().Before(deadline) {
		if g, err := r.n.metrics(); err == nil && g.pending <= 0 {
			return last, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last, false
}

// anomalies are what the node's own figures got wrong during the run:
// its error log, and backlog gauges that cannot be (pending below zero,
// more dead letters than hooks).
func (r *nodeRun) anomalies() []string {
	var out []string
	for msg, n := range r.errors {
		out = append(out, fmt.Sprintf("the node logged %d× error %q", n, msg))
	}
	slices.Sort(out)
	var minPending, maxDead, records int64
	for _, p := range r.series {
		minPending, maxDead, records = min(minPending, p.Pending), max(maxDead, p.Dead), max(records, p.Records)
	}
	if minPending < 0 {
		out = append(out, fmt.Sprintf("the pending backlog gauge went down to %d", minPending))
	}
	if maxDead > records {
		out = append(out, fmt.Sprintf("the dead-letter gauge reached %d for %d hooks", maxDead, records))
	}
	return out
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startWindow starts loadgen with args (a run of d after the warm-up)
// against the run's node and waits out the warm-up: it returns loadgen
// with the sample and loadgen's CPU seconds at the start of the measured
// window. On an error the run is finished.
func (r *nodeRun) startWindow(ctx context.Context, args []string, d time.Duration) (*benchkit.Loadgen, sample, float64, error) {
	l, err := startLoad(ctx, r.o, args, d+r.o.warmup+time.Minute)
	if err != nil {
		r.finish()
		return nil, sample{}, 0, err
	}
	if err := sleep(ctx, r.o.warmup); err != nil {
		loadResultOf(l)
		r.finish()
		return nil, sample{}, 0, err
	}
	a := r.s.take()
	return l, a, cpuSeconds(l.Pid()), nil
}

// liveResult is loadgen closed loop at full speed while the node
// delivers.
type liveResult struct {
	Target       string         `json:"target"`
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
	Profile      *profileResult `json:"profile,omitempty"`
	Samples      []sample       `json:"samples"`
	Anomalies    []string       `json:"anomalies,omitempty"`
	Problems     []string       `json:"problems,omitempty"`
}

func liveRun(ctx context.Context, o *options, kind string) (*liveResult, error) {
	r, err := startRun(ctx, o, kind, true, "", "")
	if err != nil {
		return nil, err
	}
	res := &liveResult{Target: kind}
	args := closedArgs(o, r.n.listen, o.duration, o.warmup)
	res.Command = commandLine(args, r.n.listen)
	l, a, clientA, err := r.startWindow(ctx, args, o.duration)
	if err != nil {
		return nil, err
	}
	var profile func() *profileResult
	if kind == targetHTTP && o.profile > 0 && o.duration >= 2*time.Second {
		profile = startProfile(o, r.n, min(o.profile, o.duration-time.Second), "the live HTTP run (ingest at full speed and delivery)", "live")
	}
	lr, problem, err := loadResultOf(l)
	if err != nil {
		r.finish()
		return nil, err
	}
	b := r.s.take()
	if profile != nil {
		res.Profile = profile()
	}
	res.Load = lr
	if problem != "" {
		res.Problems = append(res.Problems, problem)
	}
	res.Problems = append(res.Problems, prefixed("live "+kind, benchkit.LoadProblems(&lr))...)
	last, ok := r.waitDelivered(ctx, b.Records, o.drainLimit)
	final := r.s.take()
	r.endSampling()
	unique, total, bad := r.t.tally.counts()
	hist := r.t.tally.swapHist()
	res.Problems = append(res.Problems, r.finish()...)

	res.Hooks, res.Drained = b.Records, ok
	res.WindowS = b.at.Sub(a.at).Seconds()
	res.IngestRPS = lr.ThroughputRPS
	res.DeliveredRPS = float64(b.Delivered-a.Delivered) / res.WindowS
	res.BacklogAtEnd = b.Pending
	for _, p := range r.series {
		res.BacklogMax = max(res.BacklogMax, p.Pending)
	}
	res.DrainS = max(0, last.Sub(b.at).Seconds())
	if res.DrainS > 0 {
		res.DrainRPS = float64(b.Records-b.Delivered) / res.DrainS
	}
	res.EndToEndRPS = float64(unique) / last.Sub(l.Started).Seconds()
	res.PastIntake, res.ReadBack, res.Retries, res.Duplicates = final.Overflow, final.Fetches, final.Retries, total-unique-bad
	res.CacheHitRate = hitRate(r.series[0], final)
	res.LatencyUS = histLatency(hist)
	res.CPU = shares(a, b, l.CPU()-clientA)
	res.Samples, res.Anomalies = r.series, r.anomalies()
	if !ok {
		res.Problems = append(res.Problems, fmt.Sprintf("live %s: %d of %d hooks delivered after waiting %s", kind, unique, b.Records, o.drainLimit))
	}
	if bad > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("live %s: %d deliveries without a parsable event id", kind, bad))
	}
	fmt.Fprintf(os.Stderr, "bench-dispatch: live %s: ingest %.0f/s, delivered %.0f/s while ingesting, backlog %d at ingest end, drained in %.1fs (%.0f/s)\n",
		kind, res.IngestRPS, res.DeliveredRPS, res.BacklogAtEnd, res.DrainS, res.DrainRPS)
	return res, nil
}

// readbackResult is the drain of preloaded dead letters: every body read
// back from the node's store.
type readbackResult struct {
	Target       string         `json:"target"`
	Store        string         `json:"store"` // where the bodies are read back from
	Command      string         `json:"preload_command"`
	Hooks        int64          `json:"hooks"`
	PreloadRPS   float64        `json:"preload_rps"`
	DeadLetterS  float64        `json:"dead_lettering_s"`    // preload start until every hook was a dead letter (and sealed, for sealed segments)
	RestartS     float64        `json:"restart_s,omitempty"` // RabbitMQ: the node's restart after the queue was bound
	Revived      int            `json:"revived"`
	RetryCallS   float64        `json:"retry_calls_s"` // the admin API's retry of every tenant's dead letters
	DrainS       float64        `json:"drain_s"`       // first retry call to the last delivery
	DeliveredRPS float64        `json:"delivered_rps"` // hooks / DrainS
	SteadyRPS    float64        `json:"steady_rps"`    // 80% of the hooks / time from 10% to 90% delivered
	Duplicates   int64          `json:"duplicates"`
	ReadBack     int64          `json:"read_back"` // segment fetches during the drain
	CacheHitRate float64        `json:"block_cache_hit_rate"`
	CPU          cpuShares      `json:"cpu_drain"`
	Drained      bool           `json:"drained"`
	Profile      *profileResult `json:"profile,omitempty"`
	Samples      []sample       `json:"samples"`
	Anomalies    []string       `json:"anomalies,omitempty"`
	Problems     []string       `json:"problems,omitempty"`
}

// readbackExtra makes every first attempt a dead letter: one attempt; for
// RabbitMQ also the shortest max_age, which a failure exceeds once the
// circuit breaker opens (a publish no queue takes is an error without an
// answer, which opens it, and the rows it reschedules would otherwise stay
// pending).
func readbackExtra(kind string) string {
	if kind == targetAMQP {
		return ", max_attempts: 1, max_age: 1s"
	}
	return ", max_attempts: 1"
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

func readbackRun(ctx context.Context, o *options, kind string, sealed bool) (*readbackResult, error) {
	segment := segmentKeepOpen
	if sealed {
		segment = segmentSealSoon
	}
	r, err := startRun(ctx, o, kind, false, readbackExtra(kind), segment)
	if err != nil {
		return nil, err
	}
	res := &readbackResult{Target: kind, Store: storeName(sealed)}
	args := countArgs(o, r.n.listen, o.readbackN)
	res.Command = commandLine(args, r.n.listen)
	preload := time.Now()
	l, err := startLoad(ctx, o, args, 5*time.Minute)
	if err != nil {
		r.finish()
		return nil, err
	}
	lr, problem, err := loadResultOf(l)
	if err != nil {
		r.finish()
		return nil, err
	}
	res.PreloadRPS = lr.ThroughputRPS
	if problem != "" {
		res.Problems = append(res.Problems, problem)
	}
	res.Problems = append(res.Problems, prefixed("read-back preload "+kind, benchkit.LoadProblems(&lr))...)
	// Every hook a dead letter, nothing pending; sealed, or all in the
	// open segment.
	ready := func(p sample) bool {
		if p.err != nil || p.Records == 0 || p.Dead < p.Records || p.Pending > 0 {
			return false
		}
		return !sealed || p.Unsealed == 0
	}
	deadline := time.Now().Add(o.drainLimit)
	var p sample
	for {
		p = r.s.take()
		if ready(p) {
			break
		}
		if !r.n.alive() {
			res.Problems = append(res.Problems, r.finish()...)
			return nil, fmt.Errorf("the node exited while dead-lettering the preloaded hooks: %s", strings.Join(res.Problems, "; "))
		}
		if time.Now().After(deadline) {
			res.Problems = append(res.Problems, fmt.Sprintf("read-back %s: the preloaded hooks were not all dead letters in %s within %s (%d hooks, %d dead, %d pending, %d unsealed); retrying the dead ones anyway",
				kind, res.Store, o.drainLimit, p.Records, p.Dead, p.Pending, p.Unsealed))
			break
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			r.finish()
			return nil, err
		}
	}
	res.DeadLetterS = time.Since(preload).Seconds()
	res.Hooks = p.Records
	if !sealed && p.Unsealed != p.Records {
		res.Problems = append(res.Problems, fmt.Sprintf("read-back %s: %d of %d hooks in the open segment at the retry", kind, p.Unsealed, p.Records))
	}
	if err := r.t.heal(); err != nil {
		r.finish()
		return nil, err
	}
	if kind == targetAMQP {
		// A fresh process: the circuit breaker the unroutable publishes
		// opened is in memory, and the sink back at its defaults.
		t0 := time.Now()
		if err := r.restart(ctx, "", segment); err != nil {
			r.finish()
			return nil, err
		}
		res.RestartS = time.Since(t0).Seconds()
	}
	r.t.tally.watch(res.Hooks)
	var profile func() *profileResult
	if kind == targetHTTP && o.profile > 0 {
		name := "drain-open"
		if sealed {
			name = "drain-sealed"
		}
		profile = startProfile(o, r.n, o.profile, "the HTTP read-back drain from "+res.Store, name)
	}
	a := r.s.take()
	revived, err := r.n.retryDead(tenantNames(o))
	res.RetryCallS = time.Since(a.at).Seconds()
	res.Revived = revived
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
	}
	last, ok := r.waitDelivered(ctx, res.Hooks, o.drainLimit)
	b := r.s.take()
	if profile != nil {
		res.Profile = profile()
	}
	r.endSampling()
	unique, total, bad := r.t.tally.counts()
	marks := r.t.tally.watched()
	res.Problems = append(res.Problems, r.finish()...)

	res.Drained = ok
	res.DrainS = last.Sub(a.at).Seconds()
	if res.DrainS > 0 {
		res.DeliveredRPS = float64(res.Hooks) / res.DrainS
	}
	if !marks[0].IsZero() && !marks[1].IsZero() && marks[1].After(marks[0]) {
		res.SteadyRPS = 0.8 * float64(res.Hooks) / marks[1].Sub(marks[0]).Seconds()
	}
	res.Duplicates = total - unique - bad
	res.ReadBack, res.CacheHitRate = b.Fetches-a.Fetches, hitRate(a, b)
	res.CPU = shares(a, b, 0)
	res.Samples, res.Anomalies = r.series, r.anomalies()
	if !ok {
		res.Problems = append(res.Problems, fmt.Sprintf("read-back %s: %d of %d hooks delivered after waiting %s", kind, unique, res.Hooks, o.drainLimit))
	}
	if int64(revived) != res.Hooks {
		res.Problems = append(res.Problems, fmt.Sprintf("read-back %s: the retry calls revived %d dead letters, want %d", kind, revived, res.Hooks))
	}
	fmt.Fprintf(os.Stderr, "bench-dispatch: read-back %s from %s: %d hooks drained in %.1fs (%.0f/s; %.0f/s from 10%% to 90%%)\n",
		kind, res.Store, res.Hooks, res.DrainS, res.DeliveredRPS, res.SteadyRPS)
	return res, nil
}

// tenantNames are loadgen's tenants: -tenant-prefix t, 0..tenants-1.
func tenantNames(o *options) []string {
	out := make([]string, o.tenants)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

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
	Samples      []sample       `json:"samples"`
	Anomalies    []string       `json:"anomalies,omitempty"`
	Problems     []string       `json:"problems,omitempty"`
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

func openRun(ctx context.Context, o *options, frac, gcrefMax float64) (*openResult, error) {
	r, err := startRun(ctx, o, targetHTTP, true, "", "")
	if err != nil {
		return nil, err
	}
	res := &openResult{Frac: frac, Rate: frac * gcrefMax}
	args := openArgs(o, r.n.listen, res.Rate, o.openD, o.warmup)
	res.Command = commandLine(args, r.n.listen)
	l, a, clientA, err := r.startWindow(ctx, args, o.openD)
	if err != nil {
		return nil, err
	}
	r.t.tally.swapHist()
	lr, problem, err := loadResultOf(l)
	if err != nil {
		r.finish()
		return nil, err
	}
	b := r.s.take()
	hist := r.t.tally.swapHist()
	res.Load = lr
	if problem != "" {
		res.Problems = append(res.Problems, problem)
	}
	ingestProblems := benchkit.LoadProblems(&lr)
	window := between(r.s.snapshot(), a, b)
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
	res.BacklogFinal = medianInt(tailPending)
	res.Slope = slope(window)
	res.LatencyUS = histLatency(hist)
	res.Bound = boundFactor * res.Rate * float64(max(res.LatencyUS.P50, 1000)) / 1e6
	res.CPU = shares(a, b, l.CPU()-clientA)
	var why []string
	if len(ingestProblems) > 0 {
		why = append(why, "ingest: "+strings.Join(ingestProblems, ", "))
	}
	if lr.ThroughputRPS < ingestShare*res.Rate {
		why = append(why, fmt.Sprintf("ingest made %.0f req/s of %.0f", lr.ThroughputRPS, res.Rate))
	}
	if res.Slope > slopeShare*res.Rate {
		why = append(why, fmt.Sprintf("backlog grew %.0f rows/s (more than %.0f%% of the rate)", res.Slope, 100*slopeShare))
	}
	if float64(res.BacklogFinal) > res.Bound {
		why = append(why, fmt.Sprintf("final backlog %d above the bound %.0f", res.BacklogFinal, res.Bound))
	}
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
	res.Problems = append(res.Problems, r.finish()...)
	res.Samples, res.Anomalies = r.series, r.anomalies()
	res.Bounded, res.Why = len(why) == 0, strings.Join(why, "; ")
	fmt.Fprintf(os.Stderr, "bench-dispatch: open loop at %.0f%% of gcref (%.0f/s): ingest %.0f/s p99 %.1f ms, delivered %.0f/s, backlog max %d final %d slope %.0f/s, bounded %v %s\n",
		100*frac, res.Rate, lr.ThroughputRPS, float64(lr.LatencyUs.P99)/1000, res.DeliveredRPS, res.BacklogMax, res.BacklogFinal, res.Slope, res.Bounded, res.Why)
	return res, nil
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

// hitRate is the share of the store's block reads from a to b that the
// block cache served.
func hitRate(a, b sample) float64 {
	hits, misses := b.Hits-a.Hits, b.Misses-a.Misses
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

func histLatency(h *hdrhistogram.Histogram) result.Latency {
	if h.TotalCount() == 0 {
		return result.Latency{}
	}
	return result.Latency{
		P50: h.ValueAtQuantile(50), P90: h.ValueAtQuantile(90),
		P99: h.ValueAtQuantile(99), P999: h.ValueAtQuantile(99.9),
		Max: h.Max(), Mean: h.Mean(),
	}
}

func medianInt(v []int64) int64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return int64(benchkit.Median(f))
}

func round2(f float64) float64 {
	return float64(int64(f*100+0.5)) / 100
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + ": " + s
	}
	return out
}
