package vfsutil

import (
	"errors"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A directory made by MkdirAllSynced, and a file in it whose directory
// was synced, survive a crash that drops everything not synced; without
// the syncs they do not.
func TestSyncedDirectoriesSurviveACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	if err := MkdirAllSynced(fs, "/data/a/b"); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create("/data/a/b/f", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := SyncDir(fs, "/data/a/b"); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/data/unsynced", 0o755); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if _, err := crashed.Stat("/data/a/b/f"); err != nil {
		t.Fatalf("synced file lost in the crash: %v", err)
	}
	if _, err := crashed.Stat("/data/unsynced"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a directory whose parent was never synced survived the crash (%v): the test cannot tell a sync from none", err)
	}
	if err := SyncDir(fs, "/missing"); err == nil {
		t.Fatal("SyncDir of a missing directory: no error")
	}
}
