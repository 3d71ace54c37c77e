package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.rounds != 3 || !reflect.DeepEqual(o.conns, []int{64, 256}) || o.duration != 10*time.Second || o.minRatio != 0 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-quick"})
	if err != nil || o.rounds != 3 || !reflect.DeepEqual(o.conns, []int{256}) || o.duration != 3*time.Second || o.warmup != time.Second || o.minRatio != 0.6 {
		t.Errorf("-quick: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-quick", "-d", "5s", "-min-ratio", "0.8"})
	if err != nil || o.duration != 5*time.Second || o.minRatio != 0.8 || o.rounds != 3 {
		t.Errorf("-quick with explicit flags: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-conns", "64,x"}, {"-rounds", "0"}, {"-open-rounds", "0"}, {"-open-frac", "2"}, {"extra"}} {
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

// TestJudge: the guard fails a best-rounds ratio under -min-ratio, and
// medians and ratios come from the right runs.
func TestJudge(t *testing.T) {
	o := &options{conns: []int{256}, minRatio: 0.5}
	res := &results{Failures: []string{}}
	for i, rps := range map[string][]float64{ceiling: {100, 120, 110}, gcref: {70, 80, 75}, ankusa: {30, 35, 39.9}} {
		for round, v := range rps {
			r := &runResult{Server: i, Mode: "closed", Round: round + 1, Conns: 256}
			r.Load.ThroughputRPS = v
			res.Runs = append(res.Runs, r)
		}
	}
	res.judge(o)
	if len(res.Ratios) != 1 || fmt.Sprintf("%.3f", res.Ratios[0].AnkusaGcref) != fmt.Sprintf("%.3f", 35.0/75) ||
		fmt.Sprintf("%.3f", res.Ratios[0].AnkusaGcrefBest) != fmt.Sprintf("%.3f", 39.9/80) {
		t.Fatalf("ratios %+v", res.Ratios)
	}
	if len(res.Failures) != 1 || !strings.HasPrefix(res.Failures[0], "guard:") {
		t.Errorf("failures %q, want the guard", res.Failures)
	}
	md := res.markdown(o)
	for _, want := range []string{unpinned, "| ankusa  |    35 |         30–40 |", "Result: FAILED", "in the best rounds"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestAppConfig: the appliance's config loads as `ankusa serve` loads it,
// with the demo source unverified.
func TestAppConfig(t *testing.T) {
	opts := config.ValidateOptions{CheckVerify: func(v config.Verify) error { _, err := verify.New(v); return err }}
	cfg, err := config.Load([]byte(appConfigText(t.TempDir(), "127.0.0.1:1", "127.0.0.1:2")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Sources["demo"].Verify.Type; v != "none" {
		t.Errorf("demo verifies with %q", v)
	}
}
