package wal

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Deleting a WAL file is two steps, so that the disk's work of freeing it
// never lands on a commit.
//
// Retire takes files out of the log at once: each is renamed to its
// temporary name (which no reader of the log opens and recovery removes)
// and the directory is synced. Erase then frees a retired file gradually:
// it cuts the file down EraseChunk at a time, each cut synced on its own
// and followed by ErasePause, and removes what is left. Unlinking a whole
// 64 MiB file frees its blocks in one journal commit, which on ext4
// mounted with discard also trims them all before it ends; a commit's
// fdatasync arriving meanwhile waited 45-48 ms here, against at most 4 ms
// with 4 MiB cuts (bench/RESULTS.md).
//
// A crash between the two leaves the retired file, or what remains of it,
// under its temporary name: it is no longer part of the log, and
// recovery removes it.

const (
	// EraseChunk is how much of a retired file one cut frees.
	EraseChunk = 4 << 20
	// ErasePause is the wait after each cut, so that the commits between
	// two cuts carry none of the freeing.
	ErasePause = 5 * time.Millisecond
)

// Retire takes WAL files nums out of the log, in order, renaming each to
// its temporary name, then syncs the directory once: when it returns, a
// crash cannot bring them back. Every hook in them must be sealed and
// catalogued, and at or below the dispatch checkpoint (DESIGN.md §6 item
// 3). A file already gone is skipped.
func Retire(fs vfs.FS, dir string, nums []uint64) error {
	if len(nums) == 0 {
		return nil
	}
	for _, n := range nums {
		err := fs.Rename(fs.PathJoin(dir, FileName(n)), fs.PathJoin(dir, tmpName(n)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cannot retire wal file %s: %w", FileName(n), err)
		}
	}
	return vfsutil.SyncDir(fs, dir)
}

// Erase frees retired file num (see Retire) a chunk at a time and removes
// it, then syncs the directory. It returns early, leaving the rest for
// recovery, when stop is closed. On a file system without descriptors
// (tests) it removes the file at once.
func Erase(fs vfs.FS, dir string, num uint64, stop <-chan struct{}) error {
	path := fs.PathJoin(dir, tmpName(num))
	if err := eraseGradually(fs, path, stop); err != nil {
		return err
	}
	select {
	case <-stop:
		return nil
	default:
	}
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove retired wal file %q: %w", path, err)
	}
	return vfsutil.SyncDir(fs, dir)
}

// eraseGradually cuts the file at path down to nothing, EraseChunk at a
// time.
func eraseGradually(fs vfs.FS, path string, stop <-chan struct{}) error {
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot open retired wal file %q: %w", path, err)
	}
	defer f.Close()
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot stat retired wal file %q: %w", path, err)
	}
	for size := st.Size(); size > 0; {
		size = max(size-EraseChunk, 0)
		if err := unix.Ftruncate(int(fd), size); err != nil {
			return fmt.Errorf("cannot truncate retired wal file %q: %w", path, err)
		}
		if err := f.SyncData(); err != nil {
			return fmt.Errorf("cannot fdatasync retired wal file %q: %w", path, err)
		}
		select {
		case <-stop:
			return nil
		case <-time.After(ErasePause):
		}
	}
	return nil
}
