package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// spineMBs is the spine's ingest rate in raw MB/s: about 50,000 to 70,000
// hooks a second of 1 KiB on this machine (bench/RESULTS.md); the sealer
// must keep up with the upper end.
const spineMBs = 70.0

// report is everything one run measured.
type report struct {
	machine benchkit.Machine
	command string
	hooks   string // what was sealed
	seal    sealResult
	corpus  *corpusResult // nil: -corpus ""
	fetch   fetched
	busy    int // measurements started on a busy machine
	wall    time.Duration
	out     string // -out
}

func newReport(o *options, h *hooks) *report {
	n := int64(len(h.envs))
	return &report{
		machine: benchkit.DescribeMachine(o.tmp, ""),
		out:     o.out,
		command: "make bench-segment (" + strings.Join(os.Args, " ") + ")",
		hooks: fmt.Sprintf("%d hooks of tools/loadgen's payloads (-kind %s -size %s, each with its own token, signed), over %d tenants: bodies %.1f MB (mean %d B); "+
			"as envelope records %.1f MB (mean %d B, headers and envelope fields included)",
			n, o.kind, o.sizes, hookTenants, float64(h.bodies)/1e6, h.bodies/n, float64(h.raw)/1e6, h.raw/n),
	}
}

func (r *report) Publish(wall time.Duration) benchkit.Published {
	r.wall = wall
	return benchkit.Published{Markdown: "\n" + r.markdown(), Out: r.out}
}

// markdown renders the report; the same text is printed and written to
// -out.
func (r *report) markdown() string {
	var b strings.Builder
	b.WriteString(r.machine.Header(r.command))
	fmt.Fprintf(&b, "- %s\n", r.hooks)
	fmt.Fprintf(&b, "- sealing: %d round(s), the median; %s of records in %d blocks, %d segment(s)\n", r.seal.rounds, mb(r.seal.raw), r.seal.blocks, r.seal.segments)
	fmt.Fprintf(&b, "- fetch: Store.Fetch of %d random ids cold and warm, %d of them page-cache-cold\n", r.fetch.cold.N, r.fetch.disk.N)
	b.WriteString(benchkit.BusyNote(r.busy))
	b.WriteString("\n")
	t := benchkit.Table{Header: []string{"blocks", "compressor", "ratio", "seal MB/s (fsync)", "× 70 MB/s", "CPU at 70 MB/s", "fetch cold p50 / p99", "page-cache-cold p50 / p99", "warm p50 / p99"}, Left: map[int]bool{1: true}}
	t.Add("256 KiB", "klauspost SpeedFastest", fmt.Sprintf("%.2f", r.seal.ratio()), fmt.Sprintf("%.0f", r.seal.mbs), fmt.Sprintf("%.1f×", r.seal.mbs/spineMBs),
		fmt.Sprintf("%.0f%%", r.seal.cpuPerMB.Seconds()*spineMBs*100), lat(r.fetch.cold), lat(r.fetch.disk), lat(r.fetch.warm))
	b.WriteString(t.String())
	if c := r.corpus; c != nil {
		fmt.Fprintf(&b, "\nCompression on the checked-in corpus (%d hooks, %s of records): ratio = record bytes / segment file bytes (blocks, dictionary, index and footer). Held-out: the first %d hooks sealed as the segment before, not counted; the rest sealed as the next segment, as the store does.\n\n", c.hooks, mb(c.raw), c.warm)
		ct := benchkit.Table{Header: []string{"hooks", "segment", "ratio", "seal CPU per MB"}, Left: map[int]bool{0: true, 1: true}}
		row := func(what, how string, s sealed) {
			ct.Add(what, how, fmt.Sprintf("%.2f", float64(s.raw)/float64(max(1, s.file))), dur(s.cpu/time.Duration(max(1, s.raw/1e6))))
		}
		row("all", "version 1, no dictionary", c.all)
		row("held-out", "version 1, no dictionary", c.plain)
		row("held-out", "version 2, the segment before's last records as dictionary (default)", c.dict)
		b.WriteString(ct.String())
	}
	b.WriteString("\n" + benchkit.RunTime(r.wall.Seconds()) + "\n")
	return b.String()
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func lat(l benchkit.Latency) string {
	if l.N == 0 {
		return "–"
	}
	return dur(l.P50) + " / " + dur(l.P99)
}

func dur(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}
