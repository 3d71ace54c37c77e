package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// loadResult is the object `loadgen -json` prints.
type loadResult struct {
	Mode          string           `json:"mode"`
	Connections   int              `json:"connections"`
	Rate          float64          `json:"rate"`
	DurationS     float64          `json:"duration_s"`
	Requests      int64            `json:"requests"`
	ThroughputRPS float64          `json:"throughput_rps"`
	LatencyUS     latency          `json:"latency_us"`
	Status        map[string]int64 `json:"status"`
	Errors        int64            `json:"errors"`
	ErrorKinds    map[string]int64 `json:"error_kinds"`
	SendLagUS     *latency         `json:"send_lag_us,omitempty"` // open loop only
}

type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// loadShape is the request every run sends, gcref's included: 1 KiB
// Stripe-like bodies over o.tenants tenants.
func loadShape(o *options, addr string) []string {
	return []string{
		"-url", "http://" + addr + loadPath,
		"-tenants", strconv.Itoa(o.tenants),
		"-c", strconv.Itoa(o.conns),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
}

// closedArgs is a closed-loop run of d after warmup.
func closedArgs(o *options, addr string, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-d", d.String(), "-warmup", warmup.String())
}

// countArgs is a closed-loop run of n requests without warm-up.
func countArgs(o *options, addr string, n int) []string {
	return append(loadShape(o, addr), "-n", strconv.Itoa(n), "-warmup", "0s")
}

// openArgs is an open-loop run at rate.
func openArgs(o *options, addr string, rate float64, d, warmup time.Duration) []string {
	return append(loadShape(o, addr), "-rate", strconv.FormatFloat(rate, 'f', 0, 64), "-d", d.String(), "-warmup", warmup.String())
}

// commandLine is how the report shows a loadgen run: the port replaced.
func commandLine(args []string, addr string) string {
	return "loadgen " + strings.ReplaceAll(strings.Join(args, " "), addr, "127.0.0.1:PORT")
}

// loadgen is a started load generator.
type loadgen struct {
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	done    chan error
	started time.Time
	ended   time.Time
}

func startLoad(ctx context.Context, o *options, args []string, limit time.Duration) (*loadgen, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	l := &loadgen{done: make(chan error, 1)}
	l.cmd = exec.CommandContext(ctx, filepath.Join(o.bin, "loadgen"), args...)
	l.cmd.Stdout = &l.stdout
	l.cmd.Stderr = &l.stderr
	l.started = time.Now()
	if err := l.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("cannot start loadgen (build it with make bench-build): %w", err)
	}
	go func() {
		err := l.cmd.Wait()
		l.ended = time.Now()
		l.done <- err
		cancel()
	}()
	return l, nil
}

// result waits for loadgen to finish and parses its JSON. A non-zero exit
// with a parsable result comes back as a problem beside the result.
func (l *loadgen) result() (r loadResult, problem string, err error) {
	werr := <-l.done
	out := bytes.TrimSpace(l.stdout.Bytes())
	raw := out
	if i := bytes.LastIndex(out, []byte("\n{")); i >= 0 {
		raw = out[i+1:]
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, "", fmt.Errorf("loadgen %s: no JSON result (exit: %v): %v\nstdout: %s\nstderr: %s",
			strings.Join(l.cmd.Args[1:], " "), werr, err, tail(string(out)), tail(l.stderr.String()))
	}
	if werr != nil {
		problem = fmt.Sprintf("loadgen exited with %v: %s", werr, tail(l.stderr.String()))
	}
	return r, problem, nil
}

// cpu is loadgen's CPU time over its whole run, once it has exited.
func (l *loadgen) cpu() float64 {
	ps := l.cmd.ProcessState
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// answerProblems lists every answer but 201 and every failed request.
func answerProblems(r loadResult) []string {
	var out []string
	for code, n := range r.Status {
		if code != "201" && n > 0 {
			out = append(out, fmt.Sprintf("%d answers %s", n, code))
		}
	}
	if r.Errors > 0 {
		kinds, _ := json.Marshal(r.ErrorKinds)
		out = append(out, fmt.Sprintf("%d failed requests %s", r.Errors, kinds))
	}
	if r.Status["201"] == 0 {
		out = append(out, "no 201 answers")
	}
	return out
}

// gcrefProc is a started bench/gcref.
type gcrefProc struct {
	cmd  *exec.Cmd
	dir  string
	addr string
	out  child.Buffer
}

func startGcref(o *options) (*gcrefProc, error) {
	dir, err := os.MkdirTemp(o.tmp, "ankusa-bench-dispatch-gcref-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a data directory (set -tmp): %w", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g := &gcrefProc{dir: dir, addr: addr}
	g.cmd = exec.Command(filepath.Join(o.bin, "gcref"), "-listen", addr, "-dir", dir)
	g.cmd.Stdout, g.cmd.Stderr = &g.out, &g.out
	if err := g.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cannot start gcref (build it with make bench-build): %w", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for getOK("http://"+addr+"/stats") != nil {
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("gcref not ready after 10s\n%s", tail(g.out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return g, nil
}

func (g *gcrefProc) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(g.dir)
}
