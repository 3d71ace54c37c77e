package filesink_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/sink/filesink"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/sinktest"
)

func newSink(t *testing.T, path string) *filesink.Sink {
	t.Helper()
	s, err := filesink.New(filesink.Options{Spec: config.Sink{ID: "f", Type: "file", Path: path}, Source: "stripe"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readLines reads the file's lines, each decoded as a JSON envelope.
func readLines(t *testing.T, path string) []envelope.Envelope {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline: %q", path, b[max(0, len(b)-40):])
	}
	var out []envelope.Envelope
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e envelope.Envelope
		if err := e.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("line %d of %s is not a JSON envelope: %v\n%.200s", len(out)+1, path, err, sc.Bytes())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Each delivery is one line: the hook's JSON form, byte for byte as the
// envelope format sends it, then a newline; the file and its directory
// are made by the first delivery, the file mode 0600.
func TestDeliverAppendsEnvelopeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "deliveries.ndjson")
	s := newSink(t, path)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("New made %s (%v); the first Deliver should", path, err)
	}
	var want []byte
	var ids []envelope.ID
	for i := range 3 {
		e := sinktest.Envelope()
		if i == 1 {
			e.Body = []byte{0xff, 0x00, 'x'} // not UTF-8: base64 in the JSON form
		}
		if err := sinktest.Deliver(s, e, 1, "f", 10*time.Second); err != nil {
			t.Fatalf("deliver %d: %v", i, err)
		}
		want = append(e.AppendJSON(want), '\n')
		ids = append(ids, e.ID)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
	lines := readLines(t, path)
	for i, e := range lines {
		if e.ID != ids[i] || e.TenantID != "acme" || e.SourceID != "stripe" {
			t.Fatalf("line %d: id %s tenant %q source %q; want %s acme stripe", i+1, e.ID, e.TenantID, e.SourceID, ids[i])
		}
	}
	if string(lines[1].Body) != "\xff\x00x" {
		t.Fatalf("line 2's body %q; want the bytes delivered", lines[1].Body)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v; want 0600", path, err, fi.Mode().Perm())
	}
	// A sink opened again appends: what was there stays.
	s.Close()
	s2 := newSink(t, path)
	e := sinktest.Envelope()
	if err := sinktest.Deliver(s2, e, 1, "f", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if lines := readLines(t, path); len(lines) != 4 || lines[3].ID != e.ID {
		t.Fatalf("after a second sink's delivery the file has %d lines; want 4, the last %s", len(lines), e.ID)
	}
}

// Deliveries in flight at once each leave one whole line, bodies larger
// than a pipe's atomic write included, and every one of them is there.
func TestConcurrentDeliveriesWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deliveries.ndjson")
	s := newSink(t, path)
	const workers, each = 32, 20
	var mu sync.Mutex
	want := map[envelope.ID]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := sinktest.Envelope()
				// Sizes from a few bytes to 96KiB.
				e.Body = bytes.Repeat([]byte{'a' + byte(w%26)}, (w*each+i)*157%(96<<10)+1)
				if err := sinktest.Deliver(s, e, 1, "f", 30*time.Second); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				want[e.ID] = len(e.Body)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != workers*each {
		t.Fatalf("%d lines; want %d", len(lines), workers*each)
	}
	// Deliveries in flight together share an fsync.
	if n := s.Syncs(); n >= workers*each {
		t.Errorf("%d fsyncs for %d deliveries from %d goroutines; want them grouped", n, workers*each, workers)
	} else {
		t.Logf("%d fsyncs for %d deliveries", n, workers*each)
	}
	for _, e := range lines {
		n, ok := want[e.ID]
		if !ok || n != len(e.Body) {
			t.Fatalf("line of %s with a %d-byte body: delivered %v with %d", e.ID, len(e.Body), ok, n)
		}
		delete(want, e.ID)
	}
}

// A path the sink cannot write is a retryable error naming the path, and
// the sink writes once the path can be made.
func TestUnwritablePathIsRetryable(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("a file where the directory should be"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "deliveries.ndjson")
	s := newSink(t, path)
	err := sinktest.Deliver(s, sinktest.Envelope(), 1, "f", 10*time.Second)
	var de *dispatch.Error
	if !errors.As(err, &de) || de.Permanent || !strings.Contains(err.Error(), path) {
		t.Fatalf("Deliver to %s: %v (%T); want a retryable *dispatch.Error naming the path", path, err, err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	e := sinktest.Envelope()
	if err := sinktest.Deliver(s, e, 2, "f", 10*time.Second); err != nil {
		t.Fatalf("Deliver once the path can be made: %v", err)
	}
	if lines := readLines(t, path); len(lines) != 1 || lines[0].ID != e.ID {
		t.Fatalf("%d lines; want the one of %s", len(lines), e.ID)
	}
}

// A line a crash cut short is ended when the file is opened, so the next
// line is whole.
func TestCutLineEnded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deliveries.ndjson")
	e1 := sinktest.Envelope()
	cut := e1.AppendJSON(nil)
	cut = cut[:len(cut)/2]
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSink(t, path)
	e2 := sinktest.Envelope()
	if err := sinktest.Deliver(s, e2, 1, "f", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := append(append(append([]byte{}, cut...), '\n'), append(e2.AppendJSON(nil), '\n')...)
	if !bytes.Equal(got, want) {
		t.Fatalf("file:\n%q\nwant:\n%q", got, want)
	}
}

func TestDeliverAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deliveries.ndjson")
	s := newSink(t, path)
	s.Close()
	err := sinktest.Deliver(s, sinktest.Envelope(), 1, "f", 10*time.Second)
	var de *dispatch.Error
	if !errors.Is(err, filesink.ErrClosed) || !errors.As(err, &de) || de.Permanent {
		t.Fatalf("Deliver after Close: %v; want a retryable ErrClosed", err)
	}
	if s.Durable() {
		t.Fatal("a file sink says it is durable; it is not, in the sense of wal.type: none")
	}
}

// New and Check hold a spec to config's rules: the messages name the key.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		spec config.Sink
		want string
	}{
		{config.Sink{Type: "file"}, "path: required for a file sink"},
		{config.Sink{Type: "file", Path: "./x", URL: "http://r.example/"}, "url: is a key of http, rabbitmq and nats sinks; this sink is file"},
		{config.Sink{Type: "file", Path: "./x", Format: "raw"}, `format: "raw"; a file sink writes one JSON envelope a line`},
		{config.Sink{Type: "file", Path: "./x", ConnectTimeout: config.Duration(time.Second)}, "connect_timeout: a file sink connects to nothing"},
		{config.Sink{Type: "http", Path: "./x"}, `sink type "http" is not file`},
		{config.Sink{Type: "file", Path: "./x"}, ""},
	} {
		err := filesink.Check(c.spec)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && !strings.HasPrefix(got, c.want)) {
			t.Errorf("Check(%+v) = %v; want %q", c.spec, err, c.want)
		}
		if _, err := filesink.New(filesink.Options{Spec: c.spec, Source: "s"}); (err == nil) != (c.want == "") {
			t.Errorf("New(%+v) = %v; want an error %v", c.spec, err, c.want != "")
		}
	}
}

// A failed write (a full disk: /dev/full answers every write with
// ENOSPC) is a retryable error naming the path and the cause.
func TestFullDiskIsRetryable(t *testing.T) {
	s := newSink(t, "/dev/full")
	err := sinktest.Deliver(s, sinktest.Envelope(), 1, "f", 10*time.Second)
	var de *dispatch.Error
	if !errors.As(err, &de) || de.Permanent || !strings.Contains(err.Error(), "cannot append to /dev/full") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Deliver to /dev/full: %v; want a retryable *dispatch.Error naming the path and the full disk", err)
	}
}
