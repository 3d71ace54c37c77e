package benchkit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/result"
)

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       float64
		bad        bool
	}{
		{"plain", "1234 (ankusa) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 8 0 100 0 0", 3.80, false},
		{"spaces and parens in comm", "1234 (a b) c) R 1 1234 1234 0 -1 0 0 0 0 0 7 3 0 0", 0.10, false},
		{"truncated", "1234 (x) S 1 2 3", 0, true},
		{"no comm", "garbage", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStatCPU(tc.stat)
			if (err != nil) != tc.bad || fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", tc.want) {
				t.Errorf("ParseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	got, err := ParseProcStat("cpu  100 10 50 1000 40 5 6 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
	if err != nil || got != 1.78 {
		t.Errorf("ParseProcStat = %v, %v; want 1.78", got, err)
	}
	if _, err := ParseProcStat("intr 1 2 3"); err == nil {
		t.Error("ParseProcStat without a cpu line: no error")
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tgcref\nVmPeak:\t  900 kB\nVmHWM:\t   20480 kB\nVmRSS:\t 100 kB\n"
	if got, err := ParseStatus(status, "VmHWM"); err != nil || got != 20480*1024 {
		t.Errorf("ParseStatus VmHWM = %v, %v", got, err)
	}
	if got, err := ParseStatus(status, "VmRSS"); err != nil || got != 100*1024 {
		t.Errorf("ParseStatus VmRSS = %v, %v", got, err)
	}
	if _, err := ParseStatus("Name:\tx\n", "VmHWM"); err == nil {
		t.Error("ParseStatus without VmHWM: no error")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestMedianInt(t *testing.T) {
	if got := Median([]int64{7, 1, 4, 2}); got != 3 {
		t.Errorf("Median of int64s = %v, want 3", got)
	}
}

func TestMedianKeepsOrder(t *testing.T) {
	v := []float64{3, 1, 2}
	if Median(v) != 2 || v[0] != 3 || v[1] != 1 || v[2] != 2 {
		t.Errorf("Median reordered its input: %v", v)
	}
}

func TestPercentiles(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3}
	if got, want := Percentiles(d), (Latency{N: 5, P50: 3, P99: 5, Max: 5}); got != want || d[0] != 5 {
		t.Errorf("Percentiles = %+v (input now %v), want %+v", got, d, want)
	}
	if got := Percentiles(nil); got != (Latency{}) {
		t.Errorf("Percentiles(nil) = %+v", got)
	}
}

func TestParentPID(t *testing.T) {
	if got := ParentPID(os.Getpid()); got != os.Getppid() {
		t.Errorf("ParentPID(self) = %d, want %d", got, os.Getppid())
	}
	if got := ParentPID(-1); got != 0 {
		t.Errorf("ParentPID(-1) = %d, want 0", got)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 123456.7: "123,457", 1234567: "1,234,567", -4200: "-4,200", -999: "-999", -0.2: "-0", 100000: "100,000"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestTable(t *testing.T) {
	tb := Table{Header: []string{"name", "req/s", "p99"}, Left: map[int]bool{0: true}}
	tb.Add("ceiling", "127,918", "7.95 ms")
	tb.Add("gcref", "88,380", "5.40 ms")
	want := "" +
		"| name    |   req/s |     p99 |\n" +
		"|:--------|--------:|--------:|\n" +
		"| ceiling | 127,918 | 7.95 ms |\n" +
		"| gcref   |  88,380 | 5.40 ms |\n"
	if got := tb.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	// Widths count runes, not bytes.
	tb = Table{Header: []string{"min–max"}}
	tb.Add("1–2")
	if got, want := tb.String(), "| min–max |\n|--------:|\n|     1–2 |\n"; got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestFooter(t *testing.T) {
	if got, want := Footer("all good", nil, 37.6), "Result: ok (all good)\nRun time: 38s\n"; got != want {
		t.Errorf("Footer ok = %q, want %q", got, want)
	}
	got := Footer("all good", []string{"one", "two\nlines"}, 61)
	want := "Result: FAILED\n- one\n- two\n  lines\n\nRun time: 1m1s\n"
	if got != want {
		t.Errorf("Footer failed = %q, want %q", got, want)
	}
}

func TestMachine(t *testing.T) {
	m := Machine{Date: "2026-01-02 03:04 UTC", Commit: "abc1234", NProc: 2, CPUModel: "AMD EPYC", Kernel: "6.1", DataDir: "/tmp"}
	want := "make bench, 2026-01-02 03:04 UTC\n\n- commit abc1234; nproc 2, AMD EPYC; Linux 6.1; data directories under /tmp\n"
	if got := m.Header("make bench"); got != want {
		t.Errorf("Header = %q, want %q", got, want)
	}
	if d := DescribeMachine("", "n"); d.DataDir != os.TempDir() || d.Note != "n" || d.NProc < 1 {
		t.Errorf("DescribeMachine = %+v", d)
	}
}

func TestUnset(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	a := fs.Int("a", 1, "")
	b := fs.Int("b", 1, "")
	if err := fs.Parse([]string{"-a", "5"}); err != nil {
		t.Fatal(err)
	}
	Unset(fs, map[string]func(){"a": func() { *a = 9 }, "b": func() { *b = 9 }})
	if *a != 5 || *b != 9 {
		t.Errorf("a %d b %d, want 5 (given) and 9 (default)", *a, *b)
	}
}

func TestParseInts(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	v := []int{1, 2}
	fs.Var((*Ints)(&v), "n", "")
	if got := fs.Lookup("n").DefValue; got != "1,2" {
		t.Errorf("default %q", got)
	}
	if err := Parse(fs, []string{"-n", "64, 256"}); err != nil || len(v) != 2 || v[0] != 64 || v[1] != 256 {
		t.Errorf("Parse = %v, %v", v, err)
	}
	for _, bad := range [][]string{{"-n", "64,x"}, {"-n", "0"}, {"-n", ""}, {"extra"}} {
		if err := Parse(fs, bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	md, js := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.json")
	if err := WriteReport(md, js, "# r\n", map[string]int{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(md); string(b) != "# r\n" {
		t.Errorf("markdown %q", b)
	}
	if b, _ := os.ReadFile(js); string(b) != "{\n  \"x\": 1\n}\n" {
		t.Errorf("json %q", b)
	}
	if err := WriteReport(filepath.Join(dir, "no", "r.md"), "", "", nil); err == nil || !strings.Contains(err.Error(), "cannot write -out") {
		t.Errorf("unwritable -out: %v", err)
	}
}

// TestLoadgen runs a stand-in for loadgen: the last JSON line is the
// result, and a non-zero exit beside a result is exitErr.
func TestLoadgen(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho starting\necho '{\"mode\":\"closed\",\"requests\":10,\"status\":{\"201\":9,\"503\":1},\"latency_us\":{\"p99\":120}}'\necho oops >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "loadgen"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := StartLoadgen(context.Background(), bin, []string{"-json"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r, raw, exited, err := l.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 10 || r.LatencyUs.P99 != 120 || !strings.HasPrefix(string(raw), "{") {
		t.Errorf("result %+v, raw %s", r, raw)
	}
	if len(exited) != 1 || !strings.Contains(exited[0], "exit status 1: oops") {
		t.Errorf("exited %q, want the exit and stderr", exited)
	}
	if got := fmt.Sprint(Prefixed("x", LoadProblems(&r))); got != "[x: 1 answers 503]" {
		t.Errorf("problems %s", got)
	}

	if err := os.WriteFile(filepath.Join(bin, "loadgen"), []byte("#!/bin/sh\necho no json\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if l, err = StartLoadgen(context.Background(), bin, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := l.Wait(); err == nil || !strings.Contains(err.Error(), "no JSON result") {
		t.Errorf("no JSON: %v", err)
	}
	if _, err := StartLoadgen(context.Background(), t.TempDir(), nil, time.Minute); err == nil {
		t.Error("StartLoadgen without a loadgen: no error")
	}
}

// TestLoadProblems: every answer but 201 (sorted by code), every failed
// request and an empty run are problems.
func TestLoadProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		load result.Summary
		want []string
	}{
		{"clean", result.Summary{Status: map[string]int64{"201": 10}}, nil},
		{"503", result.Summary{Status: map[string]int64{"201": 10, "503": 2}}, []string{"2 answers 503"}},
		{"errors", result.Summary{Status: map[string]int64{"201": 10}, Errors: 3, ErrorKinds: map[string]int64{"timeout": 3}}, []string{`3 failed requests {"timeout":3}`}},
		{"empty", result.Summary{}, []string{"no 201 answers"}},
		{"sorted", result.Summary{Status: map[string]int64{"503": 1, "201": 10, "429": 2}}, []string{"2 answers 429", "1 answers 503"}},
	} {
		if got := LoadProblems(&tc.load); !slices.Equal(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestServerStart(t *testing.T) {
	s := &Server{Name: "sleeper"}
	tries := 0
	took, err := s.Start(context.Background(), exec.Command("sleep", "30"), 5*time.Second, func() error {
		if tries++; tries < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || !s.Alive() || s.Pid() <= 0 || took < 10*time.Millisecond {
		t.Fatalf("Start: %v after %s, alive %v", err, took, s.Alive())
	}
	// sleep dies of SIGTERM: not a clean exit.
	if err := s.Stop(5 * time.Second); err == nil || !strings.Contains(err.Error(), "sleeper exited with") {
		t.Errorf("Stop: %v", err)
	}
	if s.Alive() || s.WaitErr() == nil {
		t.Error("stopped process still alive or exited 0")
	}

	s = &Server{Name: "quitter"}
	_, err = s.Start(context.Background(), exec.Command("sh", "-c", "echo bye; exit 3"), 5*time.Second, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "quitter exited before it was ready") || !strings.Contains(err.Error(), "bye") {
		t.Errorf("Start of a process that exits: %v", err)
	}

	s = &Server{Name: "slow"}
	_, err = s.Start(context.Background(), exec.Command("sleep", "30"), 100*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "slow not ready after 100ms: never") || s.Alive() {
		t.Errorf("Start timeout: %v, alive %v", err, s.Alive())
	}

	s = &Server{Name: "missing"}
	if _, err := s.Start(context.Background(), exec.Command(filepath.Join(t.TempDir(), "missing")), time.Second, nil); err == nil || !strings.Contains(err.Error(), "make bench-build") {
		t.Errorf("Start of a missing binary: %v", err)
	}
	if err := s.Shut(time.Second); err != nil {
		t.Errorf("Shut of a server that never started: %v", err)
	}
}

func TestSettle(t *testing.T) {
	// Other work keeps the machine busy, whatever its CPU, until limit.
	q := Quiet{CPU: 1e9, Others: func() []string { return []string{"1 go test"} }}
	quiet, waited, err := q.Settle(context.Background(), 0)
	if err != nil || quiet || waited < 500*time.Millisecond {
		t.Errorf("Settle with other work = %v, %v, %v; want not quiet after half a second", quiet, waited, err)
	}
	if quiet, _, err := (Quiet{CPU: 1e9}).Settle(context.Background(), time.Minute); err != nil || !quiet {
		t.Errorf("Settle = %v, %v; want quiet", quiet, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := (Quiet{CPU: 0}).Settle(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Settle with a done context: %v", err)
	}
}

func TestBusyNote(t *testing.T) {
	if got := BusyNote(0); got != "" {
		t.Errorf("BusyNote(0) = %q", got)
	}
	if got := BusyNote(2); !strings.HasPrefix(got, "- **2 measurements started while the machine stayed busy") || !strings.HasSuffix(got, "**\n") {
		t.Errorf("BusyNote(2) = %q", got)
	}
}

func TestMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# HELP a_total A.\n# TYPE a_total counter\na_total 12\nb{state=\"x y\"} 1.5\nc NaNish\n")
	}))
	defer srv.Close()
	got := map[string]float64{}
	if err := Metrics(srv.Client(), srv.URL+"/metrics", func(name string, v float64) { got[name] = v }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a_total"] != 12 || got[`b{state="x y"}`] != 1.5 {
		t.Errorf("samples %v", got)
	}
	if err := Metrics(srv.Client(), srv.URL+"/nothing", func(string, float64) {}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	if err := GetOK(srv.Client(), srv.URL+"/metrics"); err != nil {
		t.Errorf("GetOK: %v", err)
	}
	if err := GetOK(srv.Client(), srv.URL+"/nothing"); err == nil {
		t.Error("GetOK of a 404: no error")
	}
}

func TestNewServer(t *testing.T) {
	parent := t.TempDir()
	s, err := NewServer("x", parent, 2)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(s.Dir) != parent || len(s.Addrs) != 2 || s.Addrs[0] == s.Addrs[1] || !strings.HasPrefix(s.Addrs[0], "127.0.0.1:") {
		t.Errorf("NewServer = %q, %q", s.Dir, s.Addrs)
	}
	if err := s.Shut(time.Second); err != nil {
		t.Errorf("Shut of a server never started: %v", err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("Shut left %s: %v", s.Dir, err)
	}
	if _, err := NewServer("x", filepath.Join(parent, "missing"), 1); err == nil || !strings.Contains(err.Error(), "set -tmp") {
		t.Errorf("NewServer under a missing parent: %v", err)
	}
}

// TestOthers: this process, its parent, its children and searches for the
// pattern are not other work; Watch keeps the first other work it sees.
func TestOthers(t *testing.T) {
	child := exec.Command("sleep", "31.4159")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	if got := Others(`sleep 31\.4159`)(); len(got) != 0 {
		t.Errorf("Others lists this process's child: %q", got)
	}
	parent, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.QuoteMeta(strings.TrimSpace(strings.ReplaceAll(string(parent), "\x00", " ")))
	if got := Others(pattern + `|benchkit\.test`)(); len(got) != 0 {
		t.Errorf("Others lists this process or its parent (%s): %q", pattern, got)
	}
	if !searching("/usr/bin/pgrep -af loadgen") || searching("loadgen -url x") {
		t.Error("searching: want pgrep and not loadgen")
	}
	calls := 0
	w := Watch(func() []string {
		if calls++; calls < 2 {
			return nil
		}
		return []string{fmt.Sprintf("%d go test", calls)}
	})
	time.Sleep(1600 * time.Millisecond)
	if got := w.End(); got != "2 go test" {
		t.Errorf("Watch = %q, want the first other work seen", got)
	}
}
