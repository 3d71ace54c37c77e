package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
)

type recovered struct {
	bounds    ackBounds
	lastFile  uint64
	lastSeq   uint64
	lastID    envelope.ID
	tenants   map[string]uint32
	fileStart bool // no hook of the file being scanned seen yet
	// lossAccepted: -wal-recovery=truncate cut or kept a log below what
	// was acknowledged; Open then spends the bounds (spendBounds).
	lossAccepted bool
}

// ListFiles returns the numbers of the WAL files in dir, ascending.
func ListFiles(fs vfs.FS, dir string) ([]uint64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list wal directory %q: %w", dir, err)
	}
	var nums []uint64
	for _, n := range names {
		if num, ok := ParseFileName(n); ok {
			nums = append(nums, num)
		}
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	return nums, nil
}

// recoverDir scans every file, cuts a torn tail, and refuses corruption.
// A refused recovery changes no file.
func recoverDir(opts Options, bounds ackBounds) (*recovered, error) {
	st := &recovered{tenants: map[string]uint32{}, bounds: bounds}
	nums, err := ListFiles(opts.FS, opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := st.scanFiles(opts, nums); err != nil {
		return nil, err
	}
	if err := st.checkEnd(opts, nums); err != nil {
		return nil, err
	}
	// Leftovers of an interrupted tail cut or of a file prepared ahead of
	// rotation (prepare.go) are never the log; they go once the log is
	// known good.
	names, err := opts.FS.List(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list wal directory %q: %w", opts.Dir, err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			if err := opts.FS.Remove(opts.FS.PathJoin(opts.Dir, n)); err != nil {
				return nil, fmt.Errorf("cannot remove leftover wal file %q: %w", n, err)
			}
		}
	}
	return st, nil
}

// scanFiles applies every file of nums to st, in order, cutting the log at
// a torn tail of the last file or, with RecoverTruncate, at corruption.
func (st *recovered) scanFiles(opts Options, nums []uint64) error {
	for i, num := range nums {
		last := i == len(nums)-1
		path := opts.FS.PathJoin(opts.Dir, FileName(num))
		data, err := readFile(opts.FS, path)
		if err != nil {
			return err
		}
		if i > 0 && num != nums[i-1]+1 {
			ce := &CorruptError{File: path, Offset: 0, Reason: fmt.Sprintf("wal file %s before it is missing (files are numbered without gaps)", FileName(nums[i-1]+1))}
			if opts.Recovery != RecoverTruncate {
				return ce
			}
			opts.Logf("wal: -wal-recovery=truncate: %s is missing; cutting the log there, dropping %d later files", FileName(nums[i-1]+1), len(nums)-i)
			st.lossAccepted = true
			if err := removeFiles(opts, nums[i:]); err != nil {
				return err
			}
			if err := vfsutil.SyncDir(opts.FS, opts.Dir); err != nil {
				return err
			}
			break
		}
		st.fileStart = true
		var goodBatch uint32
		hasGood := false
		good, scanErr := scan(path, data, func(r *Record) error {
			if err := st.apply(r); err != nil {
				return err
			}
			goodBatch, hasGood = r.Batch, true
			return nil
		})
		st.lastFile = num
		if scanErr == nil {
			continue
		}
		ce, ok := scanErr.(*CorruptError)
		if !ok {
			return scanErr
		}
		torn := last && tornTail(data, ce.Offset, 2*opts.MaxBatchBytes, goodBatch, hasGood)
		if !torn && opts.Recovery != RecoverTruncate {
			ce.Reason += "; " + droppedAfter(opts, data, ce.Offset, nums[i+1:])
			return ce
		}
		if lost := st.bounds.lost(st.lastSeq); lost != "" {
			// What looks like a torn final batch holds hooks a synced
			// record outside the log says were acknowledged: damage, not
			// a crash's tear.
			if opts.Recovery != RecoverTruncate {
				ce.Reason += "; " + lost
				return ce
			}
			torn = false
		}
		st.lossAccepted = st.lossAccepted || !torn
		if torn {
			opts.Logf("wal: %s has a torn tail at offset %d (%s): cutting %d bytes that were never acknowledged", path, ce.Offset, ce.Reason, int64(len(data))-ce.Offset)
		} else {
			opts.Logf("wal: -wal-recovery=truncate: cutting %s at offset %d (%s), dropping %d bytes and %d later files", path, ce.Offset, ce.Reason, int64(len(data))-ce.Offset, len(nums)-i-1)
		}
		if err := rewritePrefix(opts.FS, opts.Dir, num, data[:good]); err != nil {
			return err
		}
		// Later files go; the next file the log creates follows this one,
		// so numbering stays without gaps.
		if err := removeFiles(opts, nums[i+1:]); err != nil {
			return err
		}
		if len(nums[i+1:]) > 0 {
			if err := vfsutil.SyncDir(opts.FS, opts.Dir); err != nil {
				return err
			}
		}
		break
	}
	return nil
}

