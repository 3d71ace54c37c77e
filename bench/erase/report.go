package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// maxRatio is the acceptance: steady's p99 with the erase within 2× of
// its p99 without.
const maxRatio = 2.0

// stages are the erase's stages in the order it runs them, as the
// status names them (tenant.EraseStages).
var stages = []string{"started", "closed", "sources", "rate_limit", "deliveries", "quarantine", "claims", "dedupe", "events", "erased", "archived"}

// report is the run's figures.
type report struct {
	o                *options
	machine          benchkit.Machine
	ingested         *ingestRun
	baseline, during *steadyRun
	after            *steadyRun // nil without -after
	erase            *eraseRun
	busy             int
	receiverOther    int64
	failures         []string
}

// figures is the JSON report.
type figures struct {
	Machine       benchkit.Machine `json:"machine"`
	Hooks         int64            `json:"hooks_requested"`
	Rate          float64          `json:"steady_rate"`
	WindowS       float64          `json:"steady_window_s"`
	EraseAtS      float64          `json:"erase_at_s"`
	Ingest        *ingestRun       `json:"ingest"`
	Baseline      *steadyRun       `json:"baseline"`
	During        *steadyRun       `json:"during_erase"`
	After         *steadyRun       `json:"after_erase,omitempty"`
	Erase         *eraseRun        `json:"erase"`
	P99Ratio      float64          `json:"p99_ratio"`
	Pass          bool             `json:"pass"`
	BusyRuns      int              `json:"busy_runs"`
	ReceiverOther int64            `json:"receiver_other"`
	Failures      []string         `json:"failures"`
	WallS         float64          `json:"wall_s"`
}

// ratio is steady's p99 with the erase over its p99 without.
func (rep *report) ratio() float64 {
	base := rep.baseline.Result.LatencyUs.P99
	if base <= 0 {
		return 0
	}
	return float64(rep.during.Result.LatencyUs.P99) / float64(base)
}

