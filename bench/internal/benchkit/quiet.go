package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Quiet is what a machine quiet enough to measure on is: other work on a
// shared machine would be measured as the servers' slowness.
type Quiet struct {
	// CPU is how busy the machine may be, in percent of one core over
	// half a second.
	CPU float64
	// Others lists other work that must not run meanwhile (nil: none);
	// while it lists any, the next look is 5 s later.
	Others func() []string
	// Waiting is told once, when the machine is first found busy (nil:
	// nobody).
	Waiting func(cpu float64, others []string)
}

// Settle waits up to limit for a quiet machine. It reports whether the
// machine was quiet and how long it waited.
func (q Quiet) Settle(ctx context.Context, limit time.Duration) (bool, time.Duration, error) {
	began := time.Now()
	said := false
	for {
		var busy []string
		if q.Others != nil {
			busy = q.Others()
		}
		before, err := MachineBusy()
		if err != nil {
			return false, 0, err
		}
		t0 := time.Now()
		if err := Sleep(ctx, 500*time.Millisecond); err != nil {
			return false, time.Since(began), err
		}
		after, err := MachineBusy()
		if err != nil {
			return false, 0, err
		}
		cpu := 100 * (after - before) / time.Since(t0).Seconds()
		if len(busy) == 0 && cpu < q.CPU {
			return true, time.Since(began), nil
		}
		if time.Since(began) > limit {
			return false, time.Since(began), nil
		}
		if !said && q.Waiting != nil {
			q.Waiting(cpu, busy)
			said = true
		}
		if len(busy) > 0 {
			if err := Sleep(ctx, 5*time.Second); err != nil {
				return false, time.Since(began), err
			}
		}
	}
}

// Sleep waits d or until ctx is done, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Benchmarks is what counts as another benchmark or a test run (pgrep -f
// patterns): while one runs, the figures would measure it.
const Benchmarks = `go test|\.test |bench-harness|bench-segment|bench-dispatch|bench-controlplane|loadgen`

// Others lists the processes whose command line matches pattern that are
// not this process, its ancestors (the make that started it) or its
// children (its own loadgen), nor a search for the pattern (grep, pgrep,
// rg): "PID command", the command cut at 80 bytes. It is Quiet.Others of
// a command that must run alone.
func Others(pattern string) func() []string {
	self := os.Getpid()
	ours := map[int]bool{}
	for pid := self; pid > 1 && !ours[pid]; pid = ParentPID(pid) {
		ours[pid] = true
	}
	return func() []string {
		out, _ := exec.Command("pgrep", "-af", pattern).Output()
		var found []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pidText, cmd, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			pid, err := strconv.Atoi(pidText)
			if err != nil || ours[pid] || ParentPID(pid) == self || searching(cmd) {
				continue
			}
			if len(cmd) > 80 {
				cmd = cmd[:80] + "..."
			}
			found = append(found, pidText+" "+cmd)
		}
		return found
	}
}

// searching reports whether cmd only looks for processes or text (a grep
// or pgrep whose pattern names a benchmark).
func searching(cmd string) bool {
	name, _, _ := strings.Cut(cmd, " ")
	switch filepath.Base(name) {
	case "grep", "egrep", "pgrep", "rg":
		return true
	}
	return false
}

// Watcher notes the first other work seen during a run.
type Watcher struct {
	seen atomic.Pointer[string]
	stop chan struct{}
	done chan struct{}
}

// Watch looks every half second, until End, whether others lists
// anything.
func Watch(others func() []string) *Watcher {
	w := &Watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			if busy := others(); len(busy) > 0 && w.seen.Load() == nil {
				s := strings.Join(busy, "; ")
				w.seen.Store(&s)
			}
		}
	}()
	return w
}

// End stops watching and returns what ran meanwhile ("" for nothing).
func (w *Watcher) End() string {
	close(w.stop)
	<-w.done
	if s := w.seen.Load(); s != nil {
		return *s
	}
	return ""
}

// Alone waits before each measurement of a command that must run alone
// (bench/segment, bench/controlplane) up to Limit for a quiet machine: no
// other benchmark or test running (Benchmarks) and under 40% of one core
// in use (80% of two idle ones). It says on stdout what it waits for and
// counts in Busy the measurements that started on a machine still busy.
type Alone struct {
	Limit time.Duration
	Busy  int
}

// Wait waits for a quiet machine; only ctx's end is an error.
func (a *Alone) Wait(ctx context.Context) error {
	q := Quiet{CPU: 40, Others: Others(Benchmarks), Waiting: func(cpu float64, busy []string) {
		fmt.Printf("waiting for a quiet machine (CPU %.0f%% of a core; running: %v)...\n", cpu, busy)
	}}
	ok, _, err := q.Settle(ctx, a.Limit)
	if err == nil && !ok {
		a.Busy++
		fmt.Printf("the machine is still busy after %s; measuring anyway\n", a.Limit)
	}
	return err
}

// BusyNote is a report's item on the busy measurements that Alone let
// start, "" for none.
func BusyNote(busy int) string {
	if busy == 0 {
		return ""
	}
	return fmt.Sprintf("- **%d measurements started while the machine stayed busy with other work: their speeds and latencies are not reliable**\n", busy)
}
