package meta

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A source record rewritten (a rewrap sealing what was in clear) and then
// compacted leaves none of its old bytes in the store's files: not in an
// sstable, and not in a log file pebble would otherwise recycle. Many
// records and several flushes, so old values sit in older logs and
// sstables too, as on a node that ran a while before its key was set.
func TestCompactSourceRecordsDropsOldValues(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	clear := func(i int) []byte { return []byte(fmt.Sprintf(`{"secret":"CLEAR-SECRET-%05d"}`, i)) }
	const n = 3000
	for i := 0; i < n; i++ {
		b := s.NewBatch()
		b.PutSource("acme", fmt.Sprintf("s%05d", i), clear(i))
		b.PutMirrored(MirrorSource, "acme", fmt.Sprintf("m%05d", i), 1, clear(i))
		if err := b.Commit(Sync); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if i%1000 == 999 {
			if err := s.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < n; i++ {
		b := s.NewBatch()
		b.PutSource("acme", fmt.Sprintf("s%05d", i), []byte(`{"sealed":"x"}`))
		b.PutMirrored(MirrorSource, "acme", fmt.Sprintf("m%05d", i), 2, []byte(`{"sealed":"x"}`))
		if err := b.Commit(Sync); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if found := filesHolding(t, dir, []byte("CLEAR-SECRET-")); len(found) == 0 {
		t.Fatal("before the compaction no file holds an old value: the test proves nothing")
	}
	if err := s.CompactSourceRecords(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if found := filesHolding(t, dir, []byte("CLEAR-SECRET-")); len(found) > 0 {
		t.Errorf("old values are still in %v after the compaction", found)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := 0
	if err := s.Sources(func(_, _ string, rec []byte) error {
		if string(rec) != `{"sealed":"x"}` {
			t.Errorf("a record reads %q after the compaction", rec)
		}
		got++
		return nil
	}); err != nil || got != n {
		t.Fatalf("%d records after the compaction (%v), want %d", got, err, n)
	}
}

func filesHolding(t *testing.T, dir string, needle []byte) (found []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			found = append(found, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
