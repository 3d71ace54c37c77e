// Package benchkit holds what the benchmark commands under bench/ share:
// their main (Main) and flags, the markdown table and report lines, the
// machine a run was made on, loadgen runs and their -json result
// (tools/loadgen/result), server processes (the appliance on a config,
// the reference servers and their handler), the wait for a quiet machine,
// and the CPU and memory figures Linux keeps in /proc. It measures
// nothing itself.
//
// It imports of this module only envelope (the reference servers' ids),
// internal/child, internal/hostinfo and tools/loadgen/result, and only
// bench/ may import it (it is internal to bench/): no product package
// depends on the benchmarks.
package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/hostinfo"
)

// Table is a markdown table with its columns padded to line up in a
// terminal too; columns are right-aligned unless in Left.
type Table struct {
	Header []string
	Left   map[int]bool
	rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *Table) String() string {
	width := make([]int, len(t.Header))
	for _, row := range append([][]string{t.Header}, t.rows...) {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if t.Left[i] {
				fmt.Fprintf(&b, " %s%s |", c, pad)
			} else {
				fmt.Fprintf(&b, " %s%s |", pad, c)
			}
		}
		b.WriteString("\n")
	}
	line(t.Header)
	b.WriteString("|")
	for i, w := range width {
		if t.Left[i] {
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

// Thousands formats v rounded to an integer with a comma between each
// group of three digits ("-1,234,567").
func Thousands(v float64) string {
	digits, neg := strings.CutPrefix(strconv.FormatFloat(v, 'f', 0, 64), "-")
	for i := len(digits) - 3; i > 0; i -= 3 {
		digits = digits[:i] + "," + digits[i:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// RunTime is the "Run time: ..." line of a run that took wallSeconds,
// without its newline.
func RunTime(wallSeconds float64) string {
	return "Run time: " + time.Duration(wallSeconds*float64(time.Second)).Round(time.Second).String()
}

// Footer is the end of a report: "Result: ok (ok)" when nothing failed,
// else "Result: FAILED" and an item for each failure and a blank line;
// then the RunTime line.
func Footer(ok string, failures []string, wallSeconds float64) string {
	if len(failures) == 0 {
		return "Result: ok (" + ok + ")\n" + RunTime(wallSeconds) + "\n"
	}
	var b strings.Builder
	b.WriteString("Result: FAILED\n")
	for _, f := range failures {
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(f, "\n", "\n  "))
	}
	return b.String() + "\n" + RunTime(wallSeconds) + "\n"
}

// Prefixed is each of ss after p and ": ".
func Prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + ": " + s
	}
	return out
}

// Median is the median of v (the mean of the middle two for an even
// count), 0 for none.
func Median[T int64 | float64](v []T) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return (float64(s[n/2-1]) + float64(s[n/2])) / 2
}

// Latency is a sample of durations: its size and percentiles (of n sorted
// values, quantile q is the one at index ⌊q·n⌋).
type Latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Percentiles is the Latency of d, which it leaves in its order.
func Percentiles(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	s := slices.Sorted(slices.Values(d))
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Latency{N: len(s), P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}

// WriteReport writes a report's markdown to out and its figures, v, as
// indented JSON to jsonOut; an empty name is not written.
func WriteReport(out, jsonOut, md string, v any) error {
	if out != "" {
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("cannot write -out %q: %w", out, err)
		}
	}
	if jsonOut != "" {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("cannot encode the results: %w", err)
		}
		if err := os.WriteFile(jsonOut, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("cannot write -json %q: %w", jsonOut, err)
		}
	}
	return nil
}

// Published is a bench command's report: its markdown, its figures, its
// failures, and the files to write them to.
type Published struct {
	Markdown, Out, JSONOut string
	Figures                any
	Failures               []string
}

// Report is a bench command's finished measurement.
type Report interface {
	// Publish is the report of a run that took wall.
	Publish(wall time.Duration) Published
}

// Main is a bench command's main: parse reads its command line (an error
// exits 2), measure runs under a context that SIGINT and SIGTERM cancel
// (an error exits 1), and its report is printed and written to Out, its
// figures as JSON to JSONOut (see WriteReport). It exits 1 when they
// cannot be written or the report has failures, else 0.
func Main[O any, R Report](prog string, parse func(args []string) (O, error), measure func(context.Context, O) (R, error)) {
	fail := func(code int, err error) {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(code)
	}
	o, err := parse(os.Args[1:])
	if err != nil {
		fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	began := time.Now()
	r, err := measure(ctx, o)
	stop()
	if err != nil {
		fail(1, err)
	}
	p := r.Publish(time.Since(began))
	fmt.Print(p.Markdown)
	if err := WriteReport(p.Out, p.JSONOut, p.Markdown, p.Figures); err != nil {
		fail(1, err)
	}
	if len(p.Failures) > 0 {
		os.Exit(1)
	}
}

// Unset runs each function of defaults whose flag was not given on fs's
// command line: the defaults of a mode such as -quick, which flags given
// explicitly override.
func Unset(fs *flag.FlagSet, defaults map[string]func()) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, apply := range defaults {
		if !set[name] {
			apply()
		}
	}
}

// Parse parses args into fs and refuses any argument after the flags.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// Ints is a flag of comma-separated positive integers.
type Ints []int

func (v *Ints) String() string {
	return strings.ReplaceAll(strings.Trim(fmt.Sprint([]int(*v)), "[]"), " ", ",")
}

func (v *Ints) Set(list string) error {
	*v = nil
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return errors.New("want positive integers separated by commas")
		}
		*v = append(*v, n)
	}
	return nil
}

// Machine describes where and on what a run was made.
type Machine struct {
	Date     string `json:"date"`
	Commit   string `json:"commit"`
	NProc    int    `json:"nproc"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	DataDir  string `json:"data_dir_parent"`
	Note     string `json:"note"`
}

// DescribeMachine describes this machine now; tmp is the parent of the
// run's data directories ("": the system temp dir), note what the report
// says about how the run shared the machine.
func DescribeMachine(tmp, note string) Machine {
	if tmp == "" {
		tmp = os.TempDir()
	}
	return Machine{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Commit:   hostinfo.Commit(),
		NProc:    runtime.NumCPU(),
		CPUModel: hostinfo.CPUModel(),
		Kernel:   hostinfo.Kernel(),
		DataDir:  tmp,
		Note:     note,
	}
}

// Header is a report's first lines: the command and the date, a blank
// line, and an item saying where it ran.
func (m Machine) Header(command string) string {
	return fmt.Sprintf("%s, %s\n\n- commit %s; nproc %d, %s; Linux %s; data directories under %s\n",
		command, m.Date, m.Commit, m.NProc, m.CPUModel, m.Kernel, m.DataDir)
}
