package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileResult is a CPU profile of the node over part of a run.
type profileResult struct {
	Phase   string   `json:"phase"`
	File    string   `json:"file"`
	Seconds float64  `json:"seconds"`
	Top     []string `json:"top_flat"` // go tool pprof -top, 10 nodes
	TopCum  []string `json:"top_cum"`  // the same, -cum
	Err     string   `json:"error,omitempty"`
}

// startProfile starts a CPU profile of d (whole seconds, at least one)
// of the node; wait returns it with its top functions.
func startProfile(o *options, n *node, d time.Duration, phase, name string) (wait func() *profileResult) {
	d = max(time.Second, d.Truncate(time.Second))
	p := &profileResult{Phase: phase, File: profileFile(o, name), Seconds: d.Seconds()}
	done := make(chan error, 1)
	go func() { done <- n.profile(d, p.File) }()
	return func() *profileResult {
		if err := <-done; err != nil {
			p.Err = err.Error()
			return p
		}
		p.Top, p.TopCum = pprofTop(o, p.File)
		return p
	}
}

// profileFile is where a CPU profile goes: beside -json, or in the temp
// directory.
func profileFile(o *options, name string) string {
	if o.jsonOut != "" {
		return filepath.Join(filepath.Dir(o.jsonOut), "bench-dispatch-"+name+".pprof")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("bench-dispatch-%s-%d.pprof", name, os.Getpid()))
}

// pprofTop is the profile's top 10 functions by flat and by cumulative
// time, from go tool pprof; nil when it cannot run.
func pprofTop(o *options, path string) (flat, cum []string) {
	top := func(extra ...string) []string {
		args := append([]string{"tool", "pprof", "-top", "-nodecount=10"}, extra...)
		args = append(args, filepath.Join(o.bin, "ankusa"), path)
		out, err := exec.Command("go", args...).Output()
		if err != nil {
			return nil
		}
		var lines []string
		table := false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "flat%") {
				table = true
			}
			if table && strings.TrimSpace(line) != "" {
				lines = append(lines, line)
			}
		}
		return lines
	}
	return top(), top("-cum")
}
