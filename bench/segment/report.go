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
	date, machine, commit, command string
	corpus                         string
	rows                           []row
	ingest                         []ingestRow
	busy                           int // measurements started on a busy machine
	notes                          []string
}

type ingestRow struct {
	name string
	res  ingested
}

func newReport(h *hooks, evs []corpusEvent, corpus string) *report {
	stripe := 0
	for _, ev := range evs {
		if ev.Source == "stripe" {
			stripe++
		}
	}
	m := benchkit.DescribeMachine("", "")
	return &report{
		date:    m.Date,
		machine: fmt.Sprintf("nproc %d, %s, Linux %s", m.NProc, m.CPUModel, m.Kernel),
		commit:  m.Commit,
		command: "make bench-segment (" + strings.Join(os.Args, " ") + ")",
		corpus: fmt.Sprintf("%s: %d events (%d Stripe-like, %d GitHub-like), bodies %.1f MB (mean %d B); "+
			"as envelope records %.1f MB (mean %d B, headers and envelope fields included)",
			corpus, len(evs), stripe, len(evs)-stripe, float64(h.bodies)/1e6, h.bodies/int64(len(evs)),
			float64(h.raw)/1e6, h.raw/int64(len(evs))),
	}
}

// markdown renders the report; the same text is printed and written to
// -out.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Date: %s. Machine: %s. Commit: %s.\nCommand: `%s`.\nCorpus: %s.\n", r.date, r.machine, r.commit, r.command, r.corpus)
	if r.busy > 0 {
		fmt.Fprintf(&b, "**%d measurements started while the CPUs stayed busy with other work for %s: their speeds and latencies are not reliable.**\n", r.busy, quietTimeout)
	}
	b.WriteString("\n")
	b.WriteString("| blocks | compressor | hooks | ratio | seal MB/s (fsync) | × 70 MB/s | CPU at 70 MB/s | fetch cold p50 / p99 | page-cache-cold p50 / p99 | warm p50 / p99 |\n")
	b.WriteString("|---:|:---|:---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.rows {
		cold := lat(x.fetch.cold)
		if x.fileCold.n > 0 {
			cold = lat(x.fileCold) + " †"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			size(x.blocks), x.codec, x.hooks, num(x.ratio(), "%.2f"), num(x.sealMBs, "%.0f"), num(x.sealMBs/spineMBs, "%.1f×"),
			cpuShare(x.cpuPerMB), cold, lat(x.fetch.disk), lat(x.fetch.warm))
	}
	b.WriteString("\n† without the store: index search, block read and decompression, record search and decode " +
		"(the store cannot read dictionary blocks); the store adds a catalogue lookup.\n")
	for _, n := range r.notes {
		b.WriteString("\n" + n + "\n")
	}
	if len(r.ingest) > 0 {
		b.WriteString("\n| full path | hooks | raw MB | commits answered in | hooks/s | raw MB/s | CPU (cores) | hooks per fdatasync | mean fdatasync | fetch of the last hook after the last answer ‡ | segments sealed |\n")
		b.WriteString("|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, x := range r.ingest {
			lag := "–"
			if x.res.catchUp > 0 {
				lag = dur(x.res.catchUp)
			}
			secs := x.res.commit.Seconds()
			perSync, meanSync := "–", "–"
			if x.res.syncs > 0 {
				perSync = fmt.Sprintf("%.1f", float64(x.res.hooks)/x.res.syncs)
				meanSync = dur(time.Duration(x.res.syncTime / x.res.syncs * 1e9))
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %.0f | %.1f | %.2f | %s | %s | %s | %d |\n", x.name, x.res.hooks, float64(x.res.raw)/1e6,
				x.res.commit.Round(time.Millisecond), float64(x.res.hooks)/secs, float64(x.res.raw)/1e6/secs,
				x.res.cpu.Seconds()/secs, perSync, meanSync, lag, x.res.segments)
		}
	}
	if len(r.ingest) > 0 {
		b.WriteString("\n‡ Store.Fetch first moves what the sealer has not read yet into the open segment: " +
			"it takes about the sealer's backlog divided by its rate.\n")
	}
	return b.String()
}

func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

func num(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

// cpuShare is the share of one core the sealer needs at spineMBs.
func cpuShare(perMB time.Duration) string {
	if perMB == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", perMB.Seconds()*spineMBs*100)
}

func lat(l latency) string {
	if l.n == 0 {
		return "–"
	}
	return dur(l.p50) + " / " + dur(l.p99)
}

func dur(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}
