package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// The -vs-wrk mode checks the instrument rather than the servers: it runs
// wrk and loadgen, alternately, against the bare ceiling, and compares what
// they report. Two cases:
//
//   - closed loop, 64 connections, as fast as answers come (wrk -t2 -c64;
//     loadgen -c 64): throughput. On cores the client shares with the
//     server this mostly compares the two clients' CPU cost per request.
//   - a fixed rate well below saturation: wrk cannot send on a schedule
//     (wrk2 is not packaged), so wrk paces itself with a Lua delay() of
//     1 ms between a connection's requests (wrk -t1 -c5); its measured rate
//     is then loadgen's open-loop -rate, on as many connections (the
//     server's cost per request depends on how busy each connection is). Latency percentiles are compared
//     as wrk measures them, from the actual send; loadgen's from the
//     schedule, which add its own send lag, are shown beside them.
const (
	wrkClosedConns = 64
	wrkPacedConns  = 5
	wrkDelayMs     = 1
	// agreeWithin is the agreement the comparison asks for.
	agreeWithin = 0.15
)

// wrkScript posts the body file and prints the summary as one JSON line.
const wrkScript = `wrk.method = "POST"
local f = assert(io.open(%q, "rb"))
wrk.body = f:read("*all")
f:close()
wrk.headers["Content-Type"] = "application/json"
%s
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%%d,"duration_us":%%d,"errors":%%d,"non2xx":%%d,"p50":%%d,"p90":%%d,"p99":%%d,"p999":%%d,"max":%%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max))
end
`

// wrkResult is what the script prints.
type wrkResult struct {
	Requests   float64 `json:"requests"`
	DurationUS float64 `json:"duration_us"`
	Errors     float64 `json:"errors"`
	Non2xx     float64 `json:"non2xx"`
	P50        float64 `json:"p50"`
	P90        float64 `json:"p90"`
	P99        float64 `json:"p99"`
	P999       float64 `json:"p999"`
	Max        float64 `json:"max"`
}

func (w wrkResult) rps() float64 { return div(w.Requests, w.DurationUS/1e6) }

// wrkRound is one round of both cases.
type wrkRound struct {
	ClosedWrk     wrkResult  `json:"closed_wrk"`
	ClosedLoadgen loadResult `json:"closed_loadgen"`
	ClosedWrkCPU  float64    `json:"closed_wrk_cpu_s"`
	ClosedLoadCPU float64    `json:"closed_loadgen_cpu_s"`
	PacedWrk      wrkResult  `json:"paced_wrk"`
	PacedLoadgen  loadResult `json:"paced_loadgen"`
	PacedWrkCPU   float64    `json:"paced_wrk_cpu_s"`
	PacedLoadCPU  float64    `json:"paced_loadgen_cpu_s"`
}

// wrkReport is the -vs-wrk report; -json writes it whole.
type wrkReport struct {
	Machine     benchkit.Machine `json:"machine"`
	Duration    string           `json:"duration"`
	Warmup      string           `json:"warmup"`
	Rounds      []wrkRound       `json:"rounds"`
	Failures    []string         `json:"failures"`
	WallSeconds float64          `json:"wall_seconds"`
}

