package hostinfo

import (
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	// This test runs inside the repository's checkout, on Linux.
	if c := Commit(); c == "unknown" || strings.ContainsAny(c[:1], " \n") {
		t.Fatalf("Commit() = %q, want a short hash", c)
	}
	if m := CPUModel(); m == "" || m == "unknown" {
		t.Fatalf("CPUModel() = %q", m)
	}
	if k := Kernel(); k == "" || k == "unknown" {
		t.Fatalf("Kernel() = %q", k)
	}
}
