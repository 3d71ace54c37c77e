package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestSentLog checks -sent against what the server received: one line per
// measured request, each with the sha256 of a body the server got, the
// status it answered, and a due time on the schedule (1/rate apart, in the order answers came) no
// later than the answer (give or take the early send doc.go allows).
func TestSentLog(t *testing.T) {
	var mu sync.Mutex
	answered := map[string]int{} // sha256 hex of each body -> status
	ts := startServer(t, &testServer{status: func(ctx *fasthttp.RequestCtx) int {
		sum := sha256.Sum256(ctx.PostBody())
		mu.Lock()
		defer mu.Unlock()
		code := fasthttp.StatusCreated
		if len(answered)%4 == 3 {
			code = fasthttp.StatusServiceUnavailable
		}
		answered[hex.EncodeToString(sum[:])] = code
		return code
	}})
	path := filepath.Join(t.TempDir(), "sent.txt")
	cfg := mustConfig(t, "-url", ts.url+"/x", "-c", "2", "-rate", "500", "-d", "400ms", "-warmup", "100ms", "-sent", path)
	sum, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if int64(len(lines)) != sum.Requests || sum.Status["201"] == 0 || sum.Status["503"] == 0 {
		t.Fatalf("%d lines for %d measured requests (status %v): want one line each, both answers seen", len(lines), sum.Requests, sum.Status)
	}
	var dues []int64
	statuses := map[string]int64{}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("line %q: want 4 fields", line)
		}
		due, err1 := strconv.ParseInt(f[1], 10, 64)
		done, err2 := strconv.ParseInt(f[2], 10, 64)
		code, err3 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("line %q: want decimal fields", line)
		}
		mu.Lock()
		want, ok := answered[f[0]]
		mu.Unlock()
		if !ok || want != code {
			t.Fatalf("line %q: the server answered %d to that body (known %v)", line, want, ok)
		}
		statuses[f[3]]++
		// A request may go out up to its timer's lateness before its due time.
		if d := time.Duration(done - due); d < -time.Millisecond || d > time.Second {
			t.Fatalf("line %q: answered %v after its due time", line, time.Duration(done-due))
		}
		dues = append(dues, due)
	}
	if statuses["201"] != sum.Status["201"] || statuses["503"] != sum.Status["503"] {
		t.Fatalf("lines by status %v, summary %v", statuses, sum.Status)
	}
	// Lines come in the order answers did; the due times are the schedule.
	slices.Sort(dues)
	for i := 1; i < len(dues); i++ {
		if d := time.Duration(dues[i] - dues[i-1]); d < 2*time.Millisecond-time.Microsecond || d > 2*time.Millisecond+time.Microsecond {
			t.Fatalf("due times %d and %d are %v apart: want 2ms at 500/s", dues[i-1], dues[i], d)
		}
	}
}

func TestSentNeedsOpenLoop(t *testing.T) {
	for _, args := range [][]string{
		{"-url", "http://127.0.0.1:1/x", "-sent", "f"},
		{"-url", "http://127.0.0.1:1/x", "-sent", "f", "-rate", "10", "-engine", "epoll"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil || !strings.Contains(err.Error(), "-sent") {
			t.Errorf("parseFlags(%q) = %v: want -sent refused", args, err)
		}
	}
}
