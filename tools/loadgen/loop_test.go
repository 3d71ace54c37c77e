package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// answerBySource answers 404 for the source "gone", 201 otherwise.
func answerBySource(ctx *fasthttp.RequestCtx) int {
	if strings.HasSuffix(string(ctx.Path()), "/gone") {
		return fasthttp.StatusNotFound
	}
	return fasthttp.StatusCreated
}

func TestClosedLoopCounts(t *testing.T) {
	ts := startServer(t, &testServer{status: answerBySource})
	sum := mustRun(t, "-url", ts.url+"/in/{source}", "-c", "8", "-n", "2000", "-warmup", "0", "-sources", "ok,gone")
	if sum.Mode != "closed" || sum.Connections != 8 || sum.Requests != 2000 || sum.Errors != 0 {
		t.Fatalf("summary %+v, want closed, 8 connections, 2000 requests, no errors", sum)
	}
	if got := ts.count(); got != 2000 {
		t.Fatalf("server saw %d requests, want exactly -n 2000", got)
	}
	if sum.Status["201"] != int64(ts.paths["/in/ok"]) || sum.Status["404"] != int64(ts.paths["/in/gone"]) || len(sum.Status) != 2 {
		t.Fatalf("status %v, server paths %v", sum.Status, ts.paths)
	}
	if sum.LatencyUs.P50 <= 0 || sum.LatencyUs.P50 > sum.LatencyUs.P99 || sum.LatencyUs.P99 > sum.LatencyUs.Max || sum.ThroughputRPS <= 0 {
		t.Fatalf("latency %+v, throughput %v", sum.LatencyUs, sum.ThroughputRPS)
	}
}

// TestClosedLoopWarmupAndDuration checks that -d bounds the window and
// -warmup requests reach the server but not the figures.
func TestClosedLoopWarmupAndDuration(t *testing.T) {
	ts := startServer(t, &testServer{})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "2", "-d", "600ms", "-warmup", "300ms")
	if sum.DurationS < 0.59 || sum.DurationS > 0.8 {
		t.Fatalf("duration_s %v, want about 0.6", sum.DurationS)
	}
	if warm := int64(ts.count()) - sum.Requests; warm < 10 || sum.Requests < 10 {
		t.Fatalf("server saw %d, summary counts %d: want the warm-up requests sent but not counted", ts.count(), sum.Requests)
	}
}

// TestOpenLoopRate checks that the open loop keeps the requested rate, at
// the server and in the summary, and sends exactly warm-up + window.
func TestOpenLoopRate(t *testing.T) {
	ts := startServer(t, &testServer{status: answerBySource})
	sum := mustRun(t, "-url", ts.url+"/in/{source}", "-c", "16", "-rate", "2000", "-d", "1500ms", "-warmup", "250ms", "-sources", "ok,gone")
	if sum.Mode != "open" || sum.Rate != 2000 || sum.Requests != 3000 || sum.Errors != 0 {
		t.Fatalf("summary %+v, want open at 2000/s, 3000 requests, no errors", sum)
	}
	if got := ts.count(); got != 3500 {
		t.Fatalf("server saw %d requests, want 500 warm-up + 3000", got)
	}
	if sum.Status["201"]+sum.Status["404"] != 3000 || sum.Status["404"] < 1200 {
		t.Fatalf("status %v", sum.Status)
	}
	if sum.ThroughputRPS < 1900 || sum.ThroughputRPS > 2100 {
		t.Fatalf("throughput %v req/s, want 2000 within 5%%", sum.ThroughputRPS)
	}
	arrived := ts.arrived[500:] // the measured window, in arrival order
	span := arrived[len(arrived)-1].Sub(arrived[0]).Seconds()
	if rate := float64(len(arrived)-1) / span; rate < 1900 || rate > 2100 {
		t.Fatalf("server saw %.0f req/s over the window, want 2000 within 5%%", rate)
	}
}