// checkEnd refuses a log that ends cleanly, at a record boundary, below
// what a synced bound says was acknowledged: a file cut at a boundary
// scans without error, and only the bounds can tell it from a crash.
func (st *recovered) checkEnd(opts Options, nums []uint64) error {
	lost := st.bounds.lost(st.lastSeq)
	if lost == "" {
		return nil
	}
	path, size := opts.Dir, int64(0)
	if len(nums) > 0 {
		path = opts.FS.PathJoin(opts.Dir, FileName(nums[len(nums)-1]))
		if fi, err := opts.FS.Stat(path); err == nil {
			size = fi.Size()
		}
	}
	if opts.Recovery == RecoverTruncate {
		opts.Logf("wal: -wal-recovery=truncate: the log ends at seq %d in %s at offset %d; %s; going on without them", st.lastSeq, path, size, lost)
		st.lossAccepted = true
		return nil
	}
	return &CorruptError{File: path, Offset: size, Reason: fmt.Sprintf("the log ends at seq %d; %s", st.lastSeq, lost)}
}

// droppedAfter says what cutting the log at off of data (whose later files
// are later) would drop: the whole hook records still readable after the
// damage in this file, and the later files. Every one of them was written
// after a sync that covered off, so all but the final batch's were
// acknowledged.
func droppedAfter(opts Options, data []byte, off int64, later []uint64) string {
	hooks := 0
	var rec Record
	for i := int(off) + 1; i < len(data); {
		n, reason := parseFrame(data[i:], &rec)
		if reason != "" {
			i++
			continue
		}
		if rec.Kind == envelope.KindEnvelope {
			hooks++
		}
		i += n
	}
	for _, num := range later {
		path := opts.FS.PathJoin(opts.Dir, FileName(num))
		if b, err := readFile(opts.FS, path); err == nil {
			_, _ = scan(path, b, func(r *Record) error {
				if r.Kind == envelope.KindEnvelope {
					hooks++
				}
				return nil
			})
		}
	}
	return fmt.Sprintf("cutting here would drop the damaged record, %d whole hooks written after it and %d later files; they were written after a sync that covered this offset, so they were acknowledged (all but a final batch's): this is damage, not a crash's torn final batch", hooks, len(later))
}

// ackBounds are the synced records outside the log that say how far it
// was acknowledged (DESIGN.md §6 item 10): a crash tears at most the
// final batch, which none of them can cover.
//
// The dispatch checkpoint counts only while the numbering checkpoint
// equals the clean-close record, as a clean close of the log leaves them:
// a run of wal.type: none since (it reserves checkpoints ahead, and its
// rows are of hooks no log holds) or a loss -wal-recovery=truncate
// accepted (spendBounds) sets them apart until the log closes cleanly
// again.
type ackBounds struct {
	closed   uint64 // the clean-close record's seq (wal.type: disk writes it at Close)
	dispatch uint64 // the dispatch checkpoint: rows are durable up to it, so the log was
	covered  uint64 // the catalogue's last seq: hooks up to it are in segments too
}

