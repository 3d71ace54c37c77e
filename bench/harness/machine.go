package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// unpinned is said in every report: the load generator and the servers run
// on the same cores, and nothing is pinned (pinning the server to one core
// measures a different, lower ratio and hides how a node uses its cores).
const unpinned = "client and servers share the machine's cores, unpinned"

// machine describes where and on what a run was made.
type machine struct {
	Date     string `json:"date"`
	Commit   string `json:"commit"`
	NProc    int    `json:"nproc"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	DataDir  string `json:"data_dir_parent"`
	Note     string `json:"note"`
}

func describeMachine(tmp string) machine {
	if tmp == "" {
		tmp = os.TempDir()
	}
	return machine{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Commit:   commit(),
		NProc:    runtime.NumCPU(),
		CPUModel: cpuModel(),
		Kernel:   readTrim("/proc/sys/kernel/osrelease"),
		DataDir:  tmp,
		Note:     unpinned,
	}
}

// commit is the short HEAD, marked when the tree has uncommitted changes.
func commit() string {
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

func cpuModel() string {
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

func readTrim(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(data))
}
