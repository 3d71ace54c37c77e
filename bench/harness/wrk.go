package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// The -vs-wrk mode checks the instrument rather than the servers: it runs
// wrk and loadgen, alternately, against the bare ceiling, and compares what
// they report. Two kinds of case:
//
//   - closed loop, 64 connections, as fast as answers come (wrk -t2 -c64;
//     loadgen -c 64): throughput. On cores the client shares with the
//     server this mostly compares the two clients' CPU cost per request.
//   - a fixed rate well below saturation: wrk cannot send on a schedule
//     (wrk2 is not packaged), so wrk paces itself with a Lua delay() of
//     1 ms between a connection's requests (wrk -t1 -cN); its measured rate
//     is then loadgen's open-loop -rate, on as many connections (the
//     server's cost per request depends on how busy each connection is),
//     once with each engine (the default go engine and -engine epoll,
//     which runs one epoll loop as wrk does), then wrk runs again: how
//     far wrk agrees with itself is the floor under any agreement. With
//     N = 5 wrk's connections wake on the same millisecond tick of its
//     timers and send in bursts, which loadgen's even schedule does not
//     reproduce; with N = 1 both send one request at a time, about every
//     1.2 ms: the like-for-like case. Latency percentiles are compared as
//     wrk measures them, from the actual send; loadgen's from the
//     schedule, which add its own send lag, are shown beside them.
const (
	wrkClosedConns = 64
	wrkDelayMs     = 1
	// agreeWithin is the agreement the comparison asks for.
	agreeWithin = 0.15
)

// wrkPacedConns are the connection counts of the paced cases.
var wrkPacedConns = []int{5, 1}

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

// wrkRound is one round of every case.
type wrkRound struct {
	ClosedWrk     wrkResult  `json:"closed_wrk"`
	ClosedLoadgen loadResult `json:"closed_loadgen"`
	ClosedWrkCPU  float64    `json:"closed_wrk_cpu_s"`
	ClosedLoadCPU float64    `json:"closed_loadgen_cpu_s"`
	Paced         []pacedRun `json:"paced"` // by wrkPacedConns
}

// pacedRun is one paced case of a round: wrk, then loadgen at wrk's rate
// with either engine.
type pacedRun struct {
	Conns    int        `json:"conns"`
	Wrk      wrkResult  `json:"wrk"`
	WrkCPU   float64    `json:"wrk_cpu_s"`
	WrkAgain wrkResult  `json:"wrk_again"` // after loadgen: the comparison's noise floor
	AgainCPU float64    `json:"wrk_again_cpu_s"`
	Loadgen  loadResult `json:"loadgen"`
	LoadCPU  float64    `json:"loadgen_cpu_s"`
	Epoll    loadResult `json:"loadgen_epoll"`
	EpollCPU float64    `json:"loadgen_epoll_cpu_s"`
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

// compareWrk runs o.rounds rounds of every case against one ceiling server.
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
		for _, conns := range wrkPacedConns {
			p, err := pacedCase(ctx, o, wrk, pacedLua, secs, s.url, conns, round%2 == 0)
			if err != nil {
				return nil, err
			}
			r.Paced = append(r.Paced, p)
			fmt.Fprintf(os.Stderr, "harness: round %d: paced %d conns: wrk %.0f req/s p50 %.0f p99 %.0f µs; from send: loadgen p50 %.0f p99 %.0f µs, epoll p50 %.0f p99 %.0f µs\n",
				round, conns, p.Wrk.rps(), p.Wrk.P50, p.Wrk.P99, fromSend(p.Loadgen).P50, fromSend(p.Loadgen).P99, fromSend(p.Epoll).P50, fromSend(p.Epoll).P99)
		}
		fmt.Fprintf(os.Stderr, "harness: round %d: closed wrk %.0f, loadgen %.0f req/s\n", round, r.ClosedWrk.rps(), r.ClosedLoadgen.ThroughputRPS)
		if w := r.ClosedWrk; w.Errors > 0 || w.Non2xx > 0 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: wrk closed loop saw %.0f errors, %.0f non-2xx answers", round, w.Errors, w.Non2xx))
		}
		if l := r.ClosedLoadgen; l.Errors > 0 || l.Status["201"] != l.Requests {
			rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: loadgen closed loop: %d errors, statuses %v", round, l.Errors, l.Status))
		}
		for _, p := range r.Paced {
			for _, w := range []wrkResult{p.Wrk, p.WrkAgain} {
				if w.Errors > 0 || w.Non2xx > 0 {
					rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: wrk paced, %d conns, saw %.0f errors, %.0f non-2xx answers", round, p.Conns, w.Errors, w.Non2xx))
				}
			}
			for _, l := range []loadResult{p.Loadgen, p.Epoll} {
				if l.Errors > 0 || l.Status["201"] != l.Requests {
					rep.Failures = append(rep.Failures, fmt.Sprintf("round %d: loadgen paced, %d conns: %d errors, statuses %v", round, p.Conns, l.Errors, l.Status))
				}
			}
		}
		rep.Rounds = append(rep.Rounds, r)
	}
	return rep, nil
}

