package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// runResult is one server under one loadgen command.
type runResult struct {
	Server string  `json:"server"`
	Mode   string  `json:"mode"` // closed or open
	Round  int     `json:"round"`
	Conns  int     `json:"connections"`
	Rate   float64 `json:"rate,omitempty"`
	// Command is loadgen's command line.
	Command string          `json:"command"`
	Load    result.Summary  `json:"-"`
	LoadRaw json.RawMessage `json:"loadgen"`
	// The server's figures over the measured window: from the end of the
	// warm-up to loadgen's exit.
	WindowS       float64  `json:"window_s"`
	CPUPercent    float64  `json:"server_cpu_percent"` // 100 = one core
	PeakRSSMiB    float64  `json:"server_peak_rss_mib"`
	PeakRSSWindow bool     `json:"peak_rss_window_only"` // false: since the server started
	Records       uint64   `json:"records,omitempty"`
	Fsyncs        uint64   `json:"fsyncs,omitempty"`
	HooksPerFsync float64  `json:"hooks_per_fsync,omitempty"`
	FsyncAvgUS    float64  `json:"fsync_avg_us,omitempty"`
	ClientCPU     float64  `json:"client_cpu_percent"` // loadgen's, over the window
	OtherCPU      float64  `json:"other_cpu_percent"`  // the rest of the machine, over the window
	SettleS       float64  `json:"settle_s"`           // waited for a quiet machine before the run
	Quiet         bool     `json:"quiet_at_start"`
	Redone        int      `json:"redone"` // earlier attempts dropped as disturbed
	Problems      []string `json:"problems,omitempty"`
}

// measureAll runs every round of the closed-loop runs, then the open-loop
// rounds at o.openFrac of the appliance's median maximum, gcref and the
// appliance taking turns.
func measureAll(ctx context.Context, o *options) (*results, error) {
	res := newResults(o)
	fmt.Fprintf(os.Stderr, "harness: %d round(s) x %v connections x %s, %v + %v warm-up each\n",
		o.rounds, o.conns, strings.Join(serverNames, ", "), o.duration, o.warmup)
	for round := 1; round <= o.rounds; round++ {
		for _, c := range o.conns {
			for _, name := range serverNames {
				r, err := measureUndisturbed(ctx, o, name, round, c, 0)
				if err != nil {
					return nil, err
				}
				res.Runs = append(res.Runs, r)
			}
		}
	}
	if o.openFrac == 0 {
		return res, nil
	}
	conns := openConns(o)
	var max []float64
	for _, r := range res.closed(ankusa, conns) {
		max = append(max, r.Load.ThroughputRPS)
	}
	rate := o.openFrac * benchkit.Median(max)
	if rate < 1 {
		return nil, fmt.Errorf("the appliance's maximum at %d connections is %.0f req/s: no open-loop rate to run", conns, benchkit.Median(max))
	}
	res.OpenConns, res.OpenRate = conns, rate
	for round := 1; round <= o.openRounds; round++ {
		for _, name := range []string{gcref, ankusa} {
			r, err := measureUndisturbed(ctx, o, name, round, conns, rate)
			if err != nil {
				return nil, err
			}
			res.Runs = append(res.Runs, r)
		}
	}
	return res, nil
}

// openConns is the connection count of the open-loop run: -open-conns if
// the closed-loop runs measured it, else their largest.
func openConns(o *options) int {
	best := 0
	for _, c := range o.conns {
		if c == o.openConns {
			return c
		}
		best = max(best, c)
	}
	return best
}

// measureUndisturbed measures, and measures again up to o.redo times while
// other processes took more than otherCPUNote of the machine during the
// run. A run with a problem is kept whatever else ran: it fails the bench.
func measureUndisturbed(ctx context.Context, o *options, name string, round, conns int, rate float64) (*runResult, error) {
	for attempt := 0; ; attempt++ {
		r, err := measure(ctx, o, name, round, conns, rate)
		if err != nil {
			return nil, err
		}
		r.Redone = attempt
		if r.OtherCPU <= otherCPUNote || len(r.Problems) > 0 || attempt == o.redo {
			return r, nil
		}
		fmt.Fprintf(os.Stderr, "harness: other processes used %.0f%% CPU during that run; running it again\n", r.OtherCPU)
	}
}