// compareWrk runs o.rounds rounds of both cases against one ceiling server.
func compareWrk(ctx context.Context, o *options) (*wrkReport, error) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return nil, fmt.Errorf("-vs-wrk needs wrk (Debian package wrk; make bench-wrk installs it): %w", err)
	}
	dir, err := os.MkdirTemp(o.tmp, "ankusa-bench-wrk-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, wrkBody(1024), 0o644); err != nil {
		return nil, err
	}
	closedLua, pacedLua := filepath.Join(dir, "closed.lua"), filepath.Join(dir, "paced.lua")
	if err := os.WriteFile(closedLua, fmt.Appendf(nil, wrkScript, body, ""), 0o644); err != nil {
		return nil, err
	}
	delay := fmt.Sprintf("delay = function() return %d end", wrkDelayMs)
	if err := os.WriteFile(pacedLua, fmt.Appendf(nil, wrkScript, body, delay), 0o644); err != nil {
		return nil, err
	}
	s, err := startServer(ctx, o, ceiling)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	rep := &wrkReport{Machine: benchkit.DescribeMachine(o.tmp, unpinned), Duration: o.duration.String(), Warmup: o.warmup.String()}
	secs := strconv.Itoa(max(1, int(o.duration.Round(time.Second).Seconds()))) + "s"
	for round := 1; round <= o.rounds; round++ {
		var r wrkRound
		if _, err := settle(ctx, o.settle); err != nil {
			return nil, err
		}
		if r.ClosedWrk, r.ClosedWrkCPU, err = runWrk(ctx, wrk, "-t2", "-c"+strconv.Itoa(wrkClosedConns), "-d"+secs, "-s", closedLua, s.url); err != nil {
			return nil, err
		}
		if _, err := settle(ctx, o.settle); err != nil {
			return nil, err
		}
		if r.ClosedLoadgen, r.ClosedLoadCPU, err = runLoadgen(ctx, o, loadArgs(o, s.url, wrkClosedConns, 0)); err != nil {
			return nil, err
		}
		if _, err := settle(ctx, o.settle); err != nil {
			return nil, err
		}
		if r.PacedWrk, r.PacedWrkCPU, err = runWrk(ctx, wrk, "-t1", "-c"+strconv.Itoa(wrkPacedConns), "-d"+secs, "-s", pacedLua, s.url); err != nil {
			return nil, err
		}
		if _, err := settle(ctx, o.settle); err != nil {
			return nil, err
		}
		if r.PacedLoadgen, r.PacedLoadCPU, err = runLoadgen(ctx, o, loadArgs(o, s.url, wrkPacedConns, r.PacedWrk.rps())); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "harness: round %d: closed wrk %.0f, loadgen %.0f req/s; paced wrk %.0f req/s p99 %.0f µs, loadgen p99 from send %.0f µs\n",
			round, r.ClosedWrk.rps(), r.ClosedLoadgen.ThroughputRPS, r.PacedWrk.rps(), r.PacedWrk.P99, fromSend(r.PacedLoadgen).P99)
		for _, w := range []wrkResult{r.ClosedWrk, r.PacedWrk} {
			if w.Errors > 0 || w.Non2xx > 0 {
				rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: wrk saw %.0f errors, %.0f non-2xx answers", round, w.Errors, w.Non2xx))
			}
		}
		for _, l := range []loadResult{r.ClosedLoadgen, r.PacedLoadgen} {
			if l.Errors > 0 || l.Status["201"] != l.Requests {
				rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: loadgen %s loop: %d errors, statuses %v", round, l.Mode, l.Errors, l.Status))
			}
		}
		rep.Rounds = append(rep.Rounds, r)
	}
	return rep, nil
}

// wrkBody is a JSON object of exactly n bytes.
func wrkBody(n int) []byte {
	const head, tail = `{"pad":"`, `"}`
	b := append([]byte(head), bytes.Repeat([]byte("x"), n-len(head)-len(tail))...)
	return append(b, tail...)
}

// runWrk runs wrk and returns its summary and CPU time.
func runWrk(ctx context.Context, wrk string, args ...string) (wrkResult, float64, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, wrk, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return wrkResult{}, 0, fmt.Errorf("wrk %s: %w: %s", strings.Join(args, " "), err, benchkit.Tail(errOut.String()))
	}
	var r wrkResult
	line := out.Bytes()
	if i := bytes.LastIndex(line, []byte("\n{")); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &r); err != nil {
		return r, 0, fmt.Errorf("wrk %s printed no summary: %v\n%s", strings.Join(args, " "), err, benchkit.Tail(out.String()))
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return r, cpu, nil
}

// runLoadgen runs loadgen to the end and returns its summary and CPU time.
func runLoadgen(ctx context.Context, o *options, args []string) (loadResult, float64, error) {
	l, err := startLoad(ctx, o, args)
	if err != nil {
		return loadResult{}, 0, err
	}
	r, _, exitErr, err := loadResultOf(l)
	if err == nil {
		err = exitErr
	}
	return r, l.CPU(), err
}

// fromSend is loadgen's latency from the actual send (open loop), or its
// only latency (closed loop).
func fromSend(l loadResult) benchkit.Latency {
	if l.FromSendUS != nil {
		return *l.FromSendUS
	}
	return l.LatencyUS
}

