package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// LoadProblems lists every answer but 201 (by status code), the failed
// requests, and a run without a 201 answer.
func LoadProblems(r *result.Summary) []string {
	var out []string
	for _, code := range slices.Sorted(maps.Keys(r.Status)) {
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

// StartLoadgen starts the loadgen in bin with args, a run of run (its
// warm-up and measured duration): one that overstays it by a minute is
// stuck, and killed.
func StartLoadgen(ctx context.Context, bin string, args []string, run time.Duration) (*Loadgen, error) {
	ctx, cancel := context.WithTimeout(ctx, run+time.Minute)
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

// Wait waits for loadgen to finish and parses its JSON result into r,
// which it also returns as raw. A non-zero exit with a parsable result
// is a problem in exited beside the result: loadgen may exit non-zero on
// failed requests, which the figures then show.
func (l *Loadgen) Wait() (r result.Summary, raw json.RawMessage, exited []string, err error) {
	werr := <-l.done
	out := bytes.TrimSpace(l.stdout.Bytes())
	// The object is the last line that starts with '{', or the whole output.
	raw = out
	if i := bytes.LastIndex(out, []byte("\n{")); i >= 0 {
		raw = out[i+1:]
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, nil, nil, fmt.Errorf("loadgen %s: no JSON result (exit: %v): %v\nstdout: %s\nstderr: %s",
			strings.Join(l.Cmd.Args[1:], " "), werr, err, Tail(string(out)), Tail(l.stderr.String()))
	}
	if werr != nil {
		exited = []string{fmt.Sprintf("loadgen exited with %v: %s", werr, Tail(l.stderr.String()))}
	}
	return r, raw, exited, nil
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
