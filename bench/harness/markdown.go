package main

import (
	"fmt"
	"strings"
	"time"
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
	fmt.Fprintf(&b, "%s, %s\n\n", name, m.Date)
	fmt.Fprintf(&b, "- commit %s; nproc %d, %s; Linux %s; data directories under %s\n", m.Commit, m.NProc, m.CPUModel, m.Kernel, m.DataDir)
	fmt.Fprintf(&b, "- %s\n", unpinned)
	fmt.Fprintf(&b, "- each server in turn (%s), %d round(s), under the identical `loadgen -url http://127.0.0.1:PORT%s -c N -d %s -warmup %s -size 1KiB -kind stripe` (closed loop); figures are medians of the rounds\n",
		strings.Join(serverNames, ", "), res.Rounds, loadPath, res.Duration, res.Warmup)
	b.WriteString("- ceiling: bare fasthttp, reads the body, answers 201, stores nothing; gcref: the same plus one writev + fdatasync per batch of every waiting body; ankusa: `ankusa serve`, wal.type disk, default durable settings\n")
	b.WriteString("- CPU: the server's utime+stime over the measured window (100% = one core), client CPU the same for loadgen; RSS: its peak (VmHWM) over the window; hooks/fsync: hooks made durable / fdatasyncs over the window; fdatasync: its mean time over the window (the disk)\n\n")

	t := table{header: []string{"conns", "server", "req/s", "req/s min–max", "p50", "p99", "p99.9", "CPU", "client CPU", "RSS", "hooks/fsync", "fdatasync"}, left: map[int]bool{1: true}}
	for _, s := range res.Summary {
		t.add(fmt.Sprint(s.Conns), s.Server, thousands(s.RPS), thousands(s.RPSMin)+"–"+thousands(s.RPSMax),
			ms(s.P50), ms(s.P99), ms(s.P999), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU), fmt.Sprintf("%.0f MiB", s.RSS), hooks(s), fsyncAvg(s))
	}
	b.WriteString(t.String())
	b.WriteString("\n")
	t = table{header: []string{"conns", "ankusa / gcref", "ankusa / ceiling", "gcref / ceiling"}}
	for _, r := range res.Ratios {
		t.add(fmt.Sprint(r.Conns), fmt.Sprintf("%.2f", r.AnkusaGcref), fmt.Sprintf("%.2f", r.AnkusaCeiling), fmt.Sprintf("%.2f", r.GcrefCeiling))
	}
	b.WriteString(t.String())

	if res.OpenRate > 0 {
		fmt.Fprintf(&b, "\nOpen loop: `loadgen ... -c %d -rate %.0f` (%.0f%% of ankusa's median req/s at %d connections), latency from the scheduled send time, -d %s -warmup %s:\n\n",
			res.OpenConns, res.OpenRate, 100*o.openFrac, res.OpenConns, res.Duration, res.Warmup)
		t = table{header: []string{"server", "req/s", "p50", "p99", "p99.9", "max", "CPU", "client CPU", "hooks/fsync", "fdatasync"}, left: map[int]bool{0: true}}
		for _, s := range res.Open {
			t.add(s.Server, thousands(s.RPS), ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max), fmt.Sprintf("%.0f%%", s.CPU), fmt.Sprintf("%.0f%%", s.ClientCPU), hooks(s), fsyncAvg(s))
		}
		b.WriteString(t.String())
		fmt.Fprintf(&b, "\nankusa p99 / gcref p99 at the same rate: %.2f\n", res.OpenP99)
	}

	b.WriteString("\n")
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	if res.MinRatio > 0 {
		fmt.Fprintf(&b, "Guard: ankusa / gcref at least %.2f at every connection count.\n", res.MinRatio)
	}
	if len(res.Failures) == 0 {
		b.WriteString("Result: ok (every request answered 201)")
	} else {
		b.WriteString("Result: FAILED\n")
		for _, f := range res.Failures {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(f, "\n", "\n  "))
		}
	}
	fmt.Fprintf(&b, "\nRun time: %s\n", time.Duration(res.WallSeconds*float64(time.Second)).Round(time.Second))
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

// table is a markdown table with its columns padded to line up in a
// terminal too; columns are right-aligned unless in left.
type table struct {
	header []string
	left   map[int]bool
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) String() string {
	width := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if t.left[i] {
				fmt.Fprintf(&b, " %s%s |", c, pad)
			} else {
				fmt.Fprintf(&b, " %s%s |", pad, c)
			}
		}
		b.WriteString("\n")
	}
	line(t.header)
	b.WriteString("|")
	for i, w := range width {
		if t.left[i] {
			fmt.Fprintf(&b, ":%s|", strings.Repeat("-", w+1))
		} else {
			fmt.Fprintf(&b, "%s:|", strings.Repeat("-", w+1))
		}
	}
	b.WriteString("\n")
	for _, row := range t.rows {
		line(row)
	}
	return b.String()
}