// Publish writes the markdown and the figures.
func (rep *report) Publish(wall time.Duration) benchkit.Published {
	o := rep.o
	if rep.receiverOther > 0 {
		rep.failures = append(rep.failures, fmt.Sprintf("the receiver got %d deliveries for neither tenant", rep.receiverOther))
	}
	ratio := rep.ratio()
	pass := ratio > 0 && ratio <= maxRatio
	var b strings.Builder
	b.WriteString(rep.machine.Header("make bench-erase"))
	in, er := rep.ingested, rep.erase
	fmt.Fprintf(&b, "- one node: tenantpath resolver, shared source verify: none with trust_url_tenant, an HTTP sink to this process's receiver, WAL on disk, segments sealed after 1 s, dir archive\n")
	fmt.Fprintf(&b, "- big: %s hooks of 512 B (loadgen's smallest) ingested closed loop at %d connections in **%s** (%s req/s); the receiver answers them 503 Retry-After: 86400, so each had one attempt (all made %s after the ingest began) and waits as a pending row\n",
		benchkit.Thousands(float64(in.Hooks)), o.ingestC, benchkit.Dur(in.Took), benchkit.Thousands(in.Result.ThroughputRPS), benchkit.Dur(in.FirstAttempts))
	fmt.Fprintf(&b, "- before the erase: %s pending rows; data directory %s (%s)\n", benchkit.Thousands(float64(in.Backlog.Pending)), benchkit.MiB(sum(in.DataBytes)), sizes(in.DataBytes))
	if !in.NodeIdle {
		fmt.Fprintf(&b, "- the node did not go idle after the ingest (%.0f%% of a core over the last second)\n", 100*in.NodeIdleCPU)
	}
	fmt.Fprintf(&b, "- steady: loadgen open loop at %s req/s, %d connections, %s after %s of warm-up; in the second run DELETE /v1/tenants/big?confirm=big %s into the window\n\n",
		benchkit.Thousands(o.rate), o.steadyC, o.duration, o.warmup, o.eraseAt)

	t := benchkit.Table{Header: []string{"steady run", "requests", "req/s", "p50", "p99", "p99.9", "max", "not 201", "node CPU"}, Left: map[int]bool{0: true}}
	for _, r := range rep.runs() {
		l := r.Result.LatencyUs
		t.Add(r.Name, benchkit.Thousands(float64(r.Result.Requests)), benchkit.Thousands(r.Result.ThroughputRPS),
			us(l.P50), us(l.P99), us(l.P999), us(l.Max), benchkit.Thousands(float64(notCreated(&r.Result))), fmt.Sprintf("%.1f s", r.NodeCPU))
	}
	b.WriteString(t.String())
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "\nsteady's p99 with the erase / without (baseline): **%.2f×** (acceptance ≤ %.0f×: **%s**)\n", ratio, maxRatio, verdict)
	if rep.after != nil && rep.baseline.Result.LatencyUs.P99 > 0 {
		fmt.Fprintf(&b, "steady's p99 after the erase / baseline (two runs without one, for the spread): %.2f×\n", float64(rep.after.Result.LatencyUs.P99)/float64(rep.baseline.Result.LatencyUs.P99))
	}
	b.WriteString("\n")

	fmt.Fprintf(&b, "Erase of big: **%s** from the 202 to erased_at (the node's started_at to erased_at: %s; the DELETE answered 202 in %s; seen erased by a 20 ms poll %s after the 202); seq_at_close %d\n\n",
		benchkit.Dur(er.Duration), benchkit.Dur(er.NodeDuration), benchkit.Dur(er.RequestLatency), benchkit.Dur(er.SeenDone), er.SeqAtClose)
	st := benchkit.Table{Header: []string{"stage", "first seen done, after the 202", "removed"}, Left: map[int]bool{0: true}}
	for _, stage := range stages {
		seen, removed := "–", ""
		for _, s := range er.Stages {
			if s.Stage == stage {
				seen = benchkit.Dur(s.After)
			}
		}
		if v, ok := er.Removed[stage]; ok {
			removed = benchkit.Thousands(float64(v))
		}
		st.Add(stage, seen, removed)
	}
	b.WriteString(st.String())
	b.WriteString("\n(removed: keys deleted; deliveries counts the rows, their due entries and their attempt-log entries)\n")
	fmt.Fprintf(&b, "\n- backlog after the erase: %d pending, %d in flight, %d dead\n", er.BacklogAfter.Pending, er.BacklogAfter.InFlight, er.BacklogAfter.Dead)
	if !er.Covered {
		fmt.Fprintf(&b, "- **the erase ended less than 3 s before steady's window did: the window does not cover its whole effect** (raise -d)\n")
	}
	for _, r := range rep.runs() {
		if r.Profile != "" {
			fmt.Fprintf(&b, "- node CPU profile over the %s window: %s\n", r.Name, r.Profile)
		}
	}
	b.WriteString(benchkit.BusyNote(rep.busy))
	b.WriteString("\n" + benchkit.Footer("the run is complete; the ratio is reported, not failed on", rep.failures, wall.Seconds()))
	return benchkit.Published{
		Markdown: b.String(), Out: o.out, JSONOut: o.jsonOut, Failures: rep.failures,
		Figures: figures{Machine: rep.machine, Hooks: o.hooks, Rate: o.rate, WindowS: o.duration.Seconds(), EraseAtS: o.eraseAt.Seconds(),
			Ingest: in, Baseline: rep.baseline, During: rep.during, After: rep.after, Erase: er, P99Ratio: ratio, Pass: pass, BusyRuns: rep.busy,
			ReceiverOther: rep.receiverOther, Failures: rep.failures, WallS: wall.Seconds()},
	}
}

// runs are the steady runs made, in order.
func (rep *report) runs() []*steadyRun {
	out := []*steadyRun{rep.baseline, rep.during}
	if rep.after != nil {
		out = append(out, rep.after)
	}
	return out
}

// us is a latency in µs for the table.
func us(v int64) string { return benchkit.Dur(time.Duration(v) * time.Microsecond) }

// notCreated is the run's answers but 201 and failed requests.
func notCreated(r *result.Summary) int64 {
	var n int64
	for code, c := range r.Status {
		if code != "201" {
			n += c
		}
	}
	return n + r.Errors
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

// sizes lists m's sizes by name.
func sizes(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" "+benchkit.MiB(m[k]))
	}
	return strings.Join(parts, ", ")
}
