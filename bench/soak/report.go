package main

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// Report is a finished soak: the figures (the -json output) and where the
// markdown goes.
type Report struct {
	Figures  Figures
	Out      string
	JSONOut  string
	interval time.Duration
}

// Figures is the -json output.
type Figures struct {
	DurationS    float64        `json:"duration_s"`
	Rate         float64        `json:"rate"`
	Tenants      int            `json:"tenants"`
	Sources      int            `json:"sources"`
	Seed         uint64         `json:"seed"`
	SetupS       float64        `json:"setup_s"`
	SoakCPU      float64        `json:"soak_cpu_cores"` // the soak's own process (load, sinks, checker), on average
	RabbitBootS  []float64      `json:"rabbitmq_boot_s"`
	Acknowledged int            `json:"acknowledged"`
	NoIDAnswers  int            `json:"created_without_id"`
	FaultsByKind map[string]int `json:"faults_by_kind"`
	Faults       []Fault        `json:"faults"`
	Events       []Event        `json:"events"`
	Intervals    []Answers      `json:"intervals"`
	IntervalS    float64        `json:"interval_s"`
	Check        Check          `json:"check"`
	Failures     []string       `json:"failures"`
}

func (s *soak) report(acked map[string]ack, bad []string, chk Check, wall time.Duration) *Report {
	faults, events, findings, buckets := s.tl.snapshot()
	f := Figures{
		DurationS: wall.Seconds(), Rate: s.o.Rate, Tenants: s.o.Tenants, Sources: s.o.Sources, Seed: s.o.Seed,
		SetupS: s.setup.Seconds(), Acknowledged: len(acked), NoIDAnswers: len(bad),
		FaultsByKind: map[string]int{}, Faults: faults, Events: events, Intervals: buckets,
		IntervalS: s.o.Interval.Seconds(), Check: chk, Failures: append([]string{}, findings...),
	}
	if cpu, err := ownCPU(); err == nil {
		f.SoakCPU = cpu.Seconds() / wall.Seconds()
	}
	for _, b := range s.rabbit.bootTimes() {
		f.RabbitBootS = append(f.RabbitBootS, b.Seconds())
	}
	for _, x := range faults {
		f.FaultsByKind[x.Kind]++
	}
	if len(bad) > 0 {
		f.Failures = append(f.Failures, fmt.Sprintf("%d answers 201 without an event id, e.g. %q", len(bad), bad[0]))
	}
	if len(acked) == 0 {
		f.Failures = append(f.Failures, "no hook was acknowledged")
	}
	f.Failures = append(f.Failures, checkFailures(chk)...)
	return &Report{Figures: f, Out: s.o.Out, JSONOut: s.o.JSONOut, interval: s.o.Interval}
}

// checkFailures are the comparison's failures: any missing or differing
// hook, per sink.
func checkFailures(c Check) []string {
	var out []string
	for _, sc := range c.Sinks {
		if sc.Missing > 0 || sc.Differing > 0 {
			out = append(out, fmt.Sprintf("%s: %d acknowledged hooks missing, %d differing (%s)",
				sc.Name, sc.Missing, sc.Differing, strings.Join(sc.Examples, ", ")))
		}
	}
	return out
}

// Publish is the report's markdown and figures.
func (r *Report) Publish(wall time.Duration) benchkit.Published {
	f := r.Figures
	var b strings.Builder
	fmt.Fprintf(&b, "## Chaos soak\n\n%s of open-loop load at %g hooks/s over %d tenants and %d sources; setup %.1fs (private RabbitMQ boots: %s); the soak's own CPU %.2f cores; seed %d.\n\n",
		time.Duration(f.DurationS*float64(time.Second)).Round(time.Second), f.Rate, f.Tenants, f.Sources, f.SetupS, secondsList(f.RabbitBootS), f.SoakCPU, f.Seed)
	r.timeline(&b)
	r.faultList(&b)
	r.summary(&b)
	b.WriteString(benchkit.Footer("every acknowledged hook reached both sinks and the archive, byte for byte", f.Failures, wall.Seconds()))
	return benchkit.Published{Markdown: b.String(), Out: r.Out, JSONOut: r.JSONOut, Figures: f, Failures: f.Failures}
}

