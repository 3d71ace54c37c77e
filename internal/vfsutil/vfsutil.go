// Package vfsutil holds the directory operations every storage stage needs
// on pebble's vfs.FS (DESIGN.md §6 item 7): a file's creation, rename or
// removal is durable only once its directory is synced. It imports nothing
// of this module.
package vfsutil

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// SyncDir fsyncs the directory dir.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %q: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot fsync directory %q: %w", dir, err)
	}
	return nil
}

// MkdirAllSynced creates dir and its missing parents, and syncs the parent
// of each directory it created: otherwise a crash can lose the directory,
// and every acknowledged record in it, even though the files were synced.
func MkdirAllSynced(fs vfs.FS, dir string) error {
	var created []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		created = append(created, d)
		if fs.PathDir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range created {
		if err := SyncDir(fs, fs.PathDir(d)); err != nil {
			return err
		}
	}
	return nil
}
