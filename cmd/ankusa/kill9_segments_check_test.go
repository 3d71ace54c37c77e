package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/segment"
)

// TestTiling: the seq ranges of the segments must run from 1 with no gap
// and no overlap.
func TestTiling(t *testing.T) {
	seg := func(first, last uint64) segName {
		return segName{name: segment.FileName(first, last), first: first, last: last}
	}
	for _, tc := range []struct {
		name     string
		segs     []segName
		sealed   uint64
		problems int
	}{
		{"none", nil, 0, 0},
		{"tiled", []segName{seg(1, 4), seg(5, 5), seg(6, 9)}, 9, 0},
		{"one", []segName{seg(1, 10)}, 10, 0},
		{"not from 1", []segName{seg(2, 4)}, 4, 1},
		{"gap", []segName{seg(1, 4), seg(6, 9)}, 9, 1},
		{"overlap", []segName{seg(1, 4), seg(4, 9)}, 9, 1},
		{"same range twice", []segName{seg(1, 4), seg(1, 4)}, 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sealed, problems := tiling(tc.segs)
			if sealed != tc.sealed || len(problems) != tc.problems {
				t.Fatalf("sealed %d, %d problems (%s), want %d, %d", sealed, len(problems), strings.Join(problems, "; "), tc.sealed, tc.problems)
			}
		})
	}
}

// TestListSegments: sealed segments sort by first seq; partial segments
// and anything else are told apart.
func TestListSegments(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		segment.FileName(5, 9), segment.FileName(1, 4), "00000000000000000010.partial",
		segment.FileName(10, 12) + ".corrupt", "00000000000000000001-00000000000000000004x.seg", "7-9.seg",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.segs) != 2 || d.segs[0].first != 1 || d.segs[0].last != 4 || d.segs[1].first != 5 || d.segs[1].last != 9 {
		t.Fatalf("segments %+v, want 1..4 and 5..9", d.segs)
	}
	if len(d.partials) != 1 || len(d.others) != 3 {
		t.Fatalf("partials %q, others %q: want 1 and 3", d.partials, d.others)
	}
	if d, err := listSegments(filepath.Join(dir, "missing")); err != nil || len(d.segs)+len(d.partials)+len(d.others) != 0 {
		t.Fatalf("a missing directory lists as %+v, %v: want empty", d, err)
	}
}

// TestSealingTally: a boot must remove exactly the partial segments the
// SIGKILL before it left, and set none aside.
func TestSealingTally(t *testing.T) {
	var s sealingTally
	s.add(boot{sealing: true, partialsLeft: 1}, 0)
	s.add(boot{recovered: recovery{removed: 1, adopted: 1}}, 1)
	if len(s.problems) != 0 || s.sealing != 1 || s.partialsLeft != 1 || s.removed != 1 || s.adopted != 1 {
		t.Fatalf("%+v: want a clean tally", s)
	}
	s.add(boot{}, 1)                                             // a partial left, not removed
	s.add(boot{recovered: recovery{removed: 1, setAside: 1}}, 0) // removed what was not there, set one aside
	if len(s.problems) != 3 {
		t.Fatalf("%d problems (%q), want 3", len(s.problems), s.problems)
	}
	if r := parseRecovery(`{"msg":"removed a partial segment; its hooks"}` + "\n" + `{"msg":"adopted a whole segment missing"}`); r != (recovery{removed: 1, adopted: 1}) {
		t.Fatalf("parseRecovery: %+v", r)
	}
}
