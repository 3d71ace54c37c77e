package outboxcrash

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS wraps a file system and, while armed, calls its hooks around every
// sync of a file or a directory (Sync, SyncData, SyncTo): the sync points
// of a store opened on it. Disarmed, it only passes calls through. It is
// safe for concurrent use; the hooks are called from whichever goroutine
// syncs (pebble's log writer, a committer).
type FS struct {
	vfs.FS
	hooks atomic.Pointer[Hooks]
}

// Hooks are called at a sync point with the path synced: Before before
// the sync runs (what it would make durable is not yet), After once it
// returned without error.
type Hooks struct {
	Before, After func(path string)
}

// Wrap returns fs with sync points, disarmed.
func Wrap(fs vfs.FS) *FS { return &FS{FS: fs} }

// Arm makes the sync points call h from now on.
func (fs *FS) Arm(h *Hooks) { fs.hooks.Store(h) }

// Disarm stops calling the hooks.
func (fs *FS) Disarm() { fs.hooks.Store(nil) }

func (fs *FS) wrap(f vfs.File, err error, path string) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: fs, path: path}, nil
}

// Create wraps the file created.
func (fs *FS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	return fs.wrap(f, err, name)
}

// OpenReadWrite wraps the file opened.
func (fs *FS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, cat, opts...)
	return fs.wrap(f, err, name)
}

// ReuseForWrite wraps the recycled file (pebble reuses old log files).
func (fs *FS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	return fs.wrap(f, err, newname)
}

// OpenDir wraps the directory opened: syncing it is a sync point too.
func (fs *FS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, err, name)
}

// Unwrap is the file system under fs (pebble's vfs.Root walks it).
func (fs *FS) Unwrap() vfs.FS { return fs.FS }

type file struct {
	vfs.File
	fs   *FS
	path string
}

// synced runs do as one sync point.
func (f *file) synced(do func() error) error {
	h := f.fs.hooks.Load()
	if h != nil && h.Before != nil {
		h.Before(f.path)
	}
	if err := do(); err != nil {
		return err
	}
	if h != nil && h.After != nil {
		h.After(f.path)
	}
	return nil
}

func (f *file) Sync() error     { return f.synced(f.File.Sync) }
func (f *file) SyncData() error { return f.synced(f.File.SyncData) }

func (f *file) SyncTo(length int64) (full bool, err error) {
	err = f.synced(func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}