func TestMaxErrorsAndTransportErrors(t *testing.T) {
	// A listener that accepts and closes at once: every request fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-url", "http://" + ln.Addr().String() + "/x", "-c", "2", "-d", "5s", "-warmup", "0", "-max-errors", "20", "-json"}, &stdout, &stderr)
	if code != exitFatal || !strings.Contains(stderr.String(), "-max-errors reached") {
		t.Fatalf("exit %d, stderr %q; want %d and -max-errors reached", code, stderr.String(), exitFatal)
	}
	var sum Summary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("no JSON summary after -max-errors: %v\n%s", err, stdout.String())
	}
	if sum.Errors < 20 || sum.ErrorKinds["closed"]+sum.ErrorKinds["reset"] < 20 || sum.Status["201"] != 0 {
		t.Fatalf("errors %d, kinds %v, status %v", sum.Errors, sum.ErrorKinds, sum.Status)
	}
}

func TestTimeoutIsCounted(t *testing.T) {
	ts := startServer(t, &testServer{before: func() { time.Sleep(300 * time.Millisecond) }})
	sum := mustRun(t, "-url", ts.url+"/x", "-c", "2", "-n", "4", "-warmup", "0", "-timeout", "50ms")
	if sum.Errors != 4 || sum.ErrorKinds["timeout"] != 4 || len(sum.Status) != 0 {
		t.Fatalf("errors %d, kinds %v, status %v; want 4 timeouts", sum.Errors, sum.ErrorKinds, sum.Status)
	}
}

// TestOutputFormats checks the JSON schema key by key and the human table.
func TestOutputFormats(t *testing.T) {
	ts := startServer(t, &testServer{})
	var out, errOut bytes.Buffer
	if code := run([]string{"-url", ts.url + "/x", "-c", "2", "-rate", "500", "-n", "100", "-warmup", "0", "-json"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []string{"connections", "duration_s", "error_kinds", "errors", "from_send_us", "latency_us", "mode", "rate", "requests", "send_lag_us", "status", "throughput_rps"}
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Fatalf("JSON keys %v, want %v", got, want)
	}
	for _, k := range []string{"latency_us", "send_lag_us", "from_send_us"} {
		lat := m[k].(map[string]any)
		if got := slices.Sorted(maps.Keys(lat)); !slices.Equal(got, []string{"max", "mean", "p50", "p90", "p99", "p999"}) {
			t.Fatalf("%s keys %v", k, got)
		}
	}
	// Latency from the scheduled time includes the send lag: never less
	// than the latency from the actual send.
	if from, sched := m["from_send_us"].(map[string]any)["max"].(float64), m["latency_us"].(map[string]any)["max"].(float64); from > sched {
		t.Fatalf("max latency from the send %v > from the schedule %v", from, sched)
	}
	if m["mode"] != "open" || m["requests"] != 100.0 || m["rate"] != 500.0 || m["status"].(map[string]any)["201"] != 100.0 {
		t.Fatalf("JSON %s", out.String())
	}
	if !strings.HasPrefix(out.String(), `{"mode":"open","connections":2,"rate":500,"duration_s":`) {
		t.Fatalf("JSON field order: %s", out.String())
	}
	out.Reset()
	if code := run([]string{"-url", ts.url + "/x", "-c", "2", "-n", "50", "-warmup", "0", "-json"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "send_lag_us") || strings.Contains(out.String(), "from_send_us") {
		t.Fatalf("closed-loop JSON carries open-loop keys: %s", out.String())
	}
	out.Reset()
	if code := run([]string{"-url", ts.url + "/x", "-c", "2", "-n", "50", "-warmup", "0"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"closed loop, 2 connections", "requests", "throughput", "status 201", "latency p50", "latency p90", "latency p99", "latency p99.9", "latency max"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("human output lacks %q:\n%s", want, out.String())
		}
	}
}
