package benchkit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc (100 on every
// Linux this runs on).
const clockTicks = 100

// CPUSeconds is the process's user plus system CPU time so far, from
// /proc/PID/stat (fields 14 and 15).
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(string(data))
}

// statFields are the fields of a /proc/PID/stat line from field 3 (the
// state) on. The command name (field 2) may hold spaces and parentheses,
// so the fields are counted from the last ')'.
func statFields(stat string) ([]string, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(stat[i+1:]), true
}

// ParseStatCPU reads utime and stime from a /proc/PID/stat line, in
// seconds.
func ParseStatCPU(stat string) (float64, error) {
	f, ok := statFields(stat)
	if !ok {
		return 0, fmt.Errorf("cannot parse /proc/PID/stat %q", stat)
	}
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("cannot parse /proc/PID/stat %q: too few fields", stat)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cannot parse utime and stime in /proc/PID/stat %q", stat)
	}
	return float64(utime+stime) / clockTicks, nil
}

// ParentPID is the process's parent, or 0 where /proc does not say.
func ParentPID(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f, ok := statFields(string(data))
	if !ok || len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// MachineBusy is the CPU time all cores have spent busy (user, nice,
// system, irq, softirq, steal) so far, from /proc/stat. With tick-based
// accounting (no CONFIG_IRQ_TIME_ACCOUNTING) a softirq tick is charged to
// the task it interrupted as well, so busy time less that of the
// processes measured is what other processes used.
func MachineBusy() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("cannot read /proc/stat: %w", err)
	}
	return ParseProcStat(string(data))
}

// ParseProcStat is the busy CPU seconds of the "cpu" line of /proc/stat.
func ParseProcStat(stat string) (float64, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("cannot parse /proc/stat %q", line)
	}
	var busy uint64
	// user nice system idle iowait irq softirq steal: all but idle and iowait.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cannot parse /proc/stat %q", line)
		}
		busy += v
	}
	return float64(busy) / clockTicks, nil
}

// PeakRSS is the process's peak resident set (VmHWM) in bytes.
func PeakRSS(pid int) (float64, error) { return statusBytes(pid, "VmHWM") }

// RSS is the process's resident set now (VmRSS) in bytes.
func RSS(pid int) (float64, error) { return statusBytes(pid, "VmRSS") }

func statusBytes(pid int, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s of process %d: %w", field, pid, err)
	}
	return ParseStatus(string(data), field)
}

// ParseStatus reads a field given in kB (VmHWM, VmRSS) from a
// /proc/PID/status, in bytes.
func ParseStatus(status, field string) (float64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cannot parse %q", line)
			}
			return float64(kb) * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/PID/status", field)
}

// ResetPeakRSS sets VmHWM back to the current RSS (Linux 4.0 and later),
// so that the peak covers the measured window only. It reports whether the
// kernel took it.
func ResetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}
