package main

import (
	"strings"
	"testing"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// TestWrkMarkdown renders a report of made-up rounds: every client's row,
// medians of the rounds, and the agreement verdicts per engine.
func TestWrkMarkdown(t *testing.T) {
	lat := func(p50, p90, p99, p999 float64) *benchkit.Latency {
		return &benchkit.Latency{P50: p50, P90: p90, P99: p99, P999: p999}
	}
	load := func(rps float64, send *benchkit.Latency) loadResult {
		l := loadResult{FromSendUS: send}
		l.ThroughputRPS, l.Requests, l.Status = rps, 100, map[string]int64{"201": 100}
		l.LatencyUS = benchkit.Latency{P50: send.P50 + 5, P90: send.P90 + 5, P99: send.P99 + 5, P999: send.P999 + 5}
		return l
	}
	var rep wrkReport
	rep.Duration, rep.Warmup = "8s", "1s"
	for i := range 3 {
		k := float64(i) // rounds differ; the medians are round 1's
		r := wrkRound{
			ClosedWrk:     wrkResult{Requests: 800_000 + 1000*k, DurationUS: 8e6},
			ClosedLoadgen: load(90_000+100*k, lat(500, 1000, 3000, 6000)),
		}
		r.ClosedLoadgen.FromSendUS = nil
		r.Paced = []pacedRun{
			{Conns: 5, Wrk: wrkResult{Requests: 32_000, DurationUS: 8e6, P50: 80, P90: 120, P99: 180 + k, P999: 240},
				Loadgen: load(4000, lat(60, 88, 160, 800)), Epoll: load(4000, lat(75, 110, 190, 260)),
				WrkAgain: wrkResult{Requests: 32_000, DurationUS: 8e6, P50: 82, P90: 120, P99: 200, P999: 300}},
			{Conns: 1, Wrk: wrkResult{Requests: 6_700, DurationUS: 8e6, P50: 90, P90: 120, P99: 150, P999: 240},
				Loadgen: load(838, lat(150, 190, 220, 1500)), Epoll: load(838, lat(85, 115, 160, 250)),
				WrkAgain: wrkResult{Requests: 6_700, DurationUS: 8e6, P50: 91, P90: 121, P99: 152, P999: 250}},
		}
		rep.Rounds = append(rep.Rounds, r)
	}
	md := rep.markdown()
	for _, want := range []string{
		"| closed         | wrk                          | 100,125 |",
		"| paced, 5 conns | loadgen epoll, from send",
		"| paced, 1 conn  | loadgen, from schedule",
		"| paced, 1 conn  | wrk, again",
		"| paced, 5 conns, p99 (from send)   |          0.88 |        yes |                1.05 |        yes |            1.10 |        yes |",
		"| paced, 1 conn, p99.9 (from send)  |          6.25 |         no |                1.04 |        yes |            1.04 |        yes |",
		"| paced, 5 conns, p99.9 (from send) |          3.33 |         no |                1.08 |        yes |            1.25 |         no |",
		"| closed req/s                      |          0.90 |        yes |                     |            |                 |            |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
