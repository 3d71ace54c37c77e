package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/wal"
)

// The storage monitor keeps storage.reserve_bytes (R) back on the file
// system of node.data_dir, so that on a full disk the node can still
// checkpoint, seal what it holds and delete what it may (DESIGN.md §6
// item 10: ENOSPC is not fatal). R is held as a ballast file,
// <data_dir>/storage.reserve. It is released (removed)
//
//   - when free space falls below R/2 (polled every 250ms with statfs), or
//   - at once, when a write of the meta store or of the sealer meets
//     ENOSPC: their file systems are wrapped with pebble's vfs.OnDiskFull,
//     which retries the write once the ballast is gone.
//
// While the ballast is released, ingest answers 503 (wal.SetLowSpace),
// and /readyz says why. Once the file system has 2R free again, the
// ballast is made again and ingest resumes. The WAL's own full disk (its
// next file cannot be allocated) refuses ingest too, on its own.

const (
	ballastName  = "storage.reserve"
	monitorEvery = 250 * time.Millisecond
)

var (
	storageFree     atomic.Int64
	storageFullFlag atomic.Bool
	_               = metrics.NewGauge("ankusa_storage_free_bytes", func() float64 { return float64(storageFree.Load()) })
	_               = metrics.NewGauge("ankusa_storage_full", func() float64 {
		if storageFullFlag.Load() {
			return 1
		}
		return 0
	})
	reserveReleased = metrics.NewCounter("ankusa_storage_reserve_released_total")
	statfsFailures  = metrics.NewCounter("ankusa_storage_statfs_failures_total")
	reserveFailures = metrics.NewCounter("ankusa_storage_reserve_failures_total")
)

// storage is the monitor of one node's data_dir.
type storage struct {
	dir     string
	reserve int64
	log     *zap.Logger

	mu   sync.Mutex
	held bool     // the ballast is in place
	wal  *wal.WAL // set once the WAL is open; nil with wal.type: none
	why  string   // why the ballast was released, for /readyz

	stop chan struct{}
	done chan struct{}
}

// freeBytes is what statfs says an unprivileged writer may still use on
// the file system holding dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("cannot statfs node.data_dir %q: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// checkBootSpace is the boot's first look at data_dir: a ballast left by
// the last run is released (the boot may need it), and a file system with
// less than R/2 free refuses the boot at once, naming data_dir, rather
// than open a meta store that could not even flush.
func checkBootSpace(dir string, reserve int64) error {
	if err := os.Remove(filepath.Join(dir, ballastName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot release the storage reserve in node.data_dir %q: %w", dir, err)
	}
	free, err := freeBytes(dir)
	if err != nil {
		return err
	}
	storageFree.Store(free)
	if free < reserve/2 {
		return fmt.Errorf("node.data_dir %q: the file system is full (%d bytes free, the node needs %d, half of storage.reserve_bytes, to start): free space and start again", dir, free, reserve/2)
	}
	return nil
}

// newStorage returns the monitor of dir; start runs it.
func newStorage(dir string, reserve int64, log *zap.Logger) *storage {
	return &storage{dir: dir, reserve: reserve, log: log, why: "the storage reserve is not in place yet",
		stop: make(chan struct{}), done: make(chan struct{})}
}

// fs wraps the file system of a store the reserve is kept for: a write
// that meets ENOSPC releases the ballast and is tried again.
func (s *storage) fs() vfs.FS { return vfs.OnDiskFull(vfs.Default, s.onDiskFull) }

func (s *storage) onDiskFull() { s.release("a write of the meta store or the sealer met a full disk") }

// setWAL has the monitor refuse ingest through w while the reserve is
// released.
func (s *storage) setWAL(w *wal.WAL) {
	s.mu.Lock()
	s.wal = w
	w.SetLowSpace(!s.held)
	s.mu.Unlock()
}

func (s *storage) start() { go s.loop() }

func (s *storage) close() {
	close(s.stop)
	<-s.done
}

func (s *storage) loop() {
	defer close(s.done)
	t := time.NewTicker(monitorEvery)
	defer t.Stop()
	var failLog time.Time
	for {
		free, err := freeBytes(s.dir)
		if err != nil {
			statfsFailures.Inc()
			if time.Since(failLog) > time.Minute {
				failLog = time.Now()
				s.log.Error("storage monitor: cannot read free space; the reserve stays as it is", zap.Error(err))
			}
		} else {
			s.check(free)
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// check acts on a statfs reading.
func (s *storage) check(free int64) {
	storageFree.Store(free)
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	switch {
	case held && free < s.reserve/2:
		s.release(fmt.Sprintf("free space on node.data_dir fell to %d bytes, below half of storage.reserve_bytes (%d)", free, s.reserve))
	case !held && free >= 2*s.reserve:
		s.hold()
	}
}

// release removes the ballast and refuses ingest. Safe to call from
// pebble's OnDiskFull callback: it takes only s.mu and removes one file.
func (s *storage) release(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return
	}
	if err := os.Remove(filepath.Join(s.dir, ballastName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Error("cannot release the storage reserve", zap.Error(err))
	}
	s.held, s.why = false, why
	s.refuse(true)
	reserveReleased.Inc()
	s.log.Warn("disk full: released storage.reserve_bytes for the meta store and the sealer; ingest answers 503 until space returns",
		zap.String("data_dir", s.dir), zap.String("why", why), zap.Int64("reserve_bytes", s.reserve))
}

// hold makes the ballast and lets ingest in again.
func (s *storage) hold() {
	path := filepath.Join(s.dir, ballastName)
	if err := makeBallast(path, s.reserve); err != nil {
		_ = os.Remove(path)
		reserveFailures.Inc()
		if !errors.Is(err, syscall.ENOSPC) {
			s.log.Error("cannot make the storage reserve; ingest stays refused", zap.String("file", path), zap.Error(err))
		}
		return
	}
	s.mu.Lock()
	s.held, s.why = true, ""
	s.refuse(false)
	s.mu.Unlock()
	s.log.Info("storage reserve in place; ingest is open", zap.String("data_dir", s.dir), zap.Int64("reserve_bytes", s.reserve))
}

// refuse tells the WAL. Under s.mu.
func (s *storage) refuse(low bool) {
	storageFullFlag.Store(low)
	if s.wal != nil {
		s.wal.SetLowSpace(low)
	}
}

// NoSpace says why the node refuses hooks for want of space ("" when it
// does not): /readyz answers 503 with it.
func (s *storage) NoSpace() string {
	s.mu.Lock()
	held, why, w := s.held, s.why, s.wal
	s.mu.Unlock()
	switch {
	case !held:
		return fmt.Sprintf("disk full: node.data_dir %q: %s; ingest answers 503 until the file system has 2 x storage.reserve_bytes (%d) free", s.dir, why, 2*s.reserve)
	case w != nil && w.NoSpace():
		return fmt.Sprintf("disk full: node.data_dir %q: the wal cannot allocate its next file (wal.max_file_bytes); ingest answers 503 until space returns", s.dir)
	}
	return ""
}

// makeBallast allocates size bytes at path: fallocate, or zeros written
// on a file system without it.
func makeBallast(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		err = writeZeros(f, size)
	}
	return err
}

func writeZeros(f *os.File, size int64) error {
	zeros := make([]byte, 1<<20)
	for size > 0 {
		n, err := f.Write(zeros[:min(int64(len(zeros)), size)])
		if err != nil {
			return err
		}
		size -= int64(n)
	}
	return f.Sync()
}
