package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// ingestRun is big's ingest and its first attempts.
type ingestRun struct {
	Hooks         int64            `json:"hooks"` // answered 201
	Took          time.Duration    `json:"ingest_ns"`
	Result        result.Summary   `json:"loadgen"`
	FirstAttempts time.Duration    `json:"first_attempts_done_ns"` // from the ingest's start to the last first attempt
	Attempted     int64            `json:"attempted"`              // big's deliveries the receiver answered 503
	Backlog       backlog          `json:"backlog_before_erase"`
	DataBytes     map[string]int64 `json:"data_bytes"`
	NodeIdleCPU   float64          `json:"node_idle_cpu_share"` // the node's CPU over the last second before the baseline
	NodeIdle      bool             `json:"node_idle"`
}

// steadyRun is one of steady's open-loop runs.
type steadyRun struct {
	Name    string         `json:"name"`
	Result  result.Summary `json:"loadgen"`
	NodeCPU float64        `json:"node_cpu_s"`
	Profile string         `json:"profile,omitempty"`
}

// stageSeen is when a poll of the status first saw a stage done.
type stageSeen struct {
	Stage string        `json:"stage"`
	After time.Duration `json:"after_202_ns"`
}

// eraseRun is the erase of big.
type eraseRun struct {
	RequestLatency time.Duration    `json:"delete_latency_ns"` // the DELETE's round trip
	Accepted       time.Time        `json:"accepted_at"`       // when the 202 came back
	StartedAt      time.Time        `json:"started_at"`
	ErasedAt       time.Time        `json:"erased_at"`
	Duration       time.Duration    `json:"accepted_to_erased_ns"` // the 202 to erased_at
	NodeDuration   time.Duration    `json:"started_to_erased_ns"`  // the node's started_at to erased_at
	SeenDone       time.Duration    `json:"accepted_to_seen_erased_ns"`
	Stages         []stageSeen      `json:"stages"`
	Removed        map[string]int64 `json:"removed"`
	SeqAtClose     uint64           `json:"seq_at_close"`
	BacklogAfter   backlog          `json:"backlog_after"`
	WindowStart    time.Time        `json:"window_start"` // steady's measured window
	WindowEnd      time.Time        `json:"window_end"`
	Covered        bool             `json:"covered"` // erased at least 3 s before the window ended
}

// measure ingests big, runs steady without and with big's erase.
func measure(ctx context.Context, o *options) (*report, error) {
	rep := &report{o: o, machine: benchkit.DescribeMachine(o.tmp, "")}
	recv, err := startReceiver()
	if err != nil {
		return nil, err
	}
	defer recv.close()
	n, err := startNode(ctx, o, recv.addr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := n.Shut(60 * time.Second); err != nil {
			fmt.Println("stopping the node:", err)
		}
	}()
	if err := rep.ingest(ctx, o, n, recv); err != nil {
		return nil, err
	}
	if err := o.alone.Wait(ctx); err != nil {
		return nil, err
	}
	if rep.baseline, err = rep.steady(ctx, o, n, "baseline", nil); err != nil {
		return nil, err
	}
	if _, _, err := n.idle(ctx, time.Minute); err != nil {
		return nil, err
	}
	if err := o.alone.Wait(ctx); err != nil {
		return nil, err
	}
	rep.erase = &eraseRun{}
	if rep.during, err = rep.steady(ctx, o, n, "erase", rep.erase); err != nil {
		return nil, err
	}
	if rep.erase.BacklogAfter, err = n.backlog(); err != nil {
		return nil, err
	}
	// The same run once more after the erase: how far two runs without
	// an erase differ on this machine now.
	if o.after {
		if _, _, err := n.idle(ctx, time.Minute); err != nil {
			return nil, err
		}
		if err := o.alone.Wait(ctx); err != nil {
			return nil, err
		}
		if rep.after, err = rep.steady(ctx, o, n, "after", nil); err != nil {
			return nil, err
		}
	}
	rep.busy = o.alone.Busy
	rep.receiverOther = recv.other.Load()
	return rep, nil
}

// ingest sends big's hooks and waits for their first attempts and for the
// node to go idle.
func (rep *report) ingest(ctx context.Context, o *options, n *node, recv *receiver) error {
	args := []string{
		"-url", "http://" + n.Listen + "/webhooks/" + bigTenant + "/demo",
		"-c", strconv.Itoa(o.ingestC),
		"-n", strconv.FormatInt(o.hooks, 10),
		"-warmup", "0s",
		"-size", "512", "-kind", "stripe",
		"-json",
	}
	fmt.Printf("ingesting %d hooks for tenant %s...\n", o.hooks, bigTenant)
	began := time.Now()
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, 30*time.Minute)
	if err != nil {
		return err
	}
	r, _, exited, err := l.Wait()
	if err != nil {
		return err
	}
	in := &ingestRun{Took: time.Since(began), Result: r, Hooks: r.Status["201"]}
	rep.ingested = in
	if problems := append(benchkit.LoadProblems(&r), exited...); len(problems) > 0 {
		return fmt.Errorf("big's ingest: %v", problems)
	}
	fmt.Printf("ingested %d hooks in %s (%.0f/s); waiting for their first attempts...\n", in.Hooks, in.Took.Round(time.Millisecond), r.ThroughputRPS)
	deadline := time.Now().Add(o.drainLimit)
	for recv.big.Load() < in.Hooks {
		if time.Now().After(deadline) || !n.Alive() {
			return fmt.Errorf("big's first attempts: %d of %d made after %s", recv.big.Load(), in.Hooks, o.drainLimit)
		}
		if err := benchkit.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	in.FirstAttempts, in.Attempted = time.Since(began), recv.big.Load()
	fmt.Printf("first attempts done %s after the ingest began; waiting for the node to go idle...\n", in.FirstAttempts.Round(time.Millisecond))
	if in.NodeIdleCPU, in.NodeIdle, err = n.idle(ctx, 2*time.Minute); err != nil {
		return err
	}
	if in.Backlog, err = n.backlog(); err != nil {
		return err
	}
	in.DataBytes = n.dataBytes()
	fmt.Printf("backlog: %d pending, %d in flight, %d dead; data %v\n", in.Backlog.Pending, in.Backlog.InFlight, in.Backlog.Dead, in.DataBytes)
	if in.Backlog.Pending < in.Hooks {
		return fmt.Errorf("big's hooks: %d pending rows after the first attempts, want at least %d", in.Backlog.Pending, in.Hooks)
	}
	return nil
}

