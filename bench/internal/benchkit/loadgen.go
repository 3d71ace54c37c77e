package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// LoadResult is the object `loadgen -json` prints, but for the open-loop
// latencies, which a command that reads them adds beside it (embedding
// LoadResult in its own type).
type LoadResult struct {
	Mode          string           `json:"mode"`
	Connections   int              `json:"connections"`
	Rate          float64          `json:"rate"`
	DurationS     float64          `json:"duration_s"`
	Requests      int64            `json:"requests"`
	ThroughputRPS float64          `json:"throughput_rps"`
	LatencyUS     Latency          `json:"latency_us"`
	Status        map[string]int64 `json:"status"`
	Errors        int64            `json:"errors"`
	ErrorKinds    map[string]int64 `json:"error_kinds"`
}

// Latency is a latency distribution in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Problems lists every answer but 201 (by status code), the failed
// requests, and a run without a 201 answer.
func (r LoadResult) Problems() []string {
	var out []string
	codes := make([]string, 0, len(r.Status))
	for code := range r.Status {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		if n := r.Status[code]; code != "201" && n > 0 {
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

// Loadgen is a started load generator.
type Loadgen struct {
	Cmd     *exec.Cmd
	Started time.Time
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	done    chan error
}

// StartLoadgen starts the loadgen in bin with args; it is killed once it
// has run for limit.
func StartLoadgen(ctx context.Context, bin string, args []string, limit time.Duration) (*Loadgen, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	l := &Loadgen{done: make(chan error, 1)}
	l.Cmd = exec.CommandContext(ctx, filepath.Join(bin, "loadgen"), args...)
	l.Cmd.Stdout = &l.stdout
	l.Cmd.Stderr = &l.stderr
	l.Started = time.Now()
	if err := l.Cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("cannot start loadgen (build it with make bench-build): %w", err)
	}
	go func() { l.done <- l.Cmd.Wait(); cancel() }()
	return l, nil
}

// Pid is loadgen's process id.
func (l *Loadgen) Pid() int { return l.Cmd.Process.Pid }

// Wait waits for loadgen to finish and parses its JSON result into v,
// which it also returns as raw. A non-zero exit with a parsable result
// comes back as exitErr beside the result: loadgen may exit non-zero on
// failed requests, which the figures then show.
func (l *Loadgen) Wait(v any) (raw json.RawMessage, exitErr, err error) {
	werr := <-l.done
	out := bytes.TrimSpace(l.stdout.Bytes())
	// The object is the last line that starts with '{', or the whole output.
	raw = out
	if i := bytes.LastIndex(out, []byte("\n{")); i >= 0 {
		raw = out[i+1:]
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, nil, fmt.Errorf("loadgen %s: no JSON result (exit: %v): %v\nstdout: %s\nstderr: %s",
			strings.Join(l.Cmd.Args[1:], " "), werr, err, Tail(string(out)), Tail(l.stderr.String()))
	}
	if werr != nil {
		exitErr = fmt.Errorf("loadgen exited with %v: %s", werr, Tail(l.stderr.String()))
	}
	return raw, exitErr, nil
}

// CPU is loadgen's CPU time in seconds over its whole run, once it has
// exited.
func (l *Loadgen) CPU() float64 {
	ps := l.Cmd.ProcessState
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}
