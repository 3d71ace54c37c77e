package wal_test

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// testNode is the node ordinal tests open their logs with.
const testNode = 7

// hook is one hook a test commits. Its tag (the envelope's dedupe key)
// names it in the log; its body is a function of the tag, so a record read
// back can be checked without knowing whether it was acknowledged.
type hook struct {
	tenant string
	tag    string
}

// bodyFor returns the body of the hook tagged tag: 0 to ~2 KiB of bytes
// that depend on the tag, binary ones included.
func bodyFor(tag string) []byte {
	h := fnv.New64a()
	h.Write([]byte(tag))
	sum := h.Sum64()
	n := int(sum % 2048)
	if sum%5 == 0 {
		n = 0
	}
	b := make([]byte, n)
	for i := range b {
		sum = sum*6364136223846793005 + 1442695040888963407
		b[i] = byte(sum >> 56)
	}
	return b
}

// envelopeFor is the envelope a test hook is encoded from.
func envelopeFor(h hook) envelope.Envelope {
	return envelope.Envelope{
		TenantID:     h.tenant,
		SourceID:     "src",
		ReceivedAt:   1_764_445_200_000_000_000,
		RouteParams:  []envelope.Param{{Key: "p", Value: h.tag}},
		Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/octet-stream"}},
		Body:         bodyFor(h.tag),
		Verification: envelope.Verification{Verifier: "none", Verified: true},
		DedupeKey:    h.tag,
	}
}

// acquire builds a sealed request the way the edge does: frame header
// space (already in Buf), the envelope, then SealPayload.
func acquire(h hook) *wal.Request {
	req := wal.AcquireRequest()
	e := envelopeFor(h)
	req.Buf = e.AppendTo(req.Buf)
	wal.SealPayload(req.Buf)
	return req
}

// ack is what Commit filled into a request.
type ack struct {
	Seq     uint64
	ID      envelope.ID
	Ordinal uint32
	Tag     string
}

// commit commits h and returns what the loop assigned.
func commit(w *wal.WAL, h hook) (ack, error) {
	req := acquire(h)
	defer wal.ReleaseRequest(req)
	err := w.Commit(req)
	return ack{Seq: req.Seq, ID: req.ID, Ordinal: req.Ordinal, Tag: h.tag}, err
}

func mustCommit(t testing.TB, w *wal.WAL, h hook) ack {
	t.Helper()
	a, err := commit(w, h)
	if err != nil {
		t.Fatalf("Commit(%s): %v", h.tag, err)
	}
	return a
}

// recordSize is the size of h's frame in the log.
func recordSize(h hook) int {
	req := acquire(h)
	defer wal.ReleaseRequest(req)
	return len(req.Buf)
}

// logRec is one record read back from a log.
type logRec struct {
	File    string
	Offset  int64
	Size    int // frame header + payload
	Kind    byte
	Seq     uint64
	ID      envelope.ID
	Ordinal uint32
	Tenant  string            // tenant records: the name
	Env     envelope.Envelope // hooks: the decoded envelope
}

// readLog reads every record of the log in dir with wal.ReadDir and decodes
// the hooks.
func readLog(fs vfs.FS, dir string) ([]logRec, error) {
	var recs []logRec
	err := wal.ReadDir(fs, dir, func(r *wal.Record) error {
		lr := logRec{File: r.File, Offset: r.Offset, Size: wal.FrameHeaderSize + len(r.Payload), Kind: r.Kind, Seq: r.Seq, ID: r.ID, Ordinal: r.Ordinal}
		switch r.Kind {
		case envelope.KindTenant:
			lr.Tenant = string(r.TenantName())
		case envelope.KindEnvelope:
			rest, err := envelope.Decode(r.Payload, &lr.Env)
			if err != nil {
				return fmt.Errorf("%s@%d: %w", r.File, r.Offset, err)
			}
			if len(rest) != 0 {
				return fmt.Errorf("%s@%d: %d bytes after the envelope", r.File, r.Offset, len(rest))
			}
		default:
			return fmt.Errorf("%s@%d: kind %d", r.File, r.Offset, r.Kind)
		}
		recs = append(recs, lr)
		return nil
	})
	return recs, err
}