// steady runs steady's open-loop load (and a CPU profile of the node over
// its window); with er, big is erased into it.
func (rep *report) steady(ctx context.Context, o *options, n *node, name string, er *eraseRun) (*steadyRun, error) {
	args := []string{
		"-url", "http://" + n.Listen + "/webhooks/" + steadyTenant + "/demo",
		"-c", strconv.Itoa(o.steadyC),
		"-rate", strconv.FormatFloat(o.rate, 'f', -1, 64),
		"-d", o.duration.String(), "-warmup", o.warmup.String(),
		"-size", "512", "-kind", "stripe",
		"-json",
	}
	fmt.Printf("steady run %q: %.0f req/s for %s...\n", name, o.rate, o.duration)
	run := &steadyRun{Name: name}
	cpu0, _ := benchkit.CPUSeconds(n.Pid())
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.warmup+o.duration)
	if err != nil {
		return nil, err
	}
	if err := benchkit.Sleep(ctx, o.warmup); err != nil {
		l.Wait()
		return nil, err
	}
	windowStart := time.Now()
	var prof chan error
	if o.profile != "" {
		run.Profile = o.profile + "-" + name + ".pprof"
		prof = make(chan error, 1)
		go func() { prof <- n.cpuProfile(run.Profile, o.duration-time.Second) }()
	}
	var eraseErr error
	if er != nil {
		er.WindowStart = windowStart
		er.WindowEnd = windowStart.Add(o.duration)
		if err := benchkit.Sleep(ctx, o.eraseAt); err != nil {
			l.Wait()
			return nil, err
		}
		eraseErr = eraseBig(ctx, o, n, er)
	}
	r, _, exited, err := l.Wait()
	if err != nil {
		return nil, err
	}
	cpu1, _ := benchkit.CPUSeconds(n.Pid())
	run.Result, run.NodeCPU = r, cpu1-cpu0
	if prof != nil {
		if err := <-prof; err != nil {
			rep.failures = append(rep.failures, "the CPU profile of the "+name+" run: "+err.Error())
			run.Profile = ""
		}
	}
	if eraseErr != nil {
		return nil, eraseErr
	}
	if problems := append(benchkit.LoadProblems(&r), exited...); len(problems) > 0 {
		rep.failures = append(rep.failures, benchkit.Prefixed("steady's "+name+" run", problems)...)
	}
	fmt.Printf("steady %q: p50 %d µs, p99 %d µs, p99.9 %d µs, max %d µs\n", name, r.LatencyUs.P50, r.LatencyUs.P99, r.LatencyUs.P999, r.LatencyUs.Max)
	return run, nil
}

// eraseBig requests big's erase and polls its status until it is erased.
func eraseBig(ctx context.Context, o *options, n *node, er *eraseRun) error {
	fmt.Printf("erasing tenant %s...\n", bigTenant)
	t0 := time.Now()
	st, err := n.erase(bigTenant)
	if err != nil {
		return err
	}
	er.Accepted = time.Now()
	er.RequestLatency = er.Accepted.Sub(t0)
	last := st.Stage
	er.Stages = append(er.Stages, stageSeen{Stage: st.Stage})
	deadline := er.Accepted.Add(o.eraseLimit)
	for st.State != "erased" {
		if time.Now().After(deadline) || !n.Alive() {
			return fmt.Errorf("the erase of %s: at stage %q after %s", bigTenant, st.Stage, o.eraseLimit)
		}
		if err := benchkit.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		if st, err = n.eraseStatus(bigTenant); err != nil {
			return err
		}
		if st.Stage != last {
			last = st.Stage
			er.Stages = append(er.Stages, stageSeen{Stage: st.Stage, After: time.Since(er.Accepted)})
		}
	}
	er.SeenDone = time.Since(er.Accepted)
	if st.StartedAt != nil {
		er.StartedAt = *st.StartedAt
	}
	if st.ErasedAt == nil {
		return fmt.Errorf("the erase of %s: state erased without erased_at", bigTenant)
	}
	er.ErasedAt = *st.ErasedAt
	er.Duration = er.ErasedAt.Sub(er.Accepted)
	if !er.StartedAt.IsZero() {
		er.NodeDuration = er.ErasedAt.Sub(er.StartedAt)
	}
	er.Removed = st.Removed
	if st.SeqAtClose != nil {
		er.SeqAtClose = *st.SeqAtClose
	}
	er.Covered = !er.ErasedAt.Add(3 * time.Second).After(er.WindowEnd)
	fmt.Printf("erased: 202 to erased_at %s, started_at to erased_at %s, removed %v\n", er.Duration.Round(time.Millisecond), er.NodeDuration.Round(time.Millisecond), er.Removed)
	return nil
}
