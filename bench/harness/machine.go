package main

import (
	"os"
	"runtime"
	"time"

	"github.com/ankusa/ankusa/internal/hostinfo"
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
		Commit:   hostinfo.Commit(),
		NProc:    runtime.NumCPU(),
		CPUModel: hostinfo.CPUModel(),
		Kernel:   hostinfo.Kernel(),
		DataDir:  tmp,
		Note:     unpinned,
	}
}
