// Package hostinfo describes where a benchmark ran, for the reports in
// bench/RESULTS.md: the commit, the CPU model and the kernel. Only the
// benchmarks import it; it imports nothing of this module.
package hostinfo

import (
	"os"
	"os/exec"
	"strings"
)

// Commit is the short HEAD, marked when the tree has uncommitted changes;
// "unknown" outside a git checkout.
func Commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// CPUModel is the first "model name" of /proc/cpuinfo, or "unknown".
func CPUModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Kernel is the running kernel's release, or "unknown".
func Kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}
