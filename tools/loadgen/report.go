package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// Summary is the result of a run; its JSON form is the -json output.
type Summary = result.Summary

// Latency is a latency distribution in microseconds.
type Latency = result.Latency

// summary merges the recorders into the run's summary, and counts the 201
// answers without a usable id; end is when the last worker stopped.
func (rn *runner) summary(end time.Time) (s *Summary, noID int64) {
	all := newRecorder()
	for _, r := range rn.shards {
		all.merge(r)
	}
	all.kinds[kindUnsent] += rn.unsent
	all.errors += rn.unsent
	last := all.lastDone
	if last.IsZero() {
		last = end
	}
	dur := max(last.Sub(rn.windowStart), 0).Seconds()
	s = &Summary{
		Mode: rn.cfg.Mode(), Connections: rn.cfg.Conns, Rate: rn.cfg.Rate,
		DurationS: round(dur, 3),
		Requests:  all.answered + all.errors,
		LatencyUs: result.LatencyOf(all.latency, all.maxUs),
		Status:    map[string]int64{}, ErrorKinds: map[string]int64{},
		Errors: all.errors,
	}
	if dur > 0 {
		s.ThroughputRPS = round(float64(all.answered)/dur, 1)
	}
	for code, n := range all.status {
		if n > 0 {
			s.Status[strconv.Itoa(code)] = n
		}
	}
	for k, n := range all.kinds {
		s.ErrorKinds[kindNames[k]] = n
	}
	if rn.cfg.Open() {
		lag, service := result.LatencyOf(all.lag, all.lagMax), result.LatencyOf(all.service, all.svcMax)
		s.SendLagUs, s.FromSendUs = &lag, &service
	}
	return s, all.noID
}

func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

// writeSummary prints s as JSON (-json) or as the human table.
func writeSummary(w io.Writer, cfg *Config, s *Summary) error {
	if cfg.JSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	if cfg.Open() {
		engine := ""
		if cfg.Engine == "epoll" {
			engine = ", epoll engine"
		}
		row("mode", "open loop, %g req/s scheduled, pool of %d connections%s", cfg.Rate, cfg.Conns, engine)
	} else {
		row("mode", "closed loop, %d connections", cfg.Conns)
	}
	row("payload", "%s %s bodies, sign %s", cfg.Sizes, cfg.Kind, cfg.Sign)
	row("duration", "%.3f s measured, after %v warm-up", s.DurationS, cfg.Warmup)
	row("requests", "%d", s.Requests)
	row("throughput", "%.1f req/s (answered)", s.ThroughputRPS)
	for _, code := range slices.Sorted(maps.Keys(s.Status)) {
		row("status "+code, "%d", s.Status[code])
	}
	row("errors", "%d", s.Errors)
	for _, k := range kindNames {
		if n := s.ErrorKinds[k]; n > 0 {
			row("  "+k, "%d", n)
		}
	}
	origin := "from the send"
	if cfg.Open() {
		origin = "from the scheduled send time"
	}
	writeLatency(row, "latency", s.LatencyUs, origin)
	if cfg.Open() {
		row("send lag", "p50 %s, p99 %s, p99.9 %s, max %s (how late the client sent: large means the client, not the server, fell behind)",
			fmtUs(s.SendLagUs.P50), fmtUs(s.SendLagUs.P99), fmtUs(s.SendLagUs.P999), fmtUs(s.SendLagUs.Max))
		row("from actual send", "p50 %s, p90 %s, p99 %s, p99.9 %s, max %s (the closed-loop view: leaves out time waiting to be sent)",
			fmtUs(s.FromSendUs.P50), fmtUs(s.FromSendUs.P90), fmtUs(s.FromSendUs.P99), fmtUs(s.FromSendUs.P999), fmtUs(s.FromSendUs.Max))
	}
	return tw.Flush()
}

func writeLatency(row func(k, format string, args ...any), name string, l Latency, origin string) {
	row(name+" p50", "%s (%s)", fmtUs(l.P50), origin)
	row(name+" p90", "%s", fmtUs(l.P90))
	row(name+" p99", "%s", fmtUs(l.P99))
	row(name+" p99.9", "%s", fmtUs(l.P999))
	row(name+" max", "%s", fmtUs(l.Max))
	row(name+" mean", "%s", fmtUs(int64(math.Round(l.Mean))))
}

// fmtUs renders microseconds with a unit that keeps 3-4 digits.
func fmtUs(us int64) string {
	switch {
	case us < 10_000:
		return strconv.FormatInt(us, 10) + " µs"
	case us < 10_000_000:
		return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(float64(us)/1e6, 'f', 3, 64) + " s"
}
