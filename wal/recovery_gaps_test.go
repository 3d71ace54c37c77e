package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// TestFlipNearTailSameMillisecond: synced batches that share a millisecond
// (a fast node, or a clock that stepped back) are still separate batches.
// A flipped byte in any record but the last batch's must be refused, never
// cut as a torn tail: every record after it was acknowledged.
func TestFlipNearTailSameMillisecond(t *testing.T) {
	src, acked := buildLog(t, 6, 0, 0, 0) // frozen clock: one batch per commit, one millisecond
	recs := mustReadLog(t, src, dir)
	if len(recs) < 7 {
		t.Fatalf("%d records, want a tenant record and 6 hooks at least", len(recs))
	}
	for v := 0; v < len(recs)-1; v++ {
		rec := recs[v]
		if rec.File != recs[len(recs)-1].File {
			continue
		}
		path := src.PathJoin(dir, src.PathBase(rec.File))
		whole := readFile(t, src, path)
		for _, i := range []int{0, 5, 9, 14, 20, rec.Size - 1} {
			what := fmt.Sprintf("byte %d of record %d (%s@%d)", i, v, rec.File, rec.Offset)
			mem := copyFS(t, src, dir)
			damaged := bytes.Clone(whole)
			damaged[int(rec.Offset)+i] ^= 0x40
			writeFile(t, mem, path, damaged)
			_, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode})
			if !errors.Is(err, wal.ErrCorrupt) {
				t.Fatalf("%s: strict Open = %v, want ErrCorrupt (the %d hooks after it were acknowledged)", what, err, len(acked))
			}
		}
	}
}

// TestMissingMiddleFile: a WAL file missing from the middle of the log is
// corruption (its acknowledged hooks are gone), not a seq jump to accept.
// Truncate recovery cuts the log at the gap.
func TestMissingMiddleFile(t *testing.T) {
	src, _ := buildLog(t, 40, 1<<10, 0, 0)
	files := walFiles(t, src, dir)
	if len(files) < 4 {
		t.Fatalf("%d files, want at least 4", len(files))
	}
	mem := copyFS(t, src, dir)
	missing := files[2]
	if err := mem.Remove(mem.PathJoin(dir, missing)); err != nil {
		t.Fatal(err)
	}
	_, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode})
	if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("strict Open with %s missing = %v, want ErrCorrupt naming it", missing, err)
	}
	kept := mustReadLog(t, copyFS(t, src, dir), dir)
	var before int
	for _, r := range kept {
		if r.File < mem.PathJoin(dir, missing) && r.Kind == envelope.KindEnvelope {
			before++
		}
	}
	var logs logLines
	w, err := wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode, Recovery: wal.RecoverTruncate, Logf: logs.Logf})
	if err != nil {
		t.Fatalf("truncate Open: %v", err)
	}
	if w.LastSeq() != uint64(before) {
		t.Fatalf("LastSeq %d after cutting at the gap, want %d", w.LastSeq(), before)
	}
	if _, err := commit(w, hook{tenant: "t1", tag: "after"}); err != nil {
		t.Fatal(err)
	}
	closeWAL(t, w)
	after := walFiles(t, mem, dir)
	if after[len(after)-1] != missing {
		t.Fatalf("files after truncate %v: the new file should take the missing number %s", after, missing)
	}
	// And the cut log reopens strictly.
	w, err = wal.Open(wal.Options{FS: mem, Dir: dir, Node: testNode})
	if err != nil {
		t.Fatalf("strict reopen after the cut: %v", err)
	}
	closeWAL(t, w)
}
