package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The node runs Go code on one more P than the cores it may use, unless
// GOMAXPROCS is set to a positive number in its environment, which it then
// leaves alone (cli/procs.go). go_gomaxprocs on /metrics is the runtime's own figure.
func TestGOMAXPROCS(t *testing.T) {
	// The node inherits this process's environment: without GOMAXPROCS
	// for the first start, whatever the test was run with.
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")

	n := newTestNode(t)
	writeConfig(t, n, strings.Replace(fmt.Sprintf(nodeYAML, n.dataDir, n.listen, n.admin), "level: warn", "level: info", 1))
	p := serveWithEnv(t, n)
	line := procsLogLine(t, p.stderr.String(), "GOMAXPROCS: one more than the cores the node may use")
	cores, procs := int(line["cores"].(float64)), int(line["procs"].(float64))
	if cores < 1 || procs != cores+1 {
		t.Fatalf("the node logged cores %d, procs %d: want procs = cores + 1", cores, procs)
	}
	if got := metric(t, n.admin, "go_gomaxprocs"); int(got) != procs {
		t.Fatalf("go_gomaxprocs = %v, want %d", got, procs)
	}
	p.stop()

	// A value the Go runtime ignores is named in a warning, and the node
	// adds its one to the default as if it were unset.
	p = serveWithEnv(t, n, "GOMAXPROCS=two")
	warn := procsLogLine(t, p.stderr.String(), "GOMAXPROCS in the environment is not a positive number: the Go runtime ignored it")
	if warn["level"] != "warn" || warn["GOMAXPROCS"] != "two" {
		t.Fatalf("with GOMAXPROCS=two the node logged %v", warn)
	}
	if got := metric(t, n.admin, "go_gomaxprocs"); int(got) != procs {
		t.Fatalf("with GOMAXPROCS=two go_gomaxprocs = %v, want %d", got, procs)
	}
	p.stop()

	p = serveWithEnv(t, n, "GOMAXPROCS=1")
	line = procsLogLine(t, p.stderr.String(), "GOMAXPROCS set in the environment: left as it is")
	if line["GOMAXPROCS"] != "1" || line["procs"].(float64) != 1 {
		t.Fatalf("with GOMAXPROCS=1 the node logged %v", line)
	}
	if got := metric(t, n.admin, "go_gomaxprocs"); got != 1 {
		t.Fatalf("with GOMAXPROCS=1 in the environment go_gomaxprocs = %v, want 1", got)
	}
	p.stop()
}

// procsLogLine is the JSON log line whose msg is msg.
func procsLogLine(t *testing.T, log, msg string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(log, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			return m
		}
	}
	t.Fatalf("no log line %q in:\n%s", msg, log)
	return nil
}
