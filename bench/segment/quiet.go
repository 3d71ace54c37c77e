package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Measurements wait for a quiet machine: no bench-harness running (make
// bench), and at least quietIdle of the CPU time idle over a short sample.
// After quietTimeout the measurement goes ahead and counts in busyStarts,
// which the report states.
const (
	quietIdle    = 0.80
	quietSample  = 3 * time.Second
	quietTimeout = 10 * time.Minute
)

var busyStarts int

func waitQuiet() {
	deadline := time.Now().Add(quietTimeout)
	for said := false; ; {
		harness := exec.Command("pgrep", "-f", "bench-harness").Run() == nil
		idle := idleShare(quietSample)
		if !harness && idle >= quietIdle {
			return
		}
		if time.Now().After(deadline) {
			busyStarts++
			fmt.Printf("the machine is still busy (CPU %.0f%% idle) after %s; measuring anyway\n", idle*100, quietTimeout)
			return
		}
		if !said {
			fmt.Printf("waiting for a quiet machine (bench-harness running: %v, CPU %.0f%% idle)...\n", harness, idle*100)
			said = true
		}
		if harness {
			time.Sleep(20 * time.Second)
		}
	}
}

// idleShare is the share of CPU time idle (iowait included) over d, from
// /proc/stat; 1 where that cannot be read.
func idleShare(d time.Duration) float64 {
	idle0, total0, ok0 := cpuTicks()
	time.Sleep(d)
	idle1, total1, ok1 := cpuTicks()
	if !ok0 || !ok1 || total1 <= total0 {
		return 1
	}
	return float64(idle1-idle0) / float64(total1-total0)
}

func cpuTicks() (idle, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total, true
}
