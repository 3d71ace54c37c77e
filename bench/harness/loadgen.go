package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	FromSendUS    *latency         `json:"from_send_us"` // open loop only
}

type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// loadArgs is the loadgen command line of one run: the same for every
// server but the URL. rate 0 is closed loop.
func loadArgs(o *options, url string, conns int, rate float64) []string {
	args := []string{
		"-url", url,
		"-c", strconv.Itoa(conns),
		"-d", o.duration.String(),
		"-warmup", o.warmup.String(),
		"-size", "1KiB",
		"-kind", "stripe",
		"-json",
	}
	if rate > 0 {
		args = append(args, "-rate", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	return args
}

// loadgen is a started load generator.
type loadgen struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan error
}

func startLoad(ctx context.Context, o *options, args []string) (*loadgen, error) {
	// A run that overstays its duration by a minute is stuck.
	limit := o.warmup + o.duration + time.Minute
	ctx, cancel := context.WithTimeout(ctx, limit)
	l := &loadgen{done: make(chan error, 1)}
	l.cmd = exec.CommandContext(ctx, filepath.Join(o.bin, "loadgen"), args...)
	l.cmd.Stdout = &l.stdout
	l.cmd.Stderr = &l.stderr
	if err := l.cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("cannot start loadgen (build it with make bench-build): %w", err)
	}
	go func() { l.done <- l.cmd.Wait(); cancel() }()
	return l, nil
}

// result waits for loadgen to finish and parses its JSON. A non-zero exit
// with a parsable result comes back as exitErr beside the result: loadgen
// may exit non-zero on failed requests, which the figures then show.
func (l *loadgen) result() (r loadResult, raw json.RawMessage, exitErr, err error) {
	werr := <-l.done
	out := bytes.TrimSpace(l.stdout.Bytes())
	// The object is the last line that starts with '{', or the whole output.
	raw = out
	if i := bytes.LastIndex(out, []byte("\n{")); i >= 0 {
		raw = out[i+1:]
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, nil, nil, fmt.Errorf("loadgen %s: no JSON result (exit: %v): %v\nstdout: %s\nstderr: %s",
			strings.Join(l.cmd.Args[1:], " "), werr, err, tail(string(out)), tail(l.stderr.String()))
	}
	if werr != nil {
		exitErr = fmt.Errorf("loadgen exited with %v: %s", werr, tail(l.stderr.String()))
	}
	return r, raw, exitErr, nil
}

// clientCPU is loadgen's CPU time over its whole run, once it has exited.
func (l *loadgen) clientCPU() float64 {
	ps := l.cmd.ProcessState
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}
