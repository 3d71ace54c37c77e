package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
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

func TestParseFlagsVerify(t *testing.T) {
	o, err := parseFlags([]string{"-verify"})
	if err != nil || !o.verify || o.rounds != 3 || !reflect.DeepEqual(o.conns, []int{256}) || o.duration != 10*time.Second || o.warmup != 2*time.Second || o.minRatio != 0 {
		t.Errorf("-verify: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-verify", "-quick"})
	if err != nil || o.rounds != 1 || !reflect.DeepEqual(o.conns, []int{256}) || o.duration != 3*time.Second || o.warmup != time.Second || o.minRatio != 0 {
		t.Errorf("-verify -quick: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-verify", "-quick", "-rounds", "2", "-conns", "64,128", "-d", "2s"})
	if err != nil || o.rounds != 2 || !reflect.DeepEqual(o.conns, []int{64, 128}) || o.duration != 2*time.Second || o.warmup != time.Second {
		t.Errorf("-verify -quick with explicit flags: %+v, %v", o, err)
	}
	if o, err = parseFlags(nil); err != nil || o.verify {
		t.Errorf("default: verify %v, %v", o.verify, err)
	}
	for _, bad := range [][]string{{"-verify", "-vs-wrk"}, {"-verify", "-min-ratio", "0.5"}, {"-verify", "-open-frac", "0"}, {"-verify", "-open-conns", "64"}, {"-verify", "-rounds", "0"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q): no error", bad)
		}
	}
}

// TestAppConfig: the appliance's config loads as `ankusa serve` loads it,
// with the demo source unverified and the signed one accepting what
// loadgen -sign stripe -secret benchSecret sends to it.
func TestAppConfig(t *testing.T) {
	opts := config.ValidateOptions{CheckVerify: func(v config.Verify) error { _, err := verify.New(v); return err }}
	cfg, err := config.Load([]byte(appConfigText(t.TempDir(), "127.0.0.1:1", "127.0.0.1:2")), opts)
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Sources["demo"].Verify.Type; v != "none" {
		t.Errorf("demo verifies with %q", v)
	}
	s := &server{origin: "http://127.0.0.1:1", url: "http://127.0.0.1:1" + loadPath}
	url, sign := target(s, plain)
	if url != s.url || !reflect.DeepEqual(sign, []string{"-sign", "stripe", "-secret", benchSecret}) {
		t.Errorf("plain target %q %q: want the demo source, signed like the verified runs", url, sign)
	}
	url, sign = target(s, verified)
	if url != "http://127.0.0.1:1/webhooks/signed" || !reflect.DeepEqual(sign, []string{"-sign", "stripe", "-secret", benchSecret}) {
		t.Errorf("verified target %q %q", url, sign)
	}
	src, ok := cfg.Sources[strings.TrimPrefix(signedPath, "/webhooks/")]
	if !ok || src.Verify.Type != "stripe" {
		t.Fatalf("no stripe source at %s: %+v", signedPath, cfg.Sources)
	}
	v, err := verify.New(src.Verify)
	if err != nil {
		t.Fatal(err)
	}
	// Signed as tools/loadgen/sign.go signs.
	body, now := []byte(`{"id":"evt_1","object":"event"}`), time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(benchSecret))
	mac.Write([]byte(ts + "." + string(body)))
	h := headers{"Stripe-Signature": "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))}
	if err := v.Verify(h, body, now); err != nil {
		t.Errorf("the signed source refuses loadgen's signature: %v", err)
	}
	if err := v.Verify(headers{}, body, now); err == nil {
		t.Error("the signed source accepts an unsigned hook")
	}
}

type headers map[string]string

func (h headers) Peek(key string) []byte {
	if v, ok := h[key]; ok {
		return []byte(v)
	}
	return nil
}

func TestVariantOrder(t *testing.T) {
	want := [][]runKey{{{ankusa, plain}, {ankusa, verified}}, {{ankusa, verified}, {ankusa, plain}}, {{ankusa, plain}, {ankusa, verified}}}
	for i, w := range want {
		if got := variantOrder(i + 1); !reflect.DeepEqual(got, w) {
			t.Errorf("round %d: %v, want %v", i+1, got, w)
		}
	}
}