func mustReadLog(t testing.TB, fs vfs.FS, dir string) []logRec {
	t.Helper()
	recs, err := readLog(fs, dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	return recs
}

// checkLog checks what every log must satisfy and returns its hooks:
// seqs dense from firstSeq, ids strictly increasing with the seq as their
// seq part and testNode as their node, each hook's body the one its tag
// implies, and each hook's ordinal the one its tenant was given by an
// earlier tenant record or by seeds. A tenant record never reuses an
// ordinal or a name.
func checkLog(t testing.TB, recs []logRec, firstSeq uint64, seeds map[string]uint32) []logRec {
	t.Helper()
	ords := map[string]uint32{}
	names := map[uint32]string{}
	for name, o := range seeds {
		ords[name], names[o] = o, name
	}
	var hooks []logRec
	var prevID envelope.ID
	next := firstSeq
	for _, r := range recs {
		switch r.Kind {
		case envelope.KindTenant:
			if r.Seq != 0 || !r.ID.IsZero() || r.Ordinal == 0 {
				t.Fatalf("%s@%d: tenant record %q with seq %d id %v ordinal %d", r.File, r.Offset, r.Tenant, r.Seq, r.ID, r.Ordinal)
			}
			if _, dup := ords[r.Tenant]; dup {
				t.Fatalf("%s@%d: second ordinal for tenant %q", r.File, r.Offset, r.Tenant)
			}
			if other, dup := names[r.Ordinal]; dup {
				t.Fatalf("%s@%d: ordinal %d of %q given again to %q", r.File, r.Offset, r.Ordinal, other, r.Tenant)
			}
			ords[r.Tenant], names[r.Ordinal] = r.Ordinal, r.Tenant
		case envelope.KindEnvelope:
			e := r.Env
			if r.Seq != next || e.Seq != r.Seq {
				t.Fatalf("%s@%d: seq %d (envelope %d), want %d", r.File, r.Offset, r.Seq, e.Seq, next)
			}
			next++
			if bytes.Compare(prevID[:], r.ID[:]) >= 0 || e.ID != r.ID {
				t.Fatalf("%s@%d: id %v does not follow %v", r.File, r.Offset, r.ID, prevID)
			}
			prevID = r.ID
			if r.ID.Seq() != r.Seq || r.ID.Node() != testNode {
				t.Fatalf("%s@%d: id %v has seq %d node %d", r.File, r.Offset, r.ID, r.ID.Seq(), r.ID.Node())
			}
			if o, ok := ords[e.TenantID]; !ok || o != r.Ordinal || e.TenantOrdinal != r.Ordinal {
				t.Fatalf("%s@%d: hook of tenant %q has ordinal %d; the tenant's is %d (known %v)", r.File, r.Offset, e.TenantID, r.Ordinal, o, ok)
			}
			want := envelopeFor(hook{tenant: e.TenantID, tag: e.DedupeKey})
			want.Seq, want.ID, want.TenantOrdinal = e.Seq, e.ID, e.TenantOrdinal
			if !bytes.Equal(e.Body, want.Body) || e.SourceID != want.SourceID || e.ReceivedAt != want.ReceivedAt ||
				len(e.RouteParams) != 1 || e.RouteParams[0] != want.RouteParams[0] || len(e.Headers) != 1 ||
				e.Headers[0] != want.Headers[0] || e.Verification != want.Verification {
				t.Fatalf("%s@%d: hook %q read back as %+v", r.File, r.Offset, e.DedupeKey, e)
			}
			hooks = append(hooks, r)
		}
	}
	return hooks
}

// checkAcked checks that every acknowledged hook is in hooks with the seq,
// id and ordinal its Commit returned.
func checkAcked(t testing.TB, hooks []logRec, acked []ack) {
	t.Helper()
	bySeq := make(map[uint64]logRec, len(hooks))
	for _, h := range hooks {
		bySeq[h.Seq] = h
	}
	for _, a := range acked {
		h, ok := bySeq[a.Seq]
		if !ok {
			t.Fatalf("acknowledged hook %q (seq %d) is missing; the log has %d hooks", a.Tag, a.Seq, len(hooks))
		}
		if h.Env.DedupeKey != a.Tag || h.ID != a.ID || h.Ordinal != a.Ordinal {
			t.Fatalf("seq %d is %q id %v ordinal %d; acknowledged as %q id %v ordinal %d",
				a.Seq, h.Env.DedupeKey, h.ID, h.Ordinal, a.Tag, a.ID, a.Ordinal)
		}
	}
}

// clock is a test clock; every reading advances it by step.
type clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newClock(ms int64, step time.Duration) *clock {
	return &clock{now: time.UnixMilli(ms), step: step}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(c.step)
	return t
}

// logLines collects what the WAL logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *logLines) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// hookFS wraps a file system and calls its hooks around the syncs and
// writes of every file or directory it opens for writing, and around
// creates, renames and removes (aroundMeta, with "before" or "after", the
// operation and its path). A hook that returns an error fails the
// operation instead of running it. A file keeps the path it was created
// under: the file the WAL prepares ahead of rotation is written and
// synced under its .tmp name even after its rename.
type hookFS struct {
	vfs.FS
	beforeSync  func(path string) error
	afterSync   func(path string)
	beforeWrite func(path string) error
	aroundMeta  func(when, op, path string)

	syncs     atomic.Int64 // Sync calls on files and directories
	dataSyncs atomic.Int64 // SyncData calls
}

func (fs *hookFS) meta(op, path string, do func() error) error {
	if fs.aroundMeta != nil {
		fs.aroundMeta("before", op, path)
	}
	err := do()
	if err == nil && fs.aroundMeta != nil {
		fs.aroundMeta("after", op, path)
	}
	return err
}

func (fs *hookFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.meta("create", name, func() (err error) {
		f, err = fs.FS.Create(name, cat)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, fs: fs, path: name}, nil
}

func (fs *hookFS) Rename(oldname, newname string) error {
	return fs.meta("rename", oldname, func() error { return fs.FS.Rename(oldname, newname) })
}

func (fs *hookFS) Remove(name string) error {
	return fs.meta("remove", name, func() error { return fs.FS.Remove(name) })
}

func (fs *hookFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, fs: fs, path: name}, nil
}

type hookFile struct {
	vfs.File
	fs   *hookFS
	path string
}

func (f *hookFile) sync(do func() error) error {
	if h := f.fs.beforeSync; h != nil {
		if err := h(f.path); err != nil {
			return err
		}
	}
	if err := do(); err != nil {
		return err
	}
	if h := f.fs.afterSync; h != nil {
		h(f.path)
	}
	return nil
}

func (f *hookFile) Sync() error {
	f.fs.syncs.Add(1)
	return f.sync(f.File.Sync)
}

func (f *hookFile) SyncData() error {
	f.fs.dataSyncs.Add(1)
	return f.sync(f.File.SyncData)
}

func (f *hookFile) Write(p []byte) (int, error) {
	if h := f.fs.beforeWrite; h != nil {
		if err := h(f.path); err != nil {
			return 0, err
		}
	}
	return f.File.Write(p)
}

// copyFS copies the regular files of dir from src into a new crashable
// MemFS, synced, so tests can damage a log and crash the copy.
func copyFS(t testing.TB, src vfs.FS, dir string) *vfs.MemFS {
	t.Helper()
	dst := vfs.NewCrashableMem()
	if err := dst.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := src.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		writeFile(t, dst, dst.PathJoin(dir, n), readFile(t, src, src.PathJoin(dir, n)))
	}
	syncDirs(t, dst, dir)
	return dst
}

