package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// results is everything one harness run measured; -json writes it whole.
type results struct {
	Machine     benchkit.Machine `json:"machine"`
	Quick       bool             `json:"quick"`
	Rounds      int              `json:"rounds"`
	Conns       []int            `json:"connections"`
	Duration    string           `json:"duration"`
	Warmup      string           `json:"warmup"`
	MinRatio    float64          `json:"min_ratio,omitempty"`
	Runs        []*runResult     `json:"runs"`
	OpenConns   int              `json:"open_connections,omitempty"`
	OpenRate    float64          `json:"open_rate,omitempty"`
	Summary     []summary        `json:"summary"`
	Ratios      []ratio          `json:"ratios"`
	Open        []summary        `json:"open,omitempty"`
	OpenP99     float64          `json:"open_p99_ankusa_over_gcref,omitempty"`
	Notes       []string         `json:"notes,omitempty"`
	Failures    []string         `json:"failures"`
	WallSeconds float64          `json:"wall_seconds"`
	o           *options
}

// unpinned is said in every report: the load generator and the servers run
// on the same cores, and nothing is pinned (pinning the server to one core
// measures a different, lower ratio and hides how a node uses its cores).
const unpinned = "client and servers share the machine's cores, unpinned"

// otherCPUNote is how much CPU the rest of the machine may use during a
// run (percent of one core) before the report says the figures are
// disturbed.
const otherCPUNote = 15

// summary is the medians of one server's runs at one connection count.
type summary struct {
	Conns         int     `json:"connections"`
	Server        string  `json:"server"`
	Runs          int     `json:"runs"`
	RPS           float64 `json:"rps"`
	RPSMin        float64 `json:"rps_min"`
	RPSMax        float64 `json:"rps_max"`
	P50           float64 `json:"p50_us"`
	P99           float64 `json:"p99_us"`
	P999          float64 `json:"p999_us"`
	Max           float64 `json:"max_us"`
	CPU           float64 `json:"cpu_percent"`
	ClientCPU     float64 `json:"client_cpu_percent"`
	RSS           float64 `json:"peak_rss_mib"`
	HooksPerFsync float64 `json:"hooks_per_fsync"`
	FsyncAvgUS    float64 `json:"fsync_avg_us"`
}

// ratio compares the median req/s of the servers at one connection count.
type ratio struct {
	Conns       int     `json:"connections"`
	AnkusaGcref float64 `json:"ankusa_over_gcref"`
	// AnkusaGcrefBest is the best round's over the best round's: what the
	// guard holds (a low round from the shared cores' scheduling does not
	// fail it; a regression lowers every round).
	AnkusaGcrefBest float64 `json:"ankusa_over_gcref_best"`
	AnkusaCeiling   float64 `json:"ankusa_over_ceiling"`
	GcrefCeiling    float64 `json:"gcref_over_ceiling"`
}

func newResults(o *options) *results {
	return &results{
		Machine:  benchkit.DescribeMachine(o.tmp, unpinned),
		Quick:    o.quick,
		Rounds:   o.rounds,
		Conns:    o.conns,
		Duration: o.duration.String(),
		Warmup:   o.warmup.String(),
		MinRatio: o.minRatio,
		Failures: []string{},
		o:        o,
	}
}

func (res *results) Publish(wall time.Duration) benchkit.Published {
	res.WallSeconds = wall.Seconds()
	res.judge(res.o)
	return benchkit.Published{Markdown: res.markdown(res.o), Out: res.o.out, JSONOut: res.o.jsonOut, Figures: res, Failures: res.Failures}
}

func (res *results) runs(mode, server string, conns int) []*runResult {
	var out []*runResult
	for _, r := range res.Runs {
		if r.Mode == mode && r.Server == server && r.Conns == conns {
			out = append(out, r)
		}
	}
	return out
}

func (res *results) closed(server string, conns int) []*runResult {
	return res.runs("closed", server, conns)
}

