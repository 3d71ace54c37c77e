package archive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func verifyAll(t *testing.T, b Backend) (VerifyStats, []Problem) {
	t.Helper()
	var probs []Problem
	st, err := Verify(context.Background(), b, Layout{Prefix: "test"}, "", func(p Problem) { probs = append(probs, p) })
	if err != nil {
		t.Fatal(err)
	}
	if st.Problems != len(probs) {
		t.Fatalf("stats count %d problems, %d reported", st.Problems, len(probs))
	}
	return st, probs
}

// TestVerifyClean: an archive as the uploader wrote it has no problem, on
// a directory and on S3.
func TestVerifyClean(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		f, _ := archivedFixture(t, b)
		st, probs := verifyAll(t, b)
		if len(probs) != 0 || st.Segments != len(f.entries) || st.Bytes != f.entries[0].Size+f.entries[1].Size {
			t.Fatalf("stats %+v, problems %v; want %d segments, no problem", st, probs, len(f.entries))
		}
	})
}

// TestVerifyFindsDamage: a flipped byte in a segment object, a segment
// object without its catalogue object, a catalogue object without its
// segment, a catalogue object that disagrees with its segment and a key
// outside the layout are each one problem line naming the object.
func TestVerifyFindsDamage(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, 4, 200, base)
	if f.dicts != 3 {
		t.Fatalf("%d of the fixture's segments have a dictionary, want 3 (all but the first)", f.dicts)
	}
	u := startUploader(t, f, d, nil)
	waitArchived(t, f)
	u.Close()
	l := Layout{Prefix: "test"}
	path := func(key string) string {
		p, err := d.path(key)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e := f.entries
	// 0: a flipped byte; 1: no catalogue object; 2: no segment object;
	// 3: a catalogue object whose sha256 is another's.
	seg0 := path(l.SegmentKey("edge-1", &e[0]))
	data, _ := os.ReadFile(seg0)
	data[len(data)/3] ^= 0x40
	os.WriteFile(seg0, data, 0o644)
	os.Remove(path(l.CatalogueKey("edge-1", &e[1])))
	os.Remove(path(l.SegmentKey("edge-1", &e[2])))
	cat3 := path(l.CatalogueKey("edge-1", &e[3]))
	c, _ := os.ReadFile(cat3)
	os.WriteFile(cat3, []byte(strings.Replace(string(c), `"sha256":"`, `"sha256":"0`, 1)), 0o644)
	junk := filepath.Join(filepath.Dir(seg0), "notes.txt")
	os.WriteFile(junk, []byte("x"), 0o644)

	st, probs := verifyAll(t, d)
	want := []struct{ key, what string }{
		{l.SegmentKey("edge-1", &e[0]), "sha256"},
		{l.SegmentKey("edge-1", &e[1]), "no catalogue object"},
		{l.CatalogueKey("edge-1", &e[2]), "no segment object"},
		{l.CatalogueKey("edge-1", &e[3]), "sha256"},
		{"notes.txt", "not an object of the archive's layout"},
	}
	for _, w := range want {
		found := false
		for _, p := range probs {
			if strings.HasSuffix(p.Key, w.key) && strings.Contains(p.What, w.what) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem %q for %s; got %v", w.what, w.key, probs)
		}
	}
	if len(probs) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(probs), len(want), probs)
	}
	if st.Segments != 3 {
		t.Errorf("%d segment objects checked, want 3", st.Segments)
	}
}