// timeline is one row per interval: the answers to the requests due in
// it, and the faults and events that began in it.
func (r *Report) timeline(b *strings.Builder) {
	f := r.Figures
	header := []string{"t (s)", "sent", "201", "429", "503", "other", "errors", "unsent"}
	for _, c := range f.Check.Sinks {
		if c.IntervalMaxDelayS != nil {
			header = append(header, c.Name+" max delay (s)")
		}
	}
	header = append(header, "faults and events")
	t := &benchkit.Table{Header: header, Left: map[int]bool{len(header) - 1: true}}
	for i, a := range f.Intervals {
		from, to := float64(i)*f.IntervalS, float64(i+1)*f.IntervalS
		var notes []string
		for _, x := range f.Faults {
			if x.AtS >= from && x.AtS < to {
				notes = append(notes, fmt.Sprintf("**%s** %.1fs", x.Kind, x.DurationS))
			}
		}
		for _, e := range f.Events {
			if e.AtS >= from && e.AtS < to {
				mark := ""
				if e.Finding {
					mark = "FINDING: "
				}
				notes = append(notes, mark+e.Text)
			}
		}
		row := []string{fmt.Sprintf("%.0f", from), n(a.Sent), n(a.Created), n(a.Limited), n(a.Overload), n(a.Other), n(a.Transport), n(a.Unsent)}
		for _, c := range f.Check.Sinks {
			if c.IntervalMaxDelayS == nil {
				continue
			}
			d := "-"
			if i < len(c.IntervalMaxDelayS) {
				d = fmt.Sprintf("%.1f", c.IntervalMaxDelayS[i])
			}
			row = append(row, d)
		}
		t.Add(append(row, strings.Join(notes, "; "))...)
	}
	b.WriteString("### Timeline\n\nPer interval: the answers to the requests due in it, the longest time from a 201 given in it to the first delivery per sink, and the faults and events that began in the interval.\n\n")
	b.WriteString(t.String())
	b.WriteString("\n")
}

func (r *Report) faultList(b *strings.Builder) {
	f := r.Figures
	t := &benchkit.Table{Header: []string{"at (s)", "fault", "duration (s)", "note"}, Left: map[int]bool{1: true, 3: true}}
	for _, x := range f.Faults {
		t.Add(fmt.Sprintf("%.1f", x.AtS), x.Kind, fmt.Sprintf("%.1f", x.DurationS), x.Note)
	}
	b.WriteString("### Faults\n\n")
	b.WriteString(t.String())
	kinds := make([]string, 0, len(f.FaultsByKind))
	for k := range f.FaultsByKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var by []string
	for _, k := range kinds {
		by = append(by, fmt.Sprintf("%s %d", k, f.FaultsByKind[k]))
	}
	fmt.Fprintf(b, "\nBy kind: %s.\n\n", strings.Join(by, ", "))
}

func (r *Report) summary(b *strings.Builder) {
	f := r.Figures
	fmt.Fprintf(b, "### Summary\n\n%s hooks acknowledged (201). Drain after the load: %.1fs (%s).\n\n",
		n(int64(f.Acknowledged)), f.Check.DrainS, map[bool]string{true: "everything arrived", false: "bound reached"}[f.Check.Drained])
	t := &benchkit.Table{Header: []string{"sink", "missing", "differing", "received", "deliveries", "duplicated", "dup rate", "unacked", "p99 delay (s)", "max delay (s)"}}
	for _, c := range f.Check.Sinks {
		delay, maxDelay := "-", "-"
		if c.Name != "archive" {
			delay, maxDelay = fmt.Sprintf("%.2f", c.P99DelayS), fmt.Sprintf("%.2f", c.MaxDelayS)
		}
		t.Add(c.Name, n(int64(c.Missing)), n(int64(c.Differing)), n(int64(c.Received)), n(c.Deliveries), n(int64(c.Duplicated)),
			fmt.Sprintf("%.2f%%", 100*c.DuplicateRate()), n(int64(c.Unacked)), delay, maxDelay)
	}
	b.WriteString(t.String())
	b.WriteString("\nunacked: hooks a sink received that no 201 acknowledged (committed, the answer lost to a kill or a timeout). The archive's duplicates are hooks found in two segment objects.\n\n")
}

func n(v int64) string { return fmt.Sprint(v) }

// ownCPU is the CPU time this process has used (user and system).
func ownCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func secondsList(v []float64) string {
	var out []string
	for _, x := range v {
		out = append(out, fmt.Sprintf("%.1fs", x))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