func readFile(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		t.Fatal(err)
	}
	return b
}

// writeFile replaces path with data, synced.
func writeFile(t testing.TB, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Clone(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// syncDirs syncs dir and its parents, so what they list survives a crash.
func syncDirs(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	for {
		d, err := fs.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		d.Close()
		parent := fs.PathDir(dir)
		if parent == dir {
			return
		}
		dir = parent
	}
}

// walFiles lists the WAL file names in dir.
func walFiles(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	nums, err := wal.ListFiles(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(nums))
	for i, n := range nums {
		names[i] = wal.FileName(n)
	}
	return names
}

// hooksOf returns the hooks of recs.
func hooksOf(recs []logRec) []logRec {
	var hooks []logRec
	for _, r := range recs {
		if r.Kind == envelope.KindEnvelope {
			hooks = append(hooks, r)
		}
	}
	return hooks
}

// commitResult is what a commit made on another goroutine returned.
type commitResult struct {
	a   ack
	err error
}

// commitBehind starts 8 commits (3 tenants) on their own goroutines, each
// answering on results, and returns the bytes they queue: tests hold the
// loop on a fault or a rotation and wait for QueuedBytes to reach it.
func commitBehind(w *wal.WAL, results chan<- commitResult) int64 {
	var queued int64
	for i := 0; i < 8; i++ {
		h := hook{tenant: fmt.Sprintf("t%d", i%3), tag: fmt.Sprintf("behind-%d", i)}
		queued += int64(recordSize(h))
		go func() {
			a, err := commit(w, h)
			results <- commitResult{a, err}
		}()
	}
	return queued
}

// testMeta is what a meta store records outside the log (Options.Meta):
// the floors, the tenant mirror, and a hook on every mirrored ordinal.
type testMeta struct {
	ckptSeq  uint64
	ckptID   envelope.ID
	closed   uint64
	catSeq   uint64
	catID    envelope.ID
	dispSeq  uint64
	tenants  map[string]uint32
	erased   map[uint32]string // the tombstones' ordinals
	onTenant func(name string, ord uint32)
}

func (m *testMeta) ErasedOrdinals() (map[uint32]string, error) { return maps.Clone(m.erased), nil }

func (m *testMeta) WALCheckpoint() (uint64, envelope.ID, error) { return m.ckptSeq, m.ckptID, nil }
func (m *testMeta) SetWALCheckpoint(seq uint64, id envelope.ID) error {
	m.ckptSeq, m.ckptID = seq, id
	return nil
}
func (m *testMeta) WALClosed() (uint64, error) { return m.closed, nil }
func (m *testMeta) SetWALClosed(seq uint64) error {
	m.closed = seq
	return nil
}
func (m *testMeta) CatalogueFloor() (uint64, envelope.ID, error) { return m.catSeq, m.catID, nil }
func (m *testMeta) DispatchCheckpoint() (uint64, error)          { return m.dispSeq, nil }
func (m *testMeta) Tenants() (map[string]uint32, error)          { return maps.Clone(m.tenants), nil }
func (m *testMeta) SetTenantSynced(name string, ord uint32) error {
	return m.SetTenant(name, ord)
}

func (m *testMeta) SetTenant(name string, ord uint32) error {
	if m.onTenant != nil {
		m.onTenant(name, ord)
	}
	return nil
}
