package benchkit

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/ankusa/ankusa/internal/hostinfo"
)

// Machine describes where and on what a run was made.
type Machine struct {
	Date     string `json:"date"`
	Commit   string `json:"commit"`
	NProc    int    `json:"nproc"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	DataDir  string `json:"data_dir_parent"`
	Note     string `json:"note"`
}

// DescribeMachine describes this machine now; tmp is the parent of the
// run's data directories ("": the system temp dir), note what the report
// says about how the run shared the machine.
func DescribeMachine(tmp, note string) Machine {
	if tmp == "" {
		tmp = os.TempDir()
	}
	return Machine{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Commit:   hostinfo.Commit(),
		NProc:    runtime.NumCPU(),
		CPUModel: hostinfo.CPUModel(),
		Kernel:   hostinfo.Kernel(),
		DataDir:  tmp,
		Note:     note,
	}
}

// Header is a report's first lines: the command and the date, a blank
// line, and an item saying where it ran.
func (m Machine) Header(command string) string {
	return fmt.Sprintf("%s, %s\n\n- commit %s; nproc %d, %s; Linux %s; data directories under %s\n",
		command, m.Date, m.Commit, m.NProc, m.CPUModel, m.Kernel, m.DataDir)
}
