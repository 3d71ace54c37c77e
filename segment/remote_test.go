package segment_test

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// memRemote is an archive in memory: copies of segment files by name,
// read by range, with every read recorded.
type memRemote struct {
	mu      sync.Mutex
	objects map[string][]byte
	reads   atomic.Int64
	bytes   atomic.Int64
	down    atomic.Bool
}

func (m *memRemote) Open(e *meta.SegmentEntry) (string, io.ReaderAt) {
	return "mem:" + e.Name, readerAtFunc(func(p []byte, off int64) (int, error) {
		if m.down.Load() {
			return 0, errors.New("archive unreachable")
		}
		m.mu.Lock()
		data, ok := m.objects[e.Name]
		m.mu.Unlock()
		if !ok {
			return 0, fmt.Errorf("no object %s", e.Name)
		}
		if off+int64(len(p)) > int64(len(data)) {
			return 0, io.ErrUnexpectedEOF
		}
		m.reads.Add(1)
		m.bytes.Add(int64(len(p)))
		return copy(p, data[off:]), nil
	})
}

type readerAtFunc func(p []byte, off int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

// TestRemovedSegmentsReadFromRemote: once a segment is archived and
// retention removed the local file, fetch by id and scans read it from
// the archive with ranged reads (never the whole object per hook), and an
// unreachable archive is an error to retry, not a hook that is gone.
func TestRemovedSegmentsReadFromRemote(t *testing.T) {
	fs := vfs.NewMem()
	clock := newFakeClock()
	remote := &memRemote{objects: map[string][]byte{}}
	o := nodeOptions{retainLocal: time.Hour, remote: remote,
		archiving: true, dispatch: checkpointAtTop}
	n, hooks := retentionNode(t, fs, clock, o)
	entries := n.catalogue()
	for _, e := range entries {
		remote.objects[e.Name] = readMemFile(t, fs, fs.PathJoin(segDir, e.Name))
		if _, ok, err := n.meta.UpdateSegment(e.LastSeq, func(e *meta.SegmentEntry) { e.Archived = true }); err != nil || !ok {
			t.Fatalf("marking %s archived: %v %v", e.Name, ok, err)
		}
	}
	clock.advance(2 * time.Hour)
	waitFor(t, "the sweep removed nothing", func() bool { return len(removed(n)) == len(entries) })
	n.sync()
	for _, e := range n.catalogue() {
		if !e.Archived || !e.Removed {
			t.Fatalf("%s: archived=%v removed=%v: the removed mark undid the archived one", e.Name, e.Archived, e.Removed)
		}
		if _, err := fs.Stat(fs.PathJoin(segDir, e.Name)); err == nil {
			t.Fatalf("%s is still on local disk", e.Name)
		}
	}
	for i := range hooks {
		checkFetch(t, n.store, &hooks[i])
	}
	var total int64
	for _, data := range remote.objects {
		total += int64(len(data))
	}
	if remote.reads.Load() == 0 {
		t.Fatal("no fetch read the archive")
	}
	if avg := remote.bytes.Load() / remote.reads.Load(); avg >= total/int64(len(entries)) {
		t.Fatalf("reads of %d bytes on average: fetches must read ranges, not whole segments", avg)
	}
	seqs := scanSeqs(t, n.store, 1, hooks[len(hooks)-1].Seq)
	if len(seqs) != len(hooks) {
		t.Fatalf("scan over removed segments met %d hooks, want %d", len(seqs), len(hooks))
	}

	// A fresh store (no cached files or blocks) with the archive down:
	// the fetch fails with an error that is neither ErrRemoved nor
	// ErrNotFound, so dispatch retries instead of dead-lettering.
	n.close()
	remote.down.Store(true)
	n = openNode(t, fs, o)
	_, err := n.store.Fetch(hooks[3].ID)
	if err == nil || errors.Is(err, segment.ErrRemoved) || errors.Is(err, segment.ErrNotFound) {
		t.Fatalf("fetch with the archive down: %v, want a transient error", err)
	}
	remote.down.Store(false)
	checkFetch(t, n.store, &hooks[3])

	// Without a remote a removed segment's hooks are ErrRemoved.
	n.close()
	o.remote = nil
	n = openNode(t, fs, o)
	if _, err := n.store.Fetch(hooks[3].ID); !errors.Is(err, segment.ErrRemoved) {
		t.Fatalf("fetch with no archive: %v, want ErrRemoved", err)
	}
	n.close()
}
