package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/s3test"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// forEachBackend runs fn against a directory and against a real
// S3-compatible server (versitygw on loopback).
func forEachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Run("dir", func(t *testing.T) {
		d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
		if err != nil {
			t.Fatal(err)
		}
		fn(t, d)
	})
	t.Run("s3", func(t *testing.T) {
		fn(t, newS3(t, s3test.Start(t)))
	})
}

var bucketSeq atomic.Int32

func newS3(t *testing.T, srv *s3test.Server) *S3 {
	t.Helper()
	bucket := fmt.Sprintf("archive-test-%d", bucketSeq.Add(1))
	srv.MakeBucket(t, bucket)
	s, err := NewS3(S3Options{Endpoint: srv.Endpoint, Bucket: bucket, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func startUploader(t *testing.T, f *fixture, b Backend, mod func(*UploaderOptions)) *Uploader {
	t.Helper()
	o := UploaderOptions{
		Backend: b, Layout: Layout{Prefix: "test"}, Node: "edge-1", Meta: f.meta,
		FS: vfs.Default, Dir: f.dir, Concurrency: 3,
		RetryBase: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond, Poll: 20 * time.Millisecond,
		OnFatal: func(err error) { t.Errorf("uploader fatal: %v", err) },
	}
	if mod != nil {
		mod(&o)
	}
	u, err := StartUploader(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	return u
}

// waitArchived waits until every catalogue entry is marked archived.
func waitArchived(t *testing.T, f *fixture) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := 0
		for _, e := range f.catalogue(t) {
			if !e.Archived {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d segments not archived after 30s", left, len(f.entries))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkArchive lists the archive and checks it holds exactly the
// fixture's segments, each byte-identical to the local file, and a
// catalogue object that describes it.
func checkArchive(t *testing.T, f *fixture, b Backend, l Layout) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	if err := b.List(ctx, l.SegmentsPrefix(), func(o Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2*len(f.entries) {
		t.Fatalf("archive holds %d objects, want %d: %q", len(keys), 2*len(f.entries), keys)
	}
	for _, e := range f.entries {
		local, err := readAll(vfs.Default, filepath.Join(f.dir, e.Name))
		if err != nil {
			t.Fatal(err)
		}
		got := getObject(t, b, l.SegmentKey("edge-1", &e))
		if !bytes.Equal(got, local) {
			t.Fatalf("%s: archived object differs from the local segment", e.Name)
		}
		catKey := l.CatalogueKey("edge-1", &e)
		cat, err := ParseCatalogue(catKey, getObject(t, b, catKey))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(local)
		if cat.FirstSeq != e.FirstSeq || cat.LastSeq != e.LastSeq || cat.Size != e.Size || cat.SHA256 != hex.EncodeToString(sum[:]) || cat.Node != "edge-1" {
			t.Fatalf("%s: catalogue object %+v does not describe the segment", catKey, cat)
		}
	}
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func getObject(t *testing.T, b Backend, key string) []byte {
	t.Helper()
	r, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestUploaderArchivesEverySegment: every sealed segment and its
// catalogue object reach the archive under the documented keys, and every
// entry is marked archived.
func TestUploaderArchivesEverySegment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		base := time.Date(2026, 11, 30, 23, 59, 59, 950_000_000, time.UTC) // the segments span midnight
		f := newFixture(t, 12, 20, base)
		before := uploadedTotal.Get()
		startUploader(t, f, b, nil)
		waitArchived(t, f)
		checkArchive(t, f, b, Layout{Prefix: "test"})
		if n := uploadedTotal.Get() - before; n != uint64(len(f.entries)) {
			t.Fatalf("ankusa_archive_uploaded_segments_total grew by %d, want %d", n, len(f.entries))
		}
		want := "test/segments/node=edge-1/2026/11/30/00000000000000000001-00000000000000000020.seg"
		if k := (Layout{Prefix: "test"}).SegmentKey("edge-1", &f.entries[0]); k != want {
			t.Fatalf("key %q, want %q", k, want)
		}
		if k := (Layout{Prefix: "test"}).SegmentKey("edge-1", &f.entries[len(f.entries)-1]); !strings.Contains(k, "/2026/12/01/") {
			t.Fatalf("key %q: a segment received after midnight is filed under the next day", k)
		}
	})
}

// TestCrashBetweenUploadAndMark: the objects are in the archive but the
// archived mark was never written (a crash in between). The next uploader
// finds the same bytes at each key (If-None-Match refuses the write),
// marks every segment, and leaves the objects as they were.
func TestCrashBetweenUploadAndMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		f := newFixture(t, 6, 30, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
		u := startUploader(t, f, b, nil)
		waitArchived(t, f)
		u.Close()
		// Undo the marks, as if the node died before writing them.
		for _, e := range f.entries {
			if _, _, err := f.meta.UpdateSegment(e.LastSeq, func(e *meta.SegmentEntry) { e.Archived = false }); err != nil {
				t.Fatal(err)
			}
		}
		before := alreadyPresent.Get()
		startUploader(t, f, b, nil)
		waitArchived(t, f)
		if n := alreadyPresent.Get() - before; n != uint64(2*len(f.entries)) {
			t.Fatalf("ankusa_archive_already_present_total grew by %d, want %d (every object found in place)", n, 2*len(f.entries))
		}
		checkArchive(t, f, b, Layout{Prefix: "test"})
	})
}

// TestForeignObjectIsNeverOverwritten: another object already sits at a
// segment's key (two nodes sharing a node.name). The uploader must not
// replace it and must not mark the segment archived, so retention keeps
// the local copy; the other segments are archived.
func TestForeignObjectIsNeverOverwritten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		f := newFixture(t, 3, 10, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
		l := Layout{Prefix: "test"}
		key := l.SegmentKey("edge-1", &f.entries[1])
		foreign := []byte("another node's segment")
		sum := sha256.Sum256(foreign)
		if err := b.Put(context.Background(), key, bytes.NewReader(foreign), int64(len(foreign)), hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
		failures := uploadFailures.Get()
		startUploader(t, f, b, nil)
		deadline := time.Now().Add(20 * time.Second)
		for uploadFailures.Get()-failures < 3 {
			if time.Now().After(deadline) {
				t.Fatal("the uploader did not report the foreign object as a failure")
			}
			time.Sleep(5 * time.Millisecond)
		}
		// The other segments are archived (their uploads may still run
		// when the third failure is counted); the foreign one never is.
		for {
			wrong := ""
			for _, e := range f.catalogue(t) {
				if e.Archived != (e.LastSeq != f.entries[1].LastSeq) {
					wrong = fmt.Sprintf("segment %s archived=%v", e.Name, e.Archived)
				}
			}
			if wrong == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(wrong)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if got := getObject(t, b, key); !bytes.Equal(got, foreign) {
			t.Fatal("the foreign object was overwritten")
		}
	})
}

// flaky fails the first n writes, then passes through.
type flaky struct {
	Backend
	mu   sync.Mutex
	left int
}

func (f *flaky) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	f.mu.Lock()
	fail := f.left > 0
	f.left--
	f.mu.Unlock()
	if fail {
		return errors.New("503 Service Unavailable")
	}
	return f.Backend.Put(ctx, key, r, size, sum)
}

// TestUploadRetries: writes that fail are retried with backoff until they
// pass, each failure is counted, and nothing is marked before its upload.
func TestUploadRetries(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 4, 10, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	failures := uploadFailures.Get()
	startUploader(t, f, &flaky{Backend: d, left: 9}, nil)
	waitArchived(t, f)
	if n := uploadFailures.Get() - failures; n != 9 {
		t.Fatalf("ankusa_archive_upload_failures_total grew by %d, want 9", n)
	}
	checkArchive(t, f, d, Layout{Prefix: "test"})
}

// TestDirPutChecksContent: a write whose content does not match its
// declared SHA-256 leaves no object.
func TestDirPutChecksContent(t *testing.T) {
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = d.Put(ctx, "a/b.seg", strings.NewReader("hello"), 5, strings.Repeat("0", 64))
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Put with a wrong sha256: %v", err)
	}
	if _, err := d.Stat(ctx, "a/b.seg"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Stat after a refused Put: %v", err)
	}
	if err := d.Put(ctx, "a/b.seg", strings.NewReader("hell"), 5, strings.Repeat("0", 64)); err == nil {
		t.Fatal("Put of a short reader passed")
	}
	for _, key := range []string{"", "/abs", "a/../b", "a//b", ".hidden/x", "a/.tmp"} {
		if err := d.Put(ctx, key, strings.NewReader("x"), 1, strings.Repeat("0", 64)); err == nil || errors.Is(err, ErrExists) {
			t.Fatalf("Put(%q) = %v, want a bad key error", key, err)
		}
	}
}

// TestRangedReadsServeRemovedSegments: a segment read through Reader (ranged
// reads of the archived object) gives back every hook.
func TestRangedReadsServeRemovedSegments(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		f := newFixture(t, 2, 200, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
		startUploader(t, f, b, nil)
		waitArchived(t, f)
		r := NewReader(b, Layout{Prefix: "test"}, "edge-1")
		reads := remoteReads.Get()
		for _, e := range f.entries {
			name, ra := r.Open(&e)
			sf, err := segment.OpenReaderAt(name, ra, e.Size)
			if err != nil {
				t.Fatal(err)
			}
			if len(sf.Index) < 3 {
				t.Fatalf("%d blocks: the test wants several", len(sf.Index))
			}
			dec := segment.NewDecoder()
			seq := e.FirstSeq
			for i := range sf.Index {
				raw, err := sf.ReadBlock(i, dec, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = segment.Records(raw, func(p []byte) error {
					var env envelope.Envelope
					if _, err := envelope.Decode(p, &env); err != nil {
						return err
					}
					want := f.hooks[seq-1]
					if env.Seq != seq || env.ID != want.ID || !bytes.Equal(env.Body, want.Body) || env.TenantID != want.TenantID {
						return fmt.Errorf("seq %d: read back %d %s", seq, env.Seq, env.ID)
					}
					seq++
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if seq != e.LastSeq+1 {
				t.Fatalf("%s: read up to seq %d", e.Name, seq-1)
			}
		}
		if remoteReads.Get() == reads {
			t.Fatal("no ranged read was counted")
		}
		// An object that is not there is ErrNotExist, not a corrupt segment.
		missing := f.entries[0]
		missing.FirstSeq, missing.LastSeq = 900, 901
		_, ra := r.Open(&missing)
		if _, err := ra.ReadAt(make([]byte, 10), 0); !errors.Is(err, ErrNotExist) {
			t.Fatalf("read of a missing object: %v", err)
		}
	})
}

// TestPutRefusesWrongContent: content that does not match the SHA-256
// the uploader computed leaves no object behind, on either backend.
func TestPutRefusesWrongContent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		ctx := context.Background()
		sum := sha256.Sum256([]byte("world"))
		if err := b.Put(ctx, "x/y.seg", strings.NewReader("hello"), 5, hex.EncodeToString(sum[:])); err == nil {
			t.Fatal("Put of content that does not match its sha256 passed")
		}
		if _, err := b.Stat(ctx, "x/y.seg"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("after the refused Put: %v, want ErrNotExist", err)
		}
		if err := b.Put(ctx, "x/y.seg", strings.NewReader("world"), 5, hex.EncodeToString(sum[:])); err != nil {
			t.Fatal(err)
		}
		o, err := b.Stat(ctx, "x/y.seg")
		if err != nil || o.Size != 5 || o.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("Stat = %+v, %v", o, err)
		}
		if err := b.Put(ctx, "x/y.seg", strings.NewReader("world"), 5, hex.EncodeToString(sum[:])); !errors.Is(err, ErrExists) {
			t.Fatalf("second Put = %v, want ErrExists", err)
		}
	})
}

// TestMultipartPut: an object larger than a part goes up in parts, reads
// back whole and by range, and is not overwritten.
func TestMultipartPut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b Backend) {
		ctx := context.Background()
		data := make([]byte, 12<<20+12345)
		for i := range data {
			data[i] = byte(i*7 + i>>13)
		}
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		wrong := sha256.Sum256(data[1:])
		if err := b.Put(ctx, "big/one.seg", bytes.NewReader(data), int64(len(data)), hex.EncodeToString(wrong[:])); err == nil {
			t.Fatal("a multipart Put whose content does not match its sha256 passed")
		}
		if _, err := b.Stat(ctx, "big/one.seg"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("after the refused multipart Put: %v, want ErrNotExist", err)
		}
		if err := b.Put(ctx, "big/one.seg", bytes.NewReader(data), int64(len(data)), hexSum); err != nil {
			t.Fatal(err)
		}
		if got := getObject(t, b, "big/one.seg"); !bytes.Equal(got, data) {
			t.Fatal("multipart object reads back different")
		}
		p := make([]byte, 100)
		if err := b.ReadAt(ctx, "big/one.seg", p, 9<<20); err != nil || !bytes.Equal(p, data[9<<20:9<<20+100]) {
			t.Fatalf("ranged read across parts: %v", err)
		}
		if err := b.ReadAt(ctx, "big/one.seg", p, int64(len(data))-50); err == nil {
			t.Fatal("a ranged read past the end passed")
		}
		o, err := b.Stat(ctx, "big/one.seg")
		if err != nil || o.Size != int64(len(data)) || o.SHA256 != hexSum {
			t.Fatalf("Stat = %+v, %v", o, err)
		}
		other := bytes.Repeat([]byte{1}, len(data))
		osum := sha256.Sum256(other)
		if err := b.Put(ctx, "big/one.seg", bytes.NewReader(other), int64(len(other)), hex.EncodeToString(osum[:])); !errors.Is(err, ErrExists) {
			t.Fatalf("multipart Put over an existing object = %v, want ErrExists", err)
		}
		if got := getObject(t, b, "big/one.seg"); !bytes.Equal(got, data) {
			t.Fatal("the object was overwritten by a multipart upload")
		}
	})
}

