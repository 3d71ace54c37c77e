package wal

import (
	"fmt"
	"time"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Rotation does little file-system work on the commit loop. Creating a
// file and syncing its header cost a journal commit, which every hook of
// the rotating batch and of the batches queued behind it would wait for.
// Instead, once a file becomes active, a goroutine prepares the next one
// under its temporary name (prepareFile); rotation renames it into the
// log, and the rotating batch syncs the directory after its fdatasync.
//
// The prepared file stays out of the log until the loop renames it: a
// reader of the directory (ListFiles, ReadDir, Tail, the segment store
// deleting what it sealed) never sees it, and a WAL file exists only once
// every batch of the file before it is synced, which recovery relies on
// (only the last file may have a torn tail). A crash leaves at most a
// .tmp file, which recovery removes.
//
// Ownership: the loop owns next and preparing, and starts at most one
// preparation at a time; the preparing goroutine owns nothing of the WAL
// but the channel it answers on.

// preparedFile is the result of a preparation: file num, under its
// temporary name, with its header written and synced, or why it could not
// be made.
type preparedFile struct {
	num uint64
	f   vfs.File
	err error
}

// prepareNext starts preparing the file after the active one. Loop (or
// Open, before the loop runs) only, with no preparation running and none
// waiting.
func (w *WAL) prepareNext() {
	if w.preparing || w.next != nil {
		panic("BUG: wal: a second file prepared ahead of rotation")
	}
	w.preparing = true
	go w.prepare(w.fileNum + 1)
}

// prepare runs on its own goroutine: it prepares file num and hands the
// result to the loop, which always takes it (at rotation, when idle, or at
// Close), so the goroutine never outlives the WAL.
func (w *WAL) prepare(num uint64) {
	start := time.Now()
	f, err := prepareFile(w.opts.FS, w.opts.Dir, num, w.opts.MaxFileBytes)
	if err == nil {
		prepareSeconds.UpdateDuration(start)
	}
	w.prepared <- preparedFile{num: num, f: f, err: err}
}

// receive takes a preparation's result on the loop and keeps the file for
// rotation. A preparation that met a full disk refuses commits until one
// succeeds (space.go). Any other failure is returned: the caller makes it
// fatal (DESIGN.md §6 item 8), as it was when rotation created the file,
// only sooner, since a disk that cannot create and sync a file is not
// trusted with the log until the next rotation.
func (w *WAL) receive(p preparedFile) error {
	w.preparing = false
	if p.err != nil {
		if IsNoSpace(p.err) {
			w.noFileYet(p.err)
			return nil
		}
		return p.err
	}
	w.fileAgain()
	w.next = &p
	return nil
}

// pollPrepared takes a finished preparation, if there is one, without
// waiting, so that a failed one stops the log between two batches instead
// of at the next rotation.
func (w *WAL) pollPrepared() {
	if !w.preparing {
		return
	}
	select {
	case p := <-w.prepared:
		if err := w.receive(p); err != nil {
			w.fail(nil, err)
		}
	default:
	}
}

// nextFile returns the prepared file for a rotation, waiting for its
// preparation if it still runs (ankusa_wal_rotation_waits_total counts
// how often: a log whose files fill faster than one is made).
func (w *WAL) nextFile() (preparedFile, error) {
	if w.next == nil && w.preparing {
		rotationWaitsTotal.Inc()
		if err := w.receive(<-w.prepared); err != nil {
			return preparedFile{}, err
		}
	}
	if w.next == nil {
		if !w.noFile.Load() {
			// A failed preparation failed the log, and a failed log does
			// not rotate.
			panic("BUG: wal: rotation with no file prepared or being prepared")
		}
		return preparedFile{}, fmt.Errorf("%w: the wal file after %s could not be allocated", ErrNoSpace, FileName(w.fileNum))
	}
	p := *w.next
	w.next = nil
	if p.num != w.fileNum+1 {
		panic(fmt.Sprintf("BUG: wal: file %s prepared to follow %s", FileName(p.num), FileName(w.fileNum)))
	}
	return p, nil
}

// dropPrepared waits for a running preparation and removes the prepared
// file the log did not use, so that a clean Close leaves the WAL files it
// found plus the active one, and no .tmp. A failed preparation is fatal
// as anywhere else. The prepared file is not part of the log: failing to
// remove it loses nothing (recovery removes it), and the error is only
// Close's.
func (w *WAL) dropPrepared() error {
	w.stopRetry()
	if w.preparing {
		if err := w.receive(<-w.prepared); err != nil {
			w.fail(nil, err)
		}
	}
	if w.next == nil {
		return nil
	}
	p := *w.next
	w.next = nil
	_ = p.f.Close()
	if w.failed.Load() {
		return nil // the disk is failing: leave it be for recovery
	}
	tmp := w.opts.FS.PathJoin(w.opts.Dir, tmpName(p.num))
	if err := w.opts.FS.Remove(tmp); err != nil {
		return fmt.Errorf("cannot remove unused wal file %q: %w", tmp, err)
	}
	return vfsutil.SyncDir(w.opts.FS, w.opts.Dir)
}

// prepareFile creates WAL file num under its temporary name, with its
// header written, size bytes allocated and synced, for rotation to rename
// into the log. A file it could not make whole is removed again (it is
// not part of the log; recovery would remove it too), so a full disk
// does not keep it.
func prepareFile(fs vfs.FS, dir string, num uint64, size int64) (vfs.File, error) {
	tmp := fs.PathJoin(dir, tmpName(num))
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("cannot create wal file %q: %w", tmp, err)
	}
	fail := func(what string, err error) (vfs.File, error) {
		f.Close()
		_ = fs.Remove(tmp)
		return nil, fmt.Errorf("cannot %s wal file %q: %w", what, tmp, err)
	}
	if _, err := f.Write(appendFileHeader(nil)); err != nil {
		return fail("write", err)
	}
	if err := preallocate(f, size); err != nil {
		return fail("allocate wal.max_file_bytes for", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	return f, nil
}

// install makes prepared file p the active one: the loop renames it into
// the log. The rename is durable only once the directory is synced, which
// the caller does after the first batch's fdatasync and before answering
// it: on ext4 that fdatasync's journal commit carries the rename too, so
// the directory fsync after it finds little left to do, where a fsync
// before the batch's write would have cost a commit of its own.
func (w *WAL) install(p preparedFile) error {
	// Until it is active, Close disposes of it.
	w.next = &p
	err := w.file.Close()
	w.file = nil
	if err != nil {
		return fmt.Errorf("cannot close wal file %s: %w", FileName(w.fileNum), err)
	}
	tmp := w.opts.FS.PathJoin(w.opts.Dir, tmpName(p.num))
	path := w.opts.FS.PathJoin(w.opts.Dir, FileName(p.num))
	if err := w.opts.FS.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot rename wal file %q to %q: %w", tmp, path, err)
	}
	w.next = nil
	w.file, w.fileNum, w.fileSize = p.f, p.num, fileHeaderSize
	return nil
}