// readAckBounds reads the bounds from m (none without one).
func readAckBounds(m Meta) (ackBounds, error) {
	var b ackBounds
	if m == nil {
		return b, nil
	}
	var err error
	if b.closed, err = m.WALClosed(); err != nil {
		return b, err
	}
	ckpt, _, err := m.WALCheckpoint()
	if err != nil {
		return b, err
	}
	if b.covered, _, err = m.CatalogueFloor(); err != nil {
		return b, err
	}
	if b.dispatch, err = m.DispatchCheckpoint(); err != nil || ckpt != b.closed {
		b.dispatch = 0
	}
	return b, err
}

// spendBounds records that the operator accepted losing what the bounds
// said was acknowledged: the numbering checkpoint moves to the floor and
// the clean-close record goes, so the next boot does not refuse the same
// loss again, while numbering still resumes above everything.
func spendBounds(m Meta, f Floor) error {
	if err := m.SetWALCheckpoint(f.Seq, f.ID); err != nil {
		return fmt.Errorf("cannot record the accepted loss: %w", err)
	}
	if err := m.SetWALClosed(0); err != nil {
		return fmt.Errorf("cannot record the accepted loss: %w", err)
	}
	return nil
}

// lost says what keeping the log only up to seq kept would lose of what
// the bounds say was acknowledged ("" when nothing: hooks held by segments
// are not lost).
func (b ackBounds) lost(kept uint64) string {
	acked, by := b.closed, "the clean-close record"
	if b.dispatch > acked {
		acked, by = b.dispatch, "the dispatch checkpoint"
	}
	have := max(kept, b.covered)
	if acked <= have {
		return ""
	}
	return fmt.Sprintf("%s says hooks up to seq %d were acknowledged, but the log would keep them only up to seq %d: cutting here would lose %d acknowledged hooks, so this is damage, not a crash's torn final batch", by, acked, have, acked-have)
}

// removeFiles removes WAL files, the last first, so that a crash in the
// middle leaves the log without gaps.
func removeFiles(opts Options, nums []uint64) error {
	for j := len(nums) - 1; j >= 0; j-- {
		if err := opts.FS.Remove(opts.FS.PathJoin(opts.Dir, FileName(nums[j]))); err != nil {
			return fmt.Errorf("cannot remove wal file %s: %w", FileName(nums[j]), err)
		}
	}
	return nil
}

func (st *recovered) apply(r *Record) error {
	switch r.Kind {
	case envelope.KindTenant:
		st.tenants[string(r.TenantName())] = r.Ordinal
	case envelope.KindEnvelope:
		// Seqs are dense, except that a run Open resumed above a
		// numbering floor (Options.Meta) starts its new file with a
		// jump up.
		jump := st.fileStart && r.Seq > st.lastSeq
		if st.lastSeq != 0 && r.Seq != st.lastSeq+1 && !jump {
			return fmt.Errorf("seq %d follows seq %d", r.Seq, st.lastSeq)
		}
		st.lastSeq, st.lastID, st.fileStart = r.Seq, r.ID, false
	}
	return nil
}

func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open wal file %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("cannot read wal file %q: %w", path, err)
	}
	return data, nil
}

// scan calls fn for every whole record of one file's bytes. It returns the
// length of the good prefix and, if the file does not end cleanly, a
// *CorruptError at that offset. An error from fn stops the scan as a
// corruption at that record.
func scan(path string, data []byte, fn func(*Record) error) (int, error) {
	if reason := checkFileHeader(data); reason != "" {
		return 0, &CorruptError{File: path, Offset: 0, Reason: reason}
	}
	off := fileHeaderSize
	var rec Record
	for off < len(data) {
		n, reason := parseFrame(data[off:], &rec)
		if reason != "" {
			return off, &CorruptError{File: path, Offset: int64(off), Reason: reason}
		}
		rec.File, rec.Offset = path, int64(off)
		if err := fn(&rec); err != nil {
			return off, &CorruptError{File: path, Offset: int64(off), Reason: err.Error()}
		}
		off += n
	}
	return off, nil
}

// checkFileHeader says why b does not start with a WAL file header ("" when
// it does).
func checkFileHeader(b []byte) string {
	switch {
	case len(b) < fileHeaderSize:
		return "file header is short"
	case string(b[:8]) != fileMagic:
		return "bad file magic"
	case binary.BigEndian.Uint32(b[8:12]) != fileVersion:
		return fmt.Sprintf("unknown file version %d", binary.BigEndian.Uint32(b[8:12]))
	}
	return ""
}