// pacedCase runs wrk paced by its delay() on conns connections, then
// loadgen at the rate wrk reached with each engine (the epoll engine first
// when epollFirst, so that rounds alternate the order), then wrk again:
// how far wrk agrees with itself a minute later is the floor under any
// agreement between the two clients.
func pacedCase(ctx context.Context, o *options, wrk, lua, secs, url string, conns int, epollFirst bool) (pacedRun, error) {
	p := pacedRun{Conns: conns}
	var err error
	if _, err := settle(ctx, o.settle); err != nil {
		return p, err
	}
	if p.Wrk, p.WrkCPU, err = runWrk(ctx, wrk, "-t1", "-c"+strconv.Itoa(conns), "-d"+secs, "-s", lua, url); err != nil {
		return p, err
	}
	args := loadArgs(o, url, conns, p.Wrk.rps())
	runs := []func() error{
		func() (err error) { p.Loadgen, p.LoadCPU, err = runLoadgen(ctx, o, args); return err },
		func() (err error) {
			p.Epoll, p.EpollCPU, err = runLoadgen(ctx, o, append(slices.Clip(args), "-engine", "epoll"))
			return err
		},
	}
	if epollFirst {
		runs[0], runs[1] = runs[1], runs[0]
	}
	for _, run := range runs {
		if _, err := settle(ctx, o.settle); err != nil {
			return p, err
		}
		if err := run(); err != nil {
			return p, err
		}
	}
	if _, err := settle(ctx, o.settle); err != nil {
		return p, err
	}
	p.WrkAgain, p.AgainCPU, err = runWrk(ctx, wrk, "-t1", "-c"+strconv.Itoa(conns), "-d"+secs, "-s", lua, url)
	return p, err
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
	fmt.Fprintf(&b, "- closed: `wrk -t2 -c%d` and `loadgen -c %d`; paced: `wrk -t1 -cN` with a Lua delay() of %d ms, and `loadgen -c N -rate R` (open loop; the go engine, then `-engine epoll`) at the rate wrk reached, then wrk again (the noise floor), for N = %s; latency from the actual send for all, loadgen's from the schedule beside it\n\n",
		wrkClosedConns, wrkClosedConns, wrkDelayMs, joinInts(wrkPacedConns, " and "))

	med := func(f func(wrkRound) float64) float64 {
		v := make([]float64, len(rep.Rounds))
		for i, r := range rep.Rounds {
			v[i] = f(r)
		}
		return benchkit.Median(v)
	}
	us := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	t := benchkit.Table{Header: []string{"case", "client", "req/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "client CPU µs/req"}, Left: map[int]bool{0: true, 1: true}}
	cpuPer := func(cpu, rps float64, d time.Duration) float64 { return div(cpu*1e6, rps*d.Seconds()) }
	// wrk runs for the duration; loadgen for its warm-up too, at about the
	// same rate.
	dur, _ := time.ParseDuration(rep.Duration)
	warm, _ := time.ParseDuration(rep.Warmup)
	// row adds a client's medians; lat picks its latency in a round.
	row := func(kase, client string, rps func(wrkRound) float64, lat func(wrkRound) benchkit.Latency, cpu func(wrkRound) float64) {
		rate, cpuCol := "", ""
		if rps != nil {
			rate = thousands(med(rps))
		}
		if cpu != nil {
			cpuCol = fmt.Sprintf("%.1f", med(cpu))
		}
		t.Add(kase, client, rate,
			us(med(func(r wrkRound) float64 { return lat(r).P50 })), us(med(func(r wrkRound) float64 { return lat(r).P90 })),
			us(med(func(r wrkRound) float64 { return lat(r).P99 })), us(med(func(r wrkRound) float64 { return lat(r).P999 })), cpuCol)
	}
	row("closed", "wrk", func(r wrkRound) float64 { return r.ClosedWrk.rps() },
		func(r wrkRound) benchkit.Latency { return r.ClosedWrk.latency() },
		func(r wrkRound) float64 { return cpuPer(r.ClosedWrkCPU, r.ClosedWrk.rps(), dur) })
	row("closed", "loadgen", func(r wrkRound) float64 { return r.ClosedLoadgen.ThroughputRPS },
		func(r wrkRound) benchkit.Latency { return r.ClosedLoadgen.LatencyUS },
		func(r wrkRound) float64 { return cpuPer(r.ClosedLoadCPU, r.ClosedLoadgen.ThroughputRPS, dur+warm) })
	for i, conns := range wrkPacedConns {
		kase := fmt.Sprintf("paced, %d conn%s", conns, plural(conns))
		p := func(r wrkRound) pacedRun { return r.Paced[i] }
		row(kase, "wrk", func(r wrkRound) float64 { return p(r).Wrk.rps() },
			func(r wrkRound) benchkit.Latency { return p(r).Wrk.latency() },
			func(r wrkRound) float64 { return cpuPer(p(r).WrkCPU, p(r).Wrk.rps(), dur) })
		for _, engine := range []struct {
			name string
			res  func(pacedRun) (loadResult, float64)
		}{
			{"loadgen", func(p pacedRun) (loadResult, float64) { return p.Loadgen, p.LoadCPU }},
			{"loadgen epoll", func(p pacedRun) (loadResult, float64) { return p.Epoll, p.EpollCPU }},
		} {
			l := func(r wrkRound) loadResult { res, _ := engine.res(p(r)); return res }
			row(kase, engine.name+", from send", func(r wrkRound) float64 { return l(r).ThroughputRPS },
				func(r wrkRound) benchkit.Latency { return fromSend(l(r)) },
				func(r wrkRound) float64 {
					res, cpu := engine.res(p(r))
					return cpuPer(cpu, res.ThroughputRPS, dur+warm)
				})
			row(kase, engine.name+", from schedule", nil, func(r wrkRound) benchkit.Latency { return l(r).LatencyUS }, nil)
		}
		row(kase, "wrk, again", func(r wrkRound) float64 { return p(r).WrkAgain.rps() },
			func(r wrkRound) benchkit.Latency { return p(r).WrkAgain.latency() },
			func(r wrkRound) float64 { return cpuPer(p(r).AgainCPU, p(r).WrkAgain.rps(), dur) })
	}
	b.WriteString(t.String())

	b.WriteString("\n")
	agreeCol := fmt.Sprintf("within %.0f%%", 100*agreeWithin)
	t = benchkit.Table{Header: []string{"figure", "loadgen / wrk", agreeCol, "loadgen epoll / wrk", agreeCol, "wrk again / wrk", agreeCol}, Left: map[int]bool{0: true}}
	ratio := func(l, w float64) (string, string) {
		return fmt.Sprintf("%.2f", div(l, w)), yesNo(within(div(l, w), agreeWithin))
	}
	lr, wr := med(func(r wrkRound) float64 { return r.ClosedLoadgen.ThroughputRPS }), med(func(r wrkRound) float64 { return r.ClosedWrk.rps() })
	v, ok := ratio(lr, wr)
	t.Add("closed req/s", v, ok, "", "", "", "")
	for i, conns := range wrkPacedConns {
		for _, q := range []struct {
			name string
			f    func(benchkit.Latency) float64
		}{
			{"p50", func(l benchkit.Latency) float64 { return l.P50 }},
			{"p90", func(l benchkit.Latency) float64 { return l.P90 }},
			{"p99", func(l benchkit.Latency) float64 { return l.P99 }},
			{"p99.9", func(l benchkit.Latency) float64 { return l.P999 }},
		} {
			w := med(func(r wrkRound) float64 { return q.f(r.Paced[i].Wrk.latency()) })
			g := med(func(r wrkRound) float64 { return q.f(fromSend(r.Paced[i].Loadgen)) })
			e := med(func(r wrkRound) float64 { return q.f(fromSend(r.Paced[i].Epoll)) })
			a := med(func(r wrkRound) float64 { return q.f(r.Paced[i].WrkAgain.latency()) })
			gv, gok := ratio(g, w)
			ev, eok := ratio(e, w)
			av, aok := ratio(a, w)
			t.Add(fmt.Sprintf("paced, %d conn%s, %s (from send)", conns, plural(conns), q.name), gv, gok, ev, eok, av, aok)
		}
	}
	b.WriteString(t.String())
	// Unlike the side by side's, this verdict stands apart from the tables
	// and the run time.
	fmt.Fprintf(&b, "\n%s\n\n%s\n", strings.TrimSuffix(benchkit.Result("every request answered 201", rep.Failures), "\n"), benchkit.RunTime(rep.WallSeconds))
	return b.String()
}

// latency is wrk's summary in loadgen's form.
func (w wrkResult) latency() benchkit.Latency {
	return benchkit.Latency{P50: w.P50, P90: w.P90, P99: w.P99, P999: w.P999, Max: w.Max}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}
