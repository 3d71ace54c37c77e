package cli

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/internal/backoff"
)

// waitFS is the meta store's file system on top of the reserve's
// OnDiskFull: a write that still meets ENOSPC once the reserve is gone is
// retried with backoff (10ms doubling to 1s) for up to maxWait, the rest
// of the buffer each time, so pebble's log and tables are never written
// half; pebble treats a failed log write as fatal (DESIGN.md §6 item 8),
// which only a disk full for longer than that reaches. A sync is never
// retried.
type waitFS struct {
	vfs.FS
	maxWait time.Duration
	sleep   func(time.Duration)
}

// metaWriteWait is how long a meta store write waits for space.
const metaWriteWait = 30 * time.Second

var metaWriteWaits = metrics.NewCounter("ankusa_storage_meta_write_retries_total")

func newWaitFS(fs vfs.FS, maxWait time.Duration) vfs.FS {
	return &waitFS{FS: fs, maxWait: maxWait, sleep: time.Sleep}
}

func isENOSPC(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// retry runs op until it does not fail with ENOSPC or maxWait has passed.
func (fs *waitFS) retry(op func() error) error {
	start := time.Now()
	for i := 0; ; i++ {
		err := op()
		if !isENOSPC(err) {
			return err
		}
		if time.Since(start) >= fs.maxWait {
			return fmt.Errorf("the disk of node.data_dir stayed full for %s: %w", fs.maxWait, err)
		}
		metaWriteWaits.Inc()
		fs.sleep(backoff.Ceiling(i, 10*time.Millisecond, time.Second))
	}
}

func (fs *waitFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.retry(func() (err error) {
		f, err = fs.FS.Create(name, cat)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &waitFile{File: f, fs: fs}, nil
}

func (fs *waitFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return &waitFile{File: f, fs: fs}, nil
}

func (fs *waitFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return &waitFile{File: f, fs: fs}, nil
}

// waitFile retries its writes; everything else is the file's own.
type waitFile struct {
	vfs.File
	fs *waitFS
}

func (f *waitFile) Write(p []byte) (int, error) {
	done := 0
	err := f.fs.retry(func() error {
		n, err := f.File.Write(p[done:])
		done += n
		return err
	})
	return done, err
}

func (f *waitFile) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	err := f.fs.retry(func() error {
		n, err := f.File.WriteAt(p[done:], off+int64(done))
		done += n
		return err
	})
	return done, err
}