// vanishing deletes a segment's catalogue entry just before that
// segment's catalogue object is written, so the uploader's archived mark
// finds no entry to mark.
type vanishing struct {
	Backend
	meta   *meta.Store
	catKey string
	seq    uint64
}

func (v *vanishing) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	if key == v.catKey {
		if _, err := v.meta.DeleteSegment(v.seq); err != nil {
			return err
		}
	}
	return v.Backend.Put(ctx, key, r, size, sum)
}

// TestMarkFailureIsFatal (DESIGN.md §6 item 8): an archived mark that
// cannot be written stops the node (OnFatal, once) rather than being
// retried or skipped, and the uploader marks nothing after it.
func TestMarkFailureIsFatal(t *testing.T) {
	d, err := NewDir(filepath.Join(t.TempDir(), "archive"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 3, 10, time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC))
	l := Layout{Prefix: "test"}
	first := f.entries[0]
	b := &vanishing{Backend: d, meta: f.meta, catKey: l.CatalogueKey("edge-1", &first), seq: first.LastSeq}
	fatal := make(chan error, 4)
	startUploader(t, f, b, func(o *UploaderOptions) {
		o.Concurrency = 1
		o.OnFatal = func(err error) { fatal <- err }
	})
	select {
	case err := <-fatal:
		if !strings.Contains(err.Error(), "cannot mark segment "+first.Name+" archived") {
			t.Fatalf("OnFatal got %q, want the failed mark of %s named", err, first.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the archived mark failed and OnFatal was not called within 10s")
	}
	time.Sleep(200 * time.Millisecond) // several polls of the uploader
	select {
	case err := <-fatal:
		t.Fatalf("OnFatal called a second time: %v", err)
	default:
	}
	for _, e := range f.catalogue(t) {
		if e.Archived {
			t.Fatalf("segment %s was marked archived after the node's fatal error", e.Name)
		}
	}
}
