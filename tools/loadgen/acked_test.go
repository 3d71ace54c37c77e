package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestAckedLog checks -acked against what the server stored: one line per
// measured 201, none for other answers or the warm-up, each with the id
// the server gave and the sha256 of the body it received; and lines reach
// the file while the run goes on.
func TestAckedLog(t *testing.T) {
	var n atomic.Int64
	ts := startServer(t, &testServer{status: func(*fasthttp.RequestCtx) int {
		if n.Add(1)%5 == 0 {
			return fasthttp.StatusServiceUnavailable
		}
		return fasthttp.StatusCreated
	}})
	path := filepath.Join(t.TempDir(), "acked.txt")
	if err := os.WriteFile(path, []byte("evt_old 00\n"), 0o644); err != nil { // appended to, not truncated
		t.Fatal(err)
	}
	cfg := mustConfig(t, "-url", ts.url+"/x", "-c", "1", "-rate", "1000", "-d", "1s", "-warmup", "300ms", "-acked", path, "-kind", "mixed", "-size", "50%1KiB,50%4KiB")
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result)
	go func() {
		sum, err := Run(context.Background(), cfg, io.Discard)
		done <- result{sum, err}
	}()
	time.Sleep(900 * time.Millisecond)
	mid, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if bytes.Count(mid, []byte("\n")) < 50 || !bytes.HasSuffix(mid, []byte("\n")) {
		t.Fatalf("mid-run the file held %d lines (%q...): want the first 201s flushed, whole lines", bytes.Count(mid, []byte("\n")), mid[:min(len(mid), 80)])
	}

	lines := readLines(t, path)
	if lines[0] != "evt_old 00" {
		t.Fatalf("first line %q: the file was not appended to", lines[0])
	}
	lines = lines[1:]
	if int64(len(lines)) != res.sum.Status["201"] || res.sum.Status["503"] == 0 {
		t.Fatalf("%d lines, summary status %v: want one line per measured 201", len(lines), res.sum.Status)
	}
	seen := map[string]bool{}
	for _, line := range lines {
		id, sum, ok := strings.Cut(line, " ")
		want, stored := ts.bodies[id]
		if !ok || !stored || seen[id] {
			t.Fatalf("line %q: not an id the server answered 201 once", line)
		}
		seen[id] = true
		if sum != hex.EncodeToString(want[:]) {
			t.Fatalf("line %q: the server received a body with sha256 %x", line, want)
		}
	}
	if len(ts.bodies) <= len(lines) || seen["evt_1"] {
		t.Fatalf("server answered %d 201s, %d lines, evt_1 in the file: %v; want the warm-up's 201s left out", len(ts.bodies), len(lines), seen["evt_1"])
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func TestAnswerID(t *testing.T) {
	f := func(body, want string, wantOK bool) {
		t.Helper()
		id, ok := answerID([]byte(body))
		if ok != wantOK || string(id) != want {
			t.Fatalf("answerID(%q) = %q, %v; want %q, %v", body, id, ok, want, wantOK)
		}
	}
	f(`{"id":"evt_1"}`, "evt_1", true)
	f(` { "id" : "evt_2" , "x": 1}`, "evt_2", true)
	f(`{"status":"ok","id":"evt_3"}`, "evt_3", true)
	f(`{"id":"evt\u005f4"}`, "evt_4", true)
	f(`{"data":{"id":"inner"},"id":"outer"}`, "outer", true)
	f(`{"id":""}`, "", false)
	f(`{"id":"a b"}`, "", false)
	f(`{"id":"a\nb"}`, "", false)
	f(`{"id":7}`, "", false)
	f(`{"error":"x"}`, "", false)
	f(`not json`, "", false)
	f(``, "", false)
}
