package main

// The crash harness's loadgen: built once per run, started with its stdout
// (the -json report) kept apart from its stderr.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
	"github.com/ankusa/ankusa/tools/loadgen/result"
)

// buildLoadgen builds tools/loadgen into a temporary directory and returns
// its path (TestMain builds the appliance).
func buildLoadgen(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "github.com/ankusa/ankusa/tools/loadgen")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build loadgen (%s): %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return filepath.Join(dir, "loadgen")
}

// loadgenProc is a started loadgen and its stdout.
type loadgenProc struct {
	*proc
	stdout *child.Buffer
}

func startLoadgen(t *testing.T, dir, loadgen string, args ...string) *loadgenProc {
	t.Helper()
	l := &loadgenProc{stdout: &child.Buffer{}}
	l.proc = startCmd(t, dir, l.stdout, loadgen, args...)
	return l
}

// waitFile waits until the process has created path.
func (p *proc) waitFile(path string) {
	p.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if p.exited() {
			p.t.Fatalf("%s exited with %d before it created %s:\n%s", p.name, p.state.ExitCode(), path, p.stderr)
		}
	}
	p.t.Fatalf("%s did not create %s within 30s:\n%s", p.name, path, p.stderr)
}

// parseSummary decodes loadgen's -json report from its stdout.
func parseSummary(t *testing.T, out string) result.Summary {
	t.Helper()
	var s result.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("cannot decode loadgen's -json report: %v\n%s", err, out)
	}
	return s
}

// summaryLine is "5012 requests, 201: 3990, 503: 2; errors 1020 (refused
// 990, reset 30)".
func summaryLine(s result.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests", s.Requests)
	for _, code := range slices.Sorted(maps.Keys(s.Status)) {
		fmt.Fprintf(&b, ", %s: %d", code, s.Status[code])
	}
	fmt.Fprintf(&b, "; errors %d", s.Errors)
	sep := " ("
	for _, k := range slices.Sorted(maps.Keys(s.ErrorKinds)) {
		if n := s.ErrorKinds[k]; n > 0 {
			fmt.Fprintf(&b, "%s%s %d", sep, k, n)
			sep = ", "
		}
	}
	if sep == ", " {
		b.WriteString(")")
	}
	return b.String()
}