// measure starts one server, runs loadgen against it, samples the server
// over the measured window and stops it. An error means the run could not
// be made; what went wrong inside a made run is in Problems.
func measure(ctx context.Context, o *options, name string, round, conns int, rate float64) (*runResult, error) {
	r := &runResult{Server: name, Mode: "closed", Round: round, Conns: conns, Rate: rate}
	quiet, waited, err := benchkit.Quiet{CPU: quietCPU}.Settle(ctx, o.settle)
	if err != nil {
		return nil, err
	}
	r.SettleS, r.Quiet = waited.Seconds(), quiet
	s, err := startServer(ctx, o, name)
	if err != nil {
		return nil, err
	}
	if rate > 0 {
		r.Mode = "open"
	}
	err = r.drive(ctx, o, s)
	if serr := s.stop(); serr != nil {
		r.Problems = append(r.Problems, serr.Error())
	}
	if err != nil {
		return nil, err
	}
	r.Problems = append(r.Problems, benchkit.LoadProblems(&r.Load)...)
	fmt.Fprintf(os.Stderr, "harness: round %d, %s loop, %d connections, %-7s %9.0f req/s  p99 %s  cpu %3.0f%%  %s\n",
		round, r.Mode, conns, r.Server, r.Load.ThroughputRPS, ms(float64(r.Load.LatencyUs.P99)), r.CPUPercent, strings.Join(r.Problems, "; "))
	return r, nil
}

// quietCPU is how busy the machine may be, in percent of one core over
// half a second, for a run to start: other work on a shared machine would
// be measured as the servers' slowness.
const quietCPU = 20

// loadArgs is the loadgen command line of one run: the same for every
// server but the URL. rate 0 is closed loop.
func loadArgs(o *options, url string, conns int, rate float64) []string {
	args := []string{
		"-url", url,
		"-c", strconv.Itoa(conns),
		"-d", o.duration.String(),
		"-warmup", o.warmup.String(),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
	if rate > 0 {
		args = append(args, "-rate", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	return args
}

// drive runs loadgen against s and samples s around the measured window.
func (r *runResult) drive(ctx context.Context, o *options, s *server) error {
	pid := s.Pid()
	args := loadArgs(o, s.url, r.Conns, r.Rate)
	r.Command = "loadgen " + strings.Join(args, " ")
	l, err := benchkit.StartLoadgen(ctx, o.bin, args, o.warmup+o.duration)
	if err != nil {
		return err
	}
	if err := benchkit.Sleep(ctx, o.warmup); err != nil {
		l.Wait()
		return err
	}
	start, err := r.sample(s, pid)
	if err != nil {
		l.Wait()
		return err
	}
	clientStart, _ := benchkit.CPUSeconds(l.Pid())
	busyStart, _ := benchkit.MachineBusy()
	r.PeakRSSWindow = benchkit.ResetPeakRSS(pid)
	load, raw, exited, err := l.Wait()
	if err != nil {
		return err
	}
	r.Load, r.LoadRaw, r.Problems = load, raw, append(r.Problems, exited...)
	clientEnd := l.CPU()
	if !s.Alive() {
		r.Problems = append(r.Problems, fmt.Sprintf("%s exited during the run: %v\n%s", s.Name, s.WaitErr(), benchkit.Tail(s.Output())))
		return nil
	}
	end, err := r.sample(s, pid)
	if err != nil {
		return err
	}
	busyEnd, _ := benchkit.MachineBusy()
	r.WindowS = end.at.Sub(start.at).Seconds()
	if r.WindowS > 0 {
		r.CPUPercent = 100 * (end.cpu - start.cpu) / r.WindowS
		r.ClientCPU = 100 * (clientEnd - clientStart) / r.WindowS
		r.OtherCPU = max(0, 100*(busyEnd-busyStart)/r.WindowS-r.CPUPercent-r.ClientCPU)
	}
	if rss, err := benchkit.PeakRSS(pid); err == nil {
		r.PeakRSSMiB = rss / (1 << 20)
	}
	if s.statsFn != nil {
		r.Records, r.Fsyncs = end.records-start.records, end.fsyncs-start.fsyncs
		if r.Fsyncs > 0 {
			r.HooksPerFsync = float64(r.Records) / float64(r.Fsyncs)
			r.FsyncAvgUS = 1e6 * (end.fsyncSeconds - start.fsyncSeconds) / float64(r.Fsyncs)
		}
	}
	return nil
}

type sample struct {
	at  time.Time
	cpu float64
	counters
}

func (r *runResult) sample(s *server, pid int) (sample, error) {
	var p sample
	var err error
	p.at = time.Now()
	if p.cpu, err = benchkit.CPUSeconds(pid); err != nil {
		return p, fmt.Errorf("cannot read the server's CPU time: %w", err)
	}
	if s.statsFn != nil {
		if p.counters, err = s.statsFn(); err != nil {
			return p, fmt.Errorf("cannot read %s's commit counters: %w", s.Name, err)
		}
	}
	return p, nil
}