// parseFrame decodes the frame at the start of b into rec (Payload aliases
// b) and returns its length, or why b does not start with a whole, valid
// frame.
func parseFrame(b []byte, rec *Record) (int, string) {
	if len(b) < FrameHeaderSize+envelope.IdentSize {
		return 0, "short frame header"
	}
	n, ok := headerValid(b)
	if !ok {
		return 0, "frame header checksum mismatch"
	}
	end := FrameHeaderSize + int(n)
	if end > len(b) {
		return 0, fmt.Sprintf("record of %d bytes runs past the end of the file", n)
	}
	payload := b[FrameHeaderSize:end]
	if Checksum(payload[envelope.IdentSize:]) != binary.BigEndian.Uint32(b[4:8]) {
		return 0, "payload checksum mismatch"
	}
	*rec = Record{Batch: frameBatch(b), Payload: payload}
	rec.Kind, rec.Seq, rec.ID, rec.Ordinal = envelope.Identity(payload)
	if rec.Kind != envelope.KindEnvelope && rec.Kind != envelope.KindTenant {
		return 0, fmt.Sprintf("unknown record kind %d", rec.Kind)
	}
	return end, ""
}

// tornTail reports whether the damage at off in the last file can be a
// write that a crash cut short. The loop has at most one batch in flight
// (written, not yet synced), and a crash may keep any of its blocks and lose
// others, so valid frames can follow the damage; but they all belong to
// that one batch: they share one batch number, which is the batch of the
// last good frame before the damage (the damage is inside the batch) or
// the one after it, and they end within maxBatch bytes of off. A valid
// frame of any other batch was written after a sync that covered off: the
// damage is corruption. (Damage inside the last batch of the file with
// nothing after it is indistinguishable from a torn write; every log has
// that window, and it is one batch wide.)
func tornTail(data []byte, off, maxBatch int64, goodBatch uint32, hasGood bool) bool {
	var batch uint32
	seen := false
	for i := int(off) + 1; i+FrameHeaderSize+envelope.IdentSize <= len(data); i++ {
		n, ok := headerValid(data[i:])
		end := int64(i) + FrameHeaderSize + int64(n)
		if !ok || end > int64(len(data)) {
			continue
		}
		if end-off > maxBatch {
			return false
		}
		b := frameBatch(data[i:])
		if seen && b != batch {
			return false
		}
		batch, seen = b, true
	}
	return !seen || !hasGood || batch == goodBatch || batch == goodBatch+1
}

// rewritePrefix replaces file num by its first len(good) bytes, crash-safely:
// write a temporary file, sync it, rename it over, sync the directory.
func rewritePrefix(fs vfs.FS, dir string, num uint64, good []byte) error {
	if len(good) < fileHeaderSize {
		good = appendFileHeader(nil)
	}
	tmp := fs.PathJoin(dir, tmpName(num))
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("cannot create %q: %w", tmp, err)
	}
	if _, err := f.Write(bytes.Clone(good)); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot fsync %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close %q: %w", tmp, err)
	}
	if err := fs.Rename(tmp, fs.PathJoin(dir, FileName(num))); err != nil {
		return fmt.Errorf("cannot rename %q: %w", tmp, err)
	}
	return vfsutil.SyncDir(fs, dir)
}

// ReadDir calls fn for every whole record of the log in dir, in order,
// without changing anything. It stops at the first bad record and returns
// its *CorruptError (a torn tail included: the caller decides).
func ReadDir(fs vfs.FS, dir string, fn func(*Record) error) error {
	nums, err := ListFiles(fs, dir)
	if err != nil {
		return err
	}
	for _, num := range nums {
		path := fs.PathJoin(dir, FileName(num))
		data, err := readFile(fs, path)
		if err != nil {
			return err
		}
		var fnErr error
		_, err = scan(path, data, func(r *Record) error {
			if e := fn(r); e != nil {
				fnErr = e
				return e
			}
			return nil
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
