package segment_test

import (
	"testing"

	"github.com/ankusa/ankusa/segment"
)

// TestStem: a stem names its seq range and parses back to it; seqs start
// at 1, so a stem with first 0, or last below first, names no segment.
func TestStem(t *testing.T) {
	if got := segment.FileName(1, 20); got != "00000000000000000001-00000000000000000020.seg" {
		t.Fatalf("FileName(1, 20) = %q", got)
	}
	for _, tc := range []struct {
		stem        string
		first, last uint64
		ok          bool
	}{
		{segment.Stem(1, 20), 1, 20, true},
		{segment.Stem(7, 7), 7, 7, true},
		{"3-9", 3, 9, true},
		{segment.Stem(0, 20), 0, 0, false},
		{segment.Stem(9, 3), 0, 0, false},
		{"00000000000000000001", 0, 0, false},
		{"a-b", 0, 0, false},
		{segment.FileName(1, 20), 0, 0, false},
	} {
		first, last, ok := segment.ParseStem(tc.stem)
		if ok != tc.ok || (ok && (first != tc.first || last != tc.last)) {
			t.Errorf("ParseStem(%q) = %d, %d, %v; want %d, %d, %v", tc.stem, first, last, ok, tc.first, tc.last, tc.ok)
		}
	}
}
