package main

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

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// busyPattern is what counts as another benchmark or a test run (pgrep -f):
// while one runs, the figures would measure it.
const busyPattern = `go test|\.test |bench-harness|bench-segment|loadgen`

// quietCPU is how busy the machine may be, in percent of one core over
// half a second, to count as quiet (an idle RabbitMQ uses a few per cent).
const quietCPU = 25

// others lists the processes matching busyPattern that are not this
// process's children (its own loadgen).
func others() []string {
	out, _ := exec.Command("pgrep", "-af", busyPattern).Output()
	self := os.Getpid()
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pidText, cmd, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == self || benchkit.ParentPID(pid) == self || searching(cmd) {
			continue
		}
		found = append(found, fmt.Sprintf("%d %s", pid, truncate(cmd, 80)))
	}
	return found
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

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// settle waits up to limit for a quiet machine: nothing matching
// busyPattern, and under quietCPU of CPU in use. It reports whether the
// machine was quiet and how long it waited.
func settle(ctx context.Context, limit time.Duration) (bool, time.Duration, error) {
	q := benchkit.Quiet{
		CPU:    quietCPU,
		Others: others,
		Waiting: func(cpu float64, busy []string) {
			fmt.Fprintf(os.Stderr, "bench-dispatch: waiting for a quiet machine (CPU %.0f%% of a core; running: %s)\n", cpu, strings.Join(busy, "; "))
		},
	}
	return q.Settle(ctx, limit)
}

// watcher notes any test or benchmark that starts during a run.
type watcher struct {
	seen atomic.Pointer[string]
	stop chan struct{}
	done chan struct{}
}

func watch() *watcher {
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
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

// end stops watching and returns what ran meanwhile ("" for nothing).
func (w *watcher) end() string {
	close(w.stop)
	<-w.done
	if s := w.seen.Load(); s != nil {
		return *s
	}
	return ""
}

// cpuSeconds is a process's user plus system CPU time so far, 0 where
// /proc does not say.
func cpuSeconds(pid int) float64 {
	c, _ := benchkit.CPUSeconds(pid)
	return c
}