// judge computes the medians and ratios and lists the failures: every run
// with a problem, and a ratio to gcref under the guard.
func (res *results) judge(o *options) {
	var clientBound []string
	for _, c := range o.conns {
		by := map[string]summary{}
		for _, name := range serverNames {
			s := summarize(res.closed(name, c))
			s.Conns, s.Server = c, name
			by[name] = s
			res.Summary = append(res.Summary, s)
		}
		rt := ratio{
			Conns:           c,
			AnkusaGcref:     div(by[ankusa].RPS, by[gcref].RPS),
			AnkusaGcrefBest: div(by[ankusa].RPSMax, by[gcref].RPSMax),
			AnkusaCeiling:   div(by[ankusa].RPS, by[ceiling].RPS),
			GcrefCeiling:    div(by[gcref].RPS, by[ceiling].RPS),
		}
		res.Ratios = append(res.Ratios, rt)
		if c := by[ceiling]; c.ClientCPU > c.CPU {
			clientBound = append(clientBound, fmt.Sprintf("%d connections (%.0f%% against %.0f%%)", c.Conns, c.ClientCPU, c.CPU))
		}
		if o.minRatio > 0 && rt.AnkusaGcrefBest < o.minRatio {
			res.Failures = append(res.Failures, fmt.Sprintf("guard: at %d connections ankusa / gcref = %.2f in the best rounds (%.2f in the medians), below %.2f", c, rt.AnkusaGcrefBest, rt.AnkusaGcref, o.minRatio))
		}
	}
	if len(clientBound) > 0 {
		res.Notes = append(res.Notes, "loadgen used more CPU than the ceiling server at "+strings.Join(clientBound, ", ")+": on shared cores the closed-loop req/s measure the client as much as the servers")
	}
	if res.OpenRate > 0 {
		for _, name := range []string{gcref, ankusa} {
			s := summarize(res.runs("open", name, res.OpenConns))
			s.Conns, s.Server = res.OpenConns, name
			res.Open = append(res.Open, s)
		}
		res.OpenP99 = div(res.Open[1].P99, res.Open[0].P99)
		for _, s := range res.Open {
			if s.RPS < 0.95*res.OpenRate {
				res.Notes = append(res.Notes, fmt.Sprintf("open loop: %s answered %s req/s of the %s scheduled: it could not keep up, and its latencies show the queue", s.Server, benchkit.Thousands(s.RPS), benchkit.Thousands(res.OpenRate)))
			}
		}
	}
	res.judgeRuns()
}

// judgeRuns adds what the report says of the runs: notes on the runs made
// again or disturbed by other work, and a failure for each run's problem.
func (res *results) judgeRuns() {
	busiest := 0.0
	for _, r := range res.Runs {
		busiest = max(busiest, r.OtherCPU)
	}
	loud, redone := 0, 0
	for _, r := range res.Runs {
		if !r.Quiet {
			loud++
		}
		redone += r.Redone
	}
	if redone > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d run(s) were made again because other processes used more than %d%% of one core during them", redone, otherCPUNote))
	}
	if loud > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of %d runs started on a busy machine (other work above %d%% of one core after waiting -settle)", loud, len(res.Runs), quietCPU))
	}
	if busiest > otherCPUNote {
		res.Notes = append(res.Notes, fmt.Sprintf("other processes used up to %.0f%% CPU (100%% = one core) during a kept run: the figures are disturbed; see other_cpu_percent in the JSON", busiest))
	}
	for _, r := range res.Runs {
		for _, p := range r.Problems {
			res.Failures = append(res.Failures, fmt.Sprintf("%s, %s loop, round %d, %d connections: %s", r.Server, r.Mode, r.Round, r.Conns, p))
		}
	}
}

