package crash

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// summary is the part of loadgen's -json report the harness logs (the
// format is in tools/loadgen's package doc).
type summary struct {
	Requests   int64            `json:"requests"`
	Status     map[string]int64 `json:"status"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"error_kinds"`
}

// parseSummary decodes loadgen's -json report from its stdout.
func parseSummary(t *testing.T, out string) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("cannot decode loadgen's -json report: %v\n%s", err, out)
	}
	return s
}

// String is "5012 requests, 201: 3990, 503: 2; errors 1020 (refused 990, reset 30)".
func (s summary) String() string {
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