func TestWithin(t *testing.T) {
	for ratio, want := range map[float64]bool{0.9: true, 1.1: true, 1: true, 0.899: false, 1.101: false, 0: false} {
		if got := within(ratio, 0.1); got != want {
			t.Errorf("within(%v, 0.1) = %v", ratio, got)
		}
	}
}

func TestAnswers(t *testing.T) {
	if got, want := answers(map[string]int64{"401": 2, "201": 1234}, 3), "201 ×1,234, 401 ×2, 3 failed"; got != want {
		t.Errorf("answers = %q, want %q", got, want)
	}
	if got := answers(nil, 0); got != "none" {
		t.Errorf("answers of nothing = %q", got)
	}
}

// verifyRuns are -verify runs at 256 connections with these req/s, each
// answered 201 but for extra.
func verifyRuns(rps map[string][]float64, extra map[string]int64) *results {
	res := &results{Rounds: 3, Duration: "10s", Warmup: "2s", Failures: []string{}}
	for variant, v := range rps {
		for round, x := range v {
			r := &runResult{Server: ankusa, Variant: variant, Mode: "closed", Round: round + 1, Conns: 256, CPUPercent: 150, ClientCPU: 90, HooksPerFsync: 40, Quiet: true}
			r.Load.ThroughputRPS, r.Load.Status = x, map[string]int64{"201": int64(x) * 10}
			r.Load.LatencyUS = benchkit.Latency{P50: 2000, P99: 9000, P999: 15000}
			if round == 0 && variant == verified {
				for code, n := range extra {
					r.Load.Status[code] = n
				}
			}
			r.check()
			res.Runs = append(res.Runs, r)
		}
	}
	return res
}

// TestJudgeVerify: medians, the ratio and the verdict from fixed figures;
// an answer but 201 fails the run whatever the verdict.
func TestJudgeVerify(t *testing.T) {
	o := &options{conns: []int{256}, verify: true}
	res := verifyRuns(map[string][]float64{plain: {100000, 110000, 90000}, verified: {95000, 99000, 97000}}, nil)
	res.judgeVerify(o)
	if len(res.Verify) != 1 || fmt.Sprintf("%.3f", res.Verify[0].VerifiedOverPlain) != "0.970" || !res.Verify[0].Within {
		t.Fatalf("verify %+v", res.Verify)
	}
	if len(res.Failures) != 0 {
		t.Errorf("failures %q", res.Failures)
	}
	md := res.verifyMarkdown(o)
	for _, want := range []string{
		"| conns | variant  |   req/s |  req/s min–max |     p50 |     p99 |    p99.9 |  CPU | client CPU | hooks/fsync | answers        |\n",
		"|   256 | plain    | 100,000 | 90,000–110,000 | 2.00 ms | 9.00 ms | 15.00 ms | 150% |        90% |        40.0 | 201 ×3,000,000 |\n",
		"|   256 | verified |  97,000 |  95,000–99,000 | 2.00 ms | 9.00 ms | 15.00 ms | 150% |        90% |        40.0 | 201 ×2,910,000 |\n",
		"\nverified / plain, median req/s at 256 connections: 0.970\nwithin 10%: yes\n",
		"-sign stripe -secret " + benchSecret,
		"within 10%: yes\n\nResult: ok (every request answered 201)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}

	res = verifyRuns(map[string][]float64{plain: {100000}, verified: {80000}}, map[string]int64{"401": 7})
	res.Rounds = 1
	res.judgeVerify(o)
	if fmt.Sprintf("%.3f", res.Verify[0].VerifiedOverPlain) != "0.800" || res.Verify[0].Within {
		t.Errorf("verify %+v", res.Verify)
	}
	if len(res.Failures) != 1 || !strings.Contains(res.Failures[0], "ankusa verified, closed loop, round 1, 256 connections: 7 answers 401") {
		t.Errorf("failures %q", res.Failures)
	}
	md = res.verifyMarkdown(o)
	for _, want := range []string{"201 ×800,000, 401 ×7", "within 10%: no\n", "Result: FAILED\n- ankusa verified"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