func summarize(runs []*runResult) summary {
	s := summary{Runs: len(runs)}
	if len(runs) == 0 {
		return s
	}
	pick := func(f func(*runResult) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return benchkit.Median(v)
	}
	s.RPS = pick(func(r *runResult) float64 { return r.Load.ThroughputRPS })
	s.RPSMin, s.RPSMax = runs[0].Load.ThroughputRPS, runs[0].Load.ThroughputRPS
	for _, r := range runs {
		s.RPSMin, s.RPSMax = min(s.RPSMin, r.Load.ThroughputRPS), max(s.RPSMax, r.Load.ThroughputRPS)
	}
	s.P50 = pick(func(r *runResult) float64 { return float64(r.Load.LatencyUs.P50) })
	s.P99 = pick(func(r *runResult) float64 { return float64(r.Load.LatencyUs.P99) })
	s.P999 = pick(func(r *runResult) float64 { return float64(r.Load.LatencyUs.P999) })
	s.Max = pick(func(r *runResult) float64 { return float64(r.Load.LatencyUs.Max) })
	s.CPU = pick(func(r *runResult) float64 { return r.CPUPercent })
	s.ClientCPU = pick(func(r *runResult) float64 { return r.ClientCPU })
	s.RSS = pick(func(r *runResult) float64 { return r.PeakRSSMiB })
	s.HooksPerFsync = pick(func(r *runResult) float64 { return r.HooksPerFsync })
	s.FsyncAvgUS = pick(func(r *runResult) float64 { return r.FsyncAvgUS })
	return s
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ms formats microseconds as milliseconds.
func ms(us float64) string {
	return fmt.Sprintf("%.2f ms", us/1000)
}

// markdown renders the report: a header saying where, when and how, the
// closed-loop table, the ratios, the open-loop table and the verdict. The
// same text goes to stdout and to -out.
func (res *results) markdown(o *options) string {
	var b strings.Builder
	m := res.Machine
	name := "make bench"
	if res.Quick {
		name = "make bench-quick"
	}
	b.WriteString(m.Header(name))
	fmt.Fprintf(&b, "- %s\n", unpinned)
	fmt.Fprintf(&b, "- each server in turn (%s), %d round(s), under the identical `loadgen -url http://127.0.0.1:PORT%s -c N -d %s -warmup %s -size 1KiB -kind stripe` (closed loop); figures are medians of the rounds\n",
		strings.Join(serverNames, ", "), res.Rounds, loadPath, res.Duration, res.Warmup)
	b.WriteString("- ceiling: bare fasthttp, reads the body, answers 201, stores nothing; gcref: the same plus one writev + fdatasync per batch of every waiting body; ankusa: `ankusa serve`, wal.type disk, default durable settings\n")
	b.WriteString("- CPU: the server's utime+stime over the measured window (100% = one core), client CPU the same for loadgen; RSS: its peak (VmHWM) over the window; hooks/fsync: hooks made durable / fdatasyncs over the window; fdatasync: its mean time over the window (the disk)\n\n")

	t := benchkit.Table{Header: []string{"conns", "server", "req/s", "req/s min–max", "p50", "p99", "p99.9", "CPU", "client CPU", "RSS", "hooks/fsync", "fdatasync"}, Left: map[int]bool{1: true}}
	for _, s := range res.Summary {
		t.Add(fmt.Sprint(s.Conns), s.Server, benchkit.Thousands(s.RPS), benchkit.Thousands(s.RPSMin)+"–"+benchkit.Thousands(s.RPSMax),
			ms(s.P50), ms(s.P99), ms(s.P999), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU), fmt.Sprintf("%.0f MiB", s.RSS), hooks(s), fsyncAvg(s))
	}
	b.WriteString(t.String())
	b.WriteString("\n")
	t = benchkit.Table{Header: []string{"conns", "ankusa / gcref", "ankusa / gcref (best rounds)", "ankusa / ceiling", "gcref / ceiling"}}
	for _, r := range res.Ratios {
		t.Add(fmt.Sprint(r.Conns), fmt.Sprintf("%.2f", r.AnkusaGcref), fmt.Sprintf("%.2f", r.AnkusaGcrefBest), fmt.Sprintf("%.2f", r.AnkusaCeiling), fmt.Sprintf("%.2f", r.GcrefCeiling))
	}
	b.WriteString(t.String())

	if res.OpenRate > 0 {
		fmt.Fprintf(&b, "\nOpen loop: `loadgen ... -c %d -rate %.0f` (%.0f%% of ankusa's median req/s at %d connections), latency from the scheduled send time, -d %s -warmup %s, medians of %d rounds taken in turn:\n\n",
			res.OpenConns, res.OpenRate, 100*o.openFrac, res.OpenConns, res.Duration, res.Warmup, o.openRounds)
		t = benchkit.Table{Header: []string{"server", "req/s", "p50", "p99", "p99.9", "max", "CPU", "client CPU", "hooks/fsync", "fdatasync"}, Left: map[int]bool{0: true}}
		for _, s := range res.Open {
			t.Add(s.Server, benchkit.Thousands(s.RPS), ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU), hooks(s), fsyncAvg(s))
		}
		b.WriteString(t.String())
		fmt.Fprintf(&b, "\nankusa p99 / gcref p99 at the same rate: %.2f\n", res.OpenP99)
	}
	b.WriteString("\n")
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	if res.MinRatio > 0 {
		fmt.Fprintf(&b, "Guard: ankusa / gcref at least %.2f at every connection count, best round against best round.\n", res.MinRatio)
	}
	b.WriteString(benchkit.Footer("every request answered 201", res.Failures, res.WallSeconds))
	return b.String()
}

func hooks(s summary) string {
	if s.Server == ceiling {
		return "–"
	}
	return fmt.Sprintf("%.1f", s.HooksPerFsync)
}

func fsyncAvg(s summary) string {
	if s.Server == ceiling {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", s.FsyncAvgUS)
}
