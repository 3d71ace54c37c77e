package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 123456.7: "123,457", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.rounds != 3 || !reflect.DeepEqual(o.conns, []int{64, 256}) || o.duration != 10*time.Second || o.minRatio != 0 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-quick"})
	if err != nil || o.rounds != 1 || !reflect.DeepEqual(o.conns, []int{256}) || o.duration != 3*time.Second || o.warmup != time.Second || o.minRatio != 0.5 {
		t.Errorf("-quick: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-quick", "-d", "5s", "-min-ratio", "0.8"})
	if err != nil || o.duration != 5*time.Second || o.minRatio != 0.8 || o.rounds != 1 {
		t.Errorf("-quick with explicit flags: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-conns", "64,x"}, {"-rounds", "0"}, {"-open-frac", "2"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q): no error", bad)
		}
	}
}

func TestWalCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "ankusa_wal_fsync_seconds_sum 1.5\nankusa_wal_records_total 12345\nankusa_wal_batches_total 678\n")
	}))
	defer srv.Close()
	c, err := walCounters(srv.URL)
	if err != nil || c != (counters{records: 12345, fsyncs: 678, fsyncSeconds: 1.5}) {
		t.Errorf("walCounters = %+v, %v", c, err)
	}
}

// TestCheck: every answer but 201, every failed request and an empty run
// are problems.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		load   benchkit.LoadResult
		wantIn []string
	}{
		{"clean", benchkit.LoadResult{Status: map[string]int64{"201": 10}}, nil},
		{"503", benchkit.LoadResult{Status: map[string]int64{"201": 10, "503": 2}}, []string{"2 answers 503"}},
		{"errors", benchkit.LoadResult{Status: map[string]int64{"201": 10}, Errors: 3, ErrorKinds: map[string]int64{"timeout": 3}}, []string{`3 failed requests {"timeout":3}`}},
		{"empty", benchkit.LoadResult{}, []string{"no 201 answers"}},
		{"sorted", benchkit.LoadResult{Status: map[string]int64{"503": 1, "201": 10, "429": 2}}, []string{"2 answers 429", "1 answers 503"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runResult{Load: loadResult{LoadResult: tc.load}}
			r.check()
			if len(r.Problems) != len(tc.wantIn) {
				t.Fatalf("problems %q, want %q", r.Problems, tc.wantIn)
			}
			for i, w := range tc.wantIn {
				if !strings.Contains(r.Problems[i], w) {
					t.Errorf("problem %q, want %q", r.Problems[i], w)
				}
			}
		})
	}
}

// TestJudge: the guard fails a ratio under -min-ratio, and medians and
// ratios come from the right runs.
func TestJudge(t *testing.T) {
	o := &options{conns: []int{256}, minRatio: 0.5}
	res := &results{Failures: []string{}}
	for i, rps := range map[string][]float64{ceiling: {100, 120, 110}, gcref: {70, 80, 75}, ankusa: {30, 35, 40}} {
		for round, v := range rps {
			r := &runResult{Server: i, Mode: "closed", Round: round + 1, Conns: 256}
			r.Load.ThroughputRPS = v
			res.Runs = append(res.Runs, r)
		}
	}
	res.judge(o)
	if len(res.Ratios) != 1 || fmt.Sprintf("%.3f", res.Ratios[0].AnkusaGcref) != fmt.Sprintf("%.3f", 35.0/75) {
		t.Fatalf("ratios %+v", res.Ratios)
	}
	if len(res.Failures) != 1 || !strings.HasPrefix(res.Failures[0], "guard:") {
		t.Errorf("failures %q, want the guard", res.Failures)
	}
	md := res.markdown(o)
	for _, want := range []string{unpinned, "| ankusa  |    35 |         30–40 |", "Result: FAILED"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
