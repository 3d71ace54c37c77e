package archive

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/segment"
)

// tamperBackend hands out segment objects with one byte flipped (a
// download damaged on the way), or cut short.
type tamperBackend struct {
	Backend
	cut bool
}

func (t tamperBackend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := t.Backend.Get(ctx, key)
	if err != nil || !strings.HasSuffix(key, segment.Suffix) {
		return rc, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	if t.cut {
		data = data[:len(data)-1]
	} else {
		data[len(data)/2] ^= 0x10
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// archivedFixture uploads a fixture's segments to b and returns it with
// a copy of each segment file, by name.
func archivedFixture(t *testing.T, b Backend) (*fixture, map[string][]byte) {
	t.Helper()
	f := newFixture(t, 2, 300, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if f.dicts != 1 {
		t.Fatalf("%d of the fixture's segments have a dictionary, want 1 (the second): a restore must carry it", f.dicts)
	}
	u := startUploader(t, f, b, nil)
	waitArchived(t, f)
	u.Close()
	copies := map[string][]byte{}
	for _, e := range f.entries {
		data, err := os.ReadFile(filepath.Join(f.dir, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		copies[e.Name] = data
	}
	return f, copies
}

func flipLocal(t *testing.T, path string, off int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x01
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestRestorer(t *testing.T, f *fixture, b Backend) *Restorer {
	t.Helper()
	r, err := NewRestorer(RestorerOptions{Backend: b, Layout: Layout{Prefix: "test"}, Node: "edge-1", FS: vfs.Default, Dir: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRestoreVerified: a damaged local segment is replaced by the
// archived copy, byte for byte, on a directory and on S3; no temporary
// file is left.
func TestRestoreVerified(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		f, copies := archivedFixture(t, b)
		e := f.entries[1]
		path := filepath.Join(f.dir, e.Name)
		flipLocal(t, path, 200)
		if err := newTestRestorer(t, f, b).Restore(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, copies[e.Name]) {
			t.Fatal("the restored file is not the archived copy")
		}
		sf, err := segment.OpenFile(vfs.Default, path)
		if err != nil {
			t.Fatal(err)
		}
		defer sf.Close()
		if err := sf.Verify(segment.NewDecoder()); err != nil {
			t.Fatal(err)
		}
		assertNoRestoring(t, f.dir)
	})
}

// TestRestoreRefusesBadDownload: a copy whose SHA-256 or size differs
// from the catalogue object's, a missing object, or a catalogue object
// for another segment is refused with an error saying which, and the
// damaged file stays as it was (no rename, no temporary file left).
func TestRestoreRefusesBadDownload(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := archivedFixture(t, d)
	e := f.entries[0]
	path := filepath.Join(f.dir, e.Name)
	flipLocal(t, path, 300)
	damaged, _ := os.ReadFile(path)
	cases := []struct {
		name string
		b    Backend
		mod  func(*Restorer)
		want string
	}{
		{"flipped byte", tamperBackend{Backend: d}, nil, "sha256"},
		{"short object", tamperBackend{Backend: d, cut: true}, nil, "bytes"},
		{"other node's keys", d, func(r *Restorer) { r.o.Node = "edge-2" }, "no object at the key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRestorer(t, f, c.b)
			if c.mod != nil {
				c.mod(r)
			}
			err := r.Restore(context.Background(), &e)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), e.Name) {
				t.Fatalf("Restore: %v, want an error naming %s and saying %q", err, e.Name, c.want)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, damaged) {
				t.Fatal("a refused restore changed the local file")
			}
			assertNoRestoring(t, f.dir)
		})
	}
	t.Run("catalogue of another size", func(t *testing.T) {
		other := e
		other.Size++
		err := newTestRestorer(t, f, d).Restore(context.Background(), &other)
		if err == nil || !strings.Contains(err.Error(), "describes") {
			t.Fatalf("Restore: %v, want the catalogue mismatch", err)
		}
	})
	if _, err := NewRestorer(RestorerOptions{}); err == nil {
		t.Fatal("NewRestorer without a backend succeeded")
	}
}

func assertNoRestoring(t *testing.T, dir string) {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".restoring") {
			t.Fatalf("%s left in the segment directory", n.Name())
		}
	}
}

// TestUploadRefusesDamagedSegment: a segment damaged on local disk before
// its upload is not archived (the archive's copy is what a restore would
// bring back); once the file is whole again it is.
func TestUploadRefusesDamagedSegment(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 2, 300, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := f.entries[0]
	path := filepath.Join(f.dir, e.Name)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipLocal(t, path, 100)
	failures := uploadFailures.Get()
	u := startUploader(t, f, d, nil)
	deadline := time.Now().Add(10 * time.Second)
	for uploadFailures.Get() == failures {
		if time.Now().After(deadline) {
			t.Fatal("the damaged segment's upload did not fail")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range f.catalogue(t) {
		if c.LastSeq == e.LastSeq && c.Archived {
			t.Fatal("a damaged segment was marked archived")
		}
	}
	if _, err := d.Stat(context.Background(), Layout{Prefix: "test"}.SegmentKey("edge-1", &e)); err == nil {
		t.Fatal("a damaged segment was uploaded")
	}
	if err := os.WriteFile(path, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	waitArchived(t, f)
	u.Close()
}