// markdown renders the comparison: medians of the rounds and the ratios.
func (rep *wrkReport) markdown() string {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "make bench-wrk, %s\n\n- %s; %s\n", m.Date, m.Platform(), unpinned)
	fmt.Fprintf(&b, "- bench/ceiling (reads the body, answers 201), 1 KiB JSON bodies, %s per run, %d round(s) alternating the clients; medians of the rounds\n", rep.Duration, len(rep.Rounds))
	fmt.Fprintf(&b, "- closed: `wrk -t2 -c%d` and `loadgen -c %d`; paced: `wrk -t1 -c%d` with a Lua delay() of %d ms, and `loadgen -c %d -rate R` (open loop) at the rate wrk reached; latency from the actual send for both, loadgen's from the schedule beside it\n\n",
		wrkClosedConns, wrkClosedConns, wrkPacedConns, wrkDelayMs, wrkPacedConns)

	med := func(f func(wrkRound) float64) float64 {
		v := make([]float64, len(rep.Rounds))
		for i, r := range rep.Rounds {
			v[i] = f(r)
		}
		return benchkit.Median(v)
	}
	us := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	verdict := func(ratio float64) string { return yesNo(within(ratio, agreeWithin)) }
	t := benchkit.Table{Header: []string{"case", "client", "req/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "client CPU µs/req"}, Left: map[int]bool{0: true, 1: true}}
	cpuPer := func(cpu, rps float64, d time.Duration) float64 { return div(cpu*1e6, rps*d.Seconds()) }
	// wrk runs for the duration; loadgen for its warm-up too, at about the
	// same rate.
	dur, _ := time.ParseDuration(rep.Duration)
	warm, _ := time.ParseDuration(rep.Warmup)
	wc, lc := med(func(r wrkRound) float64 { return r.ClosedWrk.rps() }), med(func(r wrkRound) float64 { return r.ClosedLoadgen.ThroughputRPS })
	t.Add("closed", "wrk", thousands(wc),
		us(med(func(r wrkRound) float64 { return r.ClosedWrk.P50 })), us(med(func(r wrkRound) float64 { return r.ClosedWrk.P90 })),
		us(med(func(r wrkRound) float64 { return r.ClosedWrk.P99 })), us(med(func(r wrkRound) float64 { return r.ClosedWrk.P999 })),
		fmt.Sprintf("%.1f", med(func(r wrkRound) float64 { return cpuPer(r.ClosedWrkCPU, r.ClosedWrk.rps(), dur) })))
	t.Add("closed", "loadgen", thousands(lc),
		us(med(func(r wrkRound) float64 { return r.ClosedLoadgen.LatencyUS.P50 })), us(med(func(r wrkRound) float64 { return r.ClosedLoadgen.LatencyUS.P90 })),
		us(med(func(r wrkRound) float64 { return r.ClosedLoadgen.LatencyUS.P99 })), us(med(func(r wrkRound) float64 { return r.ClosedLoadgen.LatencyUS.P999 })),
		fmt.Sprintf("%.1f", med(func(r wrkRound) float64 {
			return cpuPer(r.ClosedLoadCPU, r.ClosedLoadgen.ThroughputRPS, dur+warm)
		})))
	pw := func(f func(wrkResult) float64) float64 { return med(func(r wrkRound) float64 { return f(r.PacedWrk) }) }
	pl := func(f func(benchkit.Latency) float64) float64 {
		return med(func(r wrkRound) float64 { return f(fromSend(r.PacedLoadgen)) })
	}
	ps := func(f func(benchkit.Latency) float64) float64 {
		return med(func(r wrkRound) float64 { return f(r.PacedLoadgen.LatencyUS) })
	}
	t.Add("paced", "wrk", thousands(pw(wrkResult.rps)),
		us(pw(func(w wrkResult) float64 { return w.P50 })), us(pw(func(w wrkResult) float64 { return w.P90 })),
		us(pw(func(w wrkResult) float64 { return w.P99 })), us(pw(func(w wrkResult) float64 { return w.P999 })), "")
	t.Add("paced", "loadgen, from send", thousands(med(func(r wrkRound) float64 { return r.PacedLoadgen.ThroughputRPS })),
		us(pl(func(l benchkit.Latency) float64 { return l.P50 })), us(pl(func(l benchkit.Latency) float64 { return l.P90 })),
		us(pl(func(l benchkit.Latency) float64 { return l.P99 })), us(pl(func(l benchkit.Latency) float64 { return l.P999 })), "")
	t.Add("paced", "loadgen, from schedule", "",
		us(ps(func(l benchkit.Latency) float64 { return l.P50 })), us(ps(func(l benchkit.Latency) float64 { return l.P90 })),
		us(ps(func(l benchkit.Latency) float64 { return l.P99 })), us(ps(func(l benchkit.Latency) float64 { return l.P999 })), "")
	b.WriteString(t.String())

	b.WriteString("\n")
	t = benchkit.Table{Header: []string{"figure", "loadgen / wrk", fmt.Sprintf("within %.0f%%", 100*agreeWithin)}, Left: map[int]bool{0: true}}
	add := func(name string, l, w float64) { t.Add(name, fmt.Sprintf("%.2f", div(l, w)), verdict(div(l, w))) }
	add("closed req/s", lc, wc)
	add("paced p50 (from send)", pl(func(l benchkit.Latency) float64 { return l.P50 }), pw(func(w wrkResult) float64 { return w.P50 }))
	add("paced p90 (from send)", pl(func(l benchkit.Latency) float64 { return l.P90 }), pw(func(w wrkResult) float64 { return w.P90 }))
	add("paced p99 (from send)", pl(func(l benchkit.Latency) float64 { return l.P99 }), pw(func(w wrkResult) float64 { return w.P99 }))
	add("paced p99.9 (from send)", pl(func(l benchkit.Latency) float64 { return l.P999 }), pw(func(w wrkResult) float64 { return w.P999 }))
	b.WriteString(t.String())
	// Unlike the side by side's, this verdict stands apart from the tables
	// and the run time.
	fmt.Fprintf(&b, "\n%s\n\n%s\n", strings.TrimSuffix(benchkit.Result("every request answered 201", rep.Failures), "\n"), benchkit.RunTime(rep.WallSeconds))
	return b.String()
}
