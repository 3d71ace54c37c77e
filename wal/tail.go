package wal

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
)

// tailChunk is how much a Tail reads at a time (more when a record is
// larger).
const tailChunk = 1 << 20

// Tail reads the log's records in order as they become durable: the
// sealer's view of the log. It reads files through the same vfs.FS as the
// commit loop, never past the durable end it is given, and checks every
// frame's checksums. A Tail belongs to one goroutine.
type Tail struct {
	fs       vfs.FS
	dir      string
	afterSeq uint64 // hooks at or below it are skipped

	file    uint64 // file being read; 0 before the first
	off     int64  // next frame's offset in it
	f       vfs.File
	buf     []byte // bytes read from f at bufOff
	bufOff  int64
	lastSeq uint64 // last hook passed on or skipped
	rec     Record

	// OnGap, when set, is told of seqs missing between two hooks (a
	// recovery with -wal-recovery=truncate cut them, and numbering resumed
	// above them) and reading goes on; unset, a gap is a *CorruptError.
	OnGap func(first, last uint64) error
}

// NewTail returns a reader of the log in dir that starts at file fromFile
// (0: the oldest) and passes on hooks above afterSeq, and every tenant
// record it meets.
func NewTail(fs vfs.FS, dir string, fromFile, afterSeq uint64) *Tail {
	return &Tail{fs: fs, dir: dir, file: fromFile, afterSeq: afterSeq, lastSeq: afterSeq}
}

// File is the number of the file the tail is in (0 before the first read).
func (t *Tail) File() uint64 { return t.file }

// LastSeq is the seq of the last hook read (or skipped).
func (t *Tail) LastSeq() uint64 { return t.lastSeq }

// Close releases the open file.
func (t *Tail) Close() {
	if t.f != nil {
		_ = t.f.Close()
		t.f = nil
	}
}

// Read calls fn for each record from where the tail is to the durable end,
// then returns. fileDone is called (if not nil) when a file has been read
// to its end and the tail moves to the next, with the seq of the last hook
// at or before that file's end. Record.Payload is valid only during fn.
func (t *Tail) Read(end Position, fn func(*Record) error, fileDone func(file, lastSeq uint64) error) error {
	if t.file == 0 {
		nums, err := ListFiles(t.fs, t.dir)
		if err != nil {
			return err
		}
		if len(nums) == 0 {
			return nil
		}
		t.file = nums[0]
	}
	for t.file <= end.File {
		if t.f == nil {
			if err := t.open(); err != nil {
				return err
			}
		}
		limit := end.Size
		if t.file < end.File {
			st, err := t.f.Stat()
			if err != nil {
				return fmt.Errorf("cannot stat wal file %s: %w", FileName(t.file), err)
			}
			limit = st.Size()
		}
		if err := t.readTo(limit, fn); err != nil {
			return err
		}
		if t.file == end.File {
			return nil
		}
		// Every byte of an earlier file is durable: it is done.
		if fileDone != nil {
			if err := fileDone(t.file, t.lastSeq); err != nil {
				return err
			}
		}
		t.Close()
		t.file++
	}
	return nil
}

// open opens t.file and checks its header; a file missing before the
// durable end is corruption (files are numbered without gaps).
func (t *Tail) open() error {
	path := t.fs.PathJoin(t.dir, FileName(t.file))
	f, err := t.fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &CorruptError{File: path, Offset: 0, Reason: "the file is missing (wal files are numbered without gaps)"}
	}
	if err != nil {
		return fmt.Errorf("cannot open wal file %q: %w", path, err)
	}
	var hdr [fileHeaderSize]byte
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, fileHeaderSize), hdr[:]); err != nil {
		f.Close()
		return &CorruptError{File: path, Offset: 0, Reason: "file header is short"}
	}
	if reason := checkFileHeader(hdr[:]); reason != "" {
		f.Close()
		return &CorruptError{File: path, Offset: 0, Reason: reason}
	}
	t.f, t.off, t.buf, t.bufOff = f, fileHeaderSize, t.buf[:0], fileHeaderSize
	return nil
}

// readTo passes on every frame that ends at or before limit.
func (t *Tail) readTo(limit int64, fn func(*Record) error) error {
	path := t.fs.PathJoin(t.dir, FileName(t.file))
	for t.off < limit {
		// Frame bytes available in buf from t.off.
		have := t.buf[t.off-t.bufOff:]
		n, reason := parseFrame(have, &t.rec)
		if reason != "" {
			if int64(len(have)) >= limit-t.off {
				// Everything up to limit is in buf and it is not a frame.
				return &CorruptError{File: path, Offset: t.off, Reason: reason}
			}
			if err := t.fill(limit, frameNeed(have)); err != nil {
				return err
			}
			continue
		}
		if t.off+int64(n) > limit {
			return &CorruptError{File: path, Offset: t.off, Reason: "record runs past the durable end"}
		}
		t.rec.File, t.rec.Offset = path, t.off
		hook := t.rec.Kind == envelope.KindEnvelope
		if hook {
			if t.rec.Seq <= t.afterSeq {
				t.off += int64(n)
				continue
			}
			if t.lastSeq != 0 && t.rec.Seq != t.lastSeq+1 {
				if t.OnGap == nil || t.rec.Seq <= t.lastSeq {
					return &CorruptError{File: path, Offset: t.off, Reason: fmt.Sprintf("seq %d follows seq %d: hooks are missing from the log", t.rec.Seq, t.lastSeq)}
				}
				if err := t.OnGap(t.lastSeq+1, t.rec.Seq-1); err != nil {
					return err
				}
			}
		}
		if err := fn(&t.rec); err != nil {
			return err
		}
		if hook {
			t.lastSeq = t.rec.Seq
		}
		t.off += int64(n)
	}
	return nil
}

// frameNeed is how many bytes the frame starting at b needs, as far as its
// header tells (at least one more than b holds).
func frameNeed(b []byte) int {
	if n, ok := headerValid(b); ok {
		return FrameHeaderSize + int(n)
	}
	return max(len(b)+1, FrameHeaderSize+envelope.IdentSize)
}

// fill reads from t.off on, at least need bytes (bounded by limit), into buf.
func (t *Tail) fill(limit int64, need int) error {
	// Drop what was consumed.
	keep := t.buf[t.off-t.bufOff:]
	t.buf = append(t.buf[:0], keep...)
	t.bufOff = t.off
	want := min(int64(max(need, tailChunk)), limit-t.off)
	if int64(len(t.buf)) >= want {
		return nil
	}
	start := len(t.buf)
	if int64(cap(t.buf)) < want {
		t.buf = append(t.buf[:start:start], make([]byte, int(want)-start)...)
	}
	t.buf = t.buf[:want]
	n, err := t.f.ReadAt(t.buf[start:], t.off+int64(start))
	t.buf = t.buf[:start+n]
	if err != nil && !(errors.Is(err, io.EOF) && int64(start+n) >= want) {
		if errors.Is(err, io.EOF) {
			return &CorruptError{File: t.fs.PathJoin(t.dir, FileName(t.file)), Offset: t.off + int64(start+n), Reason: "the file ends before its durable end"}
		}
		return fmt.Errorf("cannot read wal file %s: %w", FileName(t.file), err)
	}
	return nil
}
