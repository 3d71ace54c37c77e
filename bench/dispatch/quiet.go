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
		if err != nil || pid == self || parentPID(pid) == self || searching(cmd) {
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

func parentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
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
	began := time.Now()
	said := false
	for {
		busy := others()
		before, err := machineBusy()
		if err != nil {
			return false, 0, err
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return false, time.Since(began), ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		after, err := machineBusy()
		if err != nil {
			return false, 0, err
		}
		cpu := 100 * (after - before) / time.Since(t0).Seconds()
		if len(busy) == 0 && cpu < quietCPU {
			return true, time.Since(began), nil
		}
		if time.Since(began) > limit {
			return false, time.Since(began), nil
		}
		if !said {
			fmt.Fprintf(os.Stderr, "bench-dispatch: waiting for a quiet machine (CPU %.0f%% of a core; running: %s)\n", cpu, strings.Join(busy, "; "))
			said = true
		}
		if len(busy) > 0 {
			time.Sleep(5 * time.Second)
		}
	}
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

// clockTicks is USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// cpuSeconds is a process's user plus system CPU time so far.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return float64(utime+stime) / clockTicks
}

// machineBusy is the CPU time all cores have spent busy so far (user,
// nice, system, irq, softirq, steal).
func machineBusy() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("cannot read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("cannot parse /proc/stat %q", line)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse /proc/stat %q", line)
		}
		busy += v
	}
	return float64(busy) / clockTicks, nil
}
