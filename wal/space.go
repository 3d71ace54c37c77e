package wal

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/internal/backoff"
)

// A full disk is not fatal (DESIGN.md §6 item 10): ingest answers 503
// until space returns; an fsync error still is fatal.
//
// Every WAL file is allocated to MaxFileBytes when it is made (fallocate
// with KEEP_SIZE: the file's length stays what was written, so recovery
// reads it as before), the first one in Open and every later one by its
// preparation off the loop. A commit into an allocated file never meets
// ENOSPC. When a preparation meets ENOSPC, the loop refuses every commit
// with ErrNoSpace (noFile) and prepares again with backoff; the first
// preparation that succeeds lets commits in again. On a file system
// without fallocate a write can still meet ENOSPC: the loop cuts the file
// back to the size its last synced batch left, gives the refused batch's
// seqs, event ids, tenant ordinals and batch number back (unnumber), so
// the log stays dense, and answers the batch ErrNoSpace. Anything else
// that fails (a sync, a cut that cannot be made) is fatal as before.
//
// SetLowSpace is the node's own refusal: it holds storage.reserve_bytes
// back for the meta store, the sealer and deletion (cli's storage
// monitor sets it while the file system has less free than that).

// Backoff of a preparation that met ENOSPC: 20ms, doubling, at most 1s,
// so ingest resumes within about a second of space returning.
const (
	prepRetryBase = 20 * time.Millisecond
	prepRetryMax  = time.Second
)

// IsNoSpace reports whether err is the file system saying it is full.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// preallocate allocates the first size bytes of f without changing its
// length. A file system that cannot (no fallocate) is not an error: its
// writes may meet ENOSPC instead, which the loop handles.
func preallocate(f vfs.File, size int64) error {
	err := f.Preallocate(0, size)
	if err == nil || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil
	}
	return err
}

// cutBack drops whatever a failed write left in f past size and puts the
// write offset back there. A file without a descriptor (the test file
// systems) can be cut only if the failed write left nothing.
func cutBack(f vfs.File, size int64) error {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		if err := unix.Ftruncate(int(fd), size); err != nil {
			return err
		}
		_, err := unix.Seek(int(fd), size, io.SeekStart)
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != size {
		return fmt.Errorf("the file holds %d bytes past its synced size and cannot be truncated", st.Size()-size)
	}
	return nil
}

// SetLowSpace makes every commit answer ErrNoSpace (low) or lets them in
// again. Safe for concurrent use.
func (w *WAL) SetLowSpace(low bool) { w.lowSpace.Store(low) }

// NoSpace reports whether commits are refused for want of space: the
// next file could not be allocated, or SetLowSpace(true).
func (w *WAL) NoSpace() bool { return w.noFile.Load() || w.lowSpace.Load() }

// refuseNoSpace reports whether a commit must be refused for want of
// space, and counts it.
func (w *WAL) refuseNoSpace() bool {
	if !w.noFile.Load() && !w.lowSpace.Load() {
		return false
	}
	noSpaceRefusals.Inc()
	return true
}

// noFileYet is a preparation that met ENOSPC: commits are refused and the
// preparation runs again after a backoff. Loop only.
func (w *WAL) noFileYet(err error) {
	enospcTotal.Inc()
	w.noFile.Store(true)
	w.prepFails++
	w.retry = time.NewTimer(backoff.Ceiling(w.prepFails-1, prepRetryBase, prepRetryMax))
	w.logSpace("wal: cannot allocate the next wal file, the disk is full; ingest answers 503 until space returns", err)
}

// fileAgain is the first preparation that succeeded after one met ENOSPC.
// Loop only.
func (w *WAL) fileAgain() {
	if !w.noFile.Load() {
		return
	}
	w.noFile.Store(false)
	w.opts.Logf("wal: space returned after %d failed allocations; ingest resumes", w.prepFails)
	w.prepFails = 0
}

// retryC is the channel of the pending preparation retry (nil: none, so a
// select never takes it).
func (w *WAL) retryC() <-chan time.Time {
	if w.retry == nil {
		return nil
	}
	return w.retry.C
}

// retryPrepare runs a preparation again once its backoff has passed. Loop only.
func (w *WAL) retryPrepare() {
	w.retry = nil
	if !w.preparing && w.next == nil {
		w.prepareNext()
	}
}

// stopRetry cancels a pending preparation retry (Close). Loop only.
func (w *WAL) stopRetry() {
	if w.retry != nil {
		w.retry.Stop()
		w.retry = nil
	}
}

// writeFailed turns a failed batch write into the error commitBatch acts
// on: a full disk, once the file is cut back to its synced size, is
// ErrNoSpace; anything else is fatal.
func (w *WAL) writeFailed(err error) error {
	name := FileName(w.fileNum)
	if !IsNoSpace(err) {
		return fmt.Errorf("cannot write wal file %s: %w", name, err)
	}
	enospcTotal.Inc()
	if cerr := cutBack(w.file, w.fileSize); cerr != nil {
		return fmt.Errorf("cannot write wal file %s: %w; and cannot cut it back to its synced size %d: %v", name, err, w.fileSize, cerr)
	}
	w.logSpace("wal: a batch met a full disk and was refused (503); the file was cut back to its synced size", err)
	return fmt.Errorf("%w: cannot write wal file %s: %v", ErrNoSpace, name, err)
}

// unnumber gives back what number gave a batch that was not written:
// its batch number, its new tenants' ordinals and its seqs (event ids only
// go up, so the next ones stay above those given). Recovery then finds the
// log dense. Loop only.
func (w *WAL) unnumber(batch []*Request) {
	w.batchNum--
	for i := len(w.newTenants) - 1; i >= 0; i-- {
		w.num.DropTenant(w.newTenants[i].name, w.newTenants[i].ord)
	}
	w.newTenants = w.newTenants[:0]
	w.num.Rewind(batch[0].Seq - 1)
}

// logSpace logs a full-disk event through the WAL's throttle: one line
// per 10 seconds, with how many it held back.
func (w *WAL) logSpace(msg string, err error) {
	if ok, n := w.spaceLog.Allow(time.Now()); ok {
		w.opts.Logf("%s (%d similar lines suppressed): %v", msg, n, err)
	}
}
