package main

import (
	"fmt"
	"strings"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

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
		t.Add(append(append([]string{fmt.Sprint(s.Conns), s.Server}, closedCells(s)...), fmt.Sprintf("%.0f MiB", s.RSS), hooks(s), fsyncAvg(s))...)
	}
	b.WriteString(t.String())
	b.WriteString("\n")
	t = benchkit.Table{Header: []string{"conns", "ankusa / gcref", "ankusa / ceiling", "gcref / ceiling"}}
	for _, r := range res.Ratios {
		t.Add(fmt.Sprint(r.Conns), fmt.Sprintf("%.2f", r.AnkusaGcref), fmt.Sprintf("%.2f", r.AnkusaCeiling), fmt.Sprintf("%.2f", r.GcrefCeiling))
	}
	b.WriteString(t.String())

	if res.OpenRate > 0 {
		fmt.Fprintf(&b, "\nOpen loop: `loadgen ... -c %d -rate %.0f` (%.0f%% of ankusa's median req/s at %d connections), latency from the scheduled send time, -d %s -warmup %s:\n\n",
			res.OpenConns, res.OpenRate, 100*o.openFrac, res.OpenConns, res.Duration, res.Warmup)
		t = benchkit.Table{Header: []string{"server", "req/s", "p50", "p99", "p99.9", "max", "CPU", "client CPU", "hooks/fsync", "fdatasync"}, Left: map[int]bool{0: true}}
		for _, s := range res.Open {
			t.Add(s.Server, benchkit.Thousands(s.RPS), ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU), hooks(s), fsyncAvg(s))
		}
		b.WriteString(t.String())
		fmt.Fprintf(&b, "\nankusa p99 / gcref p99 at the same rate: %.2f\n", res.OpenP99)
	}
	b.WriteString(res.closing())
	return b.String()
}

// closing is the end of a report: a blank line, the notes, the guard if
// any, the result and the run time.
func (res *results) closing() string {
	var b strings.Builder
	b.WriteString("\n")
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	if res.MinRatio > 0 {
		fmt.Fprintf(&b, "Guard: ankusa / gcref at least %.2f at every connection count.\n", res.MinRatio)
	}
	b.WriteString(benchkit.Footer("every request answered 201", res.Failures, res.WallSeconds))
	return b.String()
}

// closedCells are the closed-loop figures of a row: req/s, its range, the
// latencies, the server's and the client's CPU.
func closedCells(s summary) []string {
	return []string{benchkit.Thousands(s.RPS), benchkit.Thousands(s.RPSMin) + "–" + benchkit.Thousands(s.RPSMax),
		ms(s.P50), ms(s.P99), ms(s.P999), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU)}
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
