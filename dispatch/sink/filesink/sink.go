package filesink

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// Sink appends hooks to a file, one JSON envelope a line, and answers ok
// only once the line is fsynced (see the package doc). It is safe for
// concurrent use.
type Sink struct {
	o       Options
	path    string
	timeout time.Duration
	log     *zap.Logger

	mu      sync.Mutex
	f       *os.File // nil until the first Deliver, and after a failure
	size    int64    // the file's length after the last whole line
	queue   []*batch // lines written and not yet in an fsync, oldest first
	syncing bool     // a syncLoop runs
	closed  bool

	syncs atomic.Int64 // fsyncs begun, for the tests
}

// batch is the lines one fsync makes safe: those written to f while no
// other fsync had taken them. done is closed when the fsync has ended;
// err is then its outcome.
type batch struct {
	f    *os.File
	done chan struct{}
	err  error
}

var _ dispatch.Sink = (*Sink)(nil)

// New checks o and returns the sink. It opens nothing: the first Deliver
// does.
func New(o Options) (*Sink, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("file sink %q of source %q: %w", o.Spec.ID, o.Source, err)
	}
	return &Sink{
		o:       o,
		path:    o.Spec.Path,
		timeout: time.Duration(o.Spec.Timeout),
		log:     o.Logger.With(zap.String("sink", o.Spec.ID), zap.String("source", o.Source), zap.String("path", o.Spec.Path)),
	}, nil
}

// Check reports what New would refuse in spec, touching no file; an error
// names the key relative to the sink. check-config calls it
// (config.ValidateOptions.CheckSink).
func Check(spec config.Sink) error {
	o := Options{Spec: spec}
	o.EnsureDefaults()
	return o.Validate()
}

// Durable is false: the line is fsynced, but on the node's own disk,
// which is not what wal.type: none needs (config.DurableSinkTypes).
func (s *Sink) Durable() bool { return false }

// linePool holds the buffers lines are built in. A buffer that grew past
// maxPooled (a large body) is left to the collector.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooled = 1 << 20

// Deliver appends d's hook as one line and waits until an fsync that
// began after the write has ended, for at most Spec.Timeout and until ctx
// is done. It returns nil only once the line is fsynced; every error is a
// retryable *dispatch.Error naming the path. Deliver does not keep d.
func (s *Sink) Deliver(ctx context.Context, d *dispatch.Delivery) error {
	d.Status = 0
	bp := linePool.Get().(*[]byte)
	line := append(d.Envelope.AppendJSON((*bp)[:0]), '\n')
	b, err := s.write(line)
	if cap(line) <= maxPooled {
		*bp = line
		linePool.Put(bp)
	}
	if err != nil {
		return retryable(err)
	}
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case <-b.done:
		if b.err != nil {
			return retryable(b.err)
		}
		return nil
	case <-t.C:
		return retryable(fmt.Errorf("%w: %s not fsynced within %v (timeout); the line may be in the file", ErrNoSync, s.path, s.timeout))
	case <-ctx.Done():
		return retryable(fmt.Errorf("%w: %s: %w; the line may be in the file", ErrNoSync, s.path, ctx.Err()))
	}
}

// write appends line with one write(2) and returns the batch whose fsync
// makes it safe, starting a syncLoop when none runs.
func (s *Sink) write(line []byte) (*batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w (%s)", ErrClosed, s.path)
	}
	if s.f == nil {
		if err := s.openLocked(); err != nil {
			return nil, err
		}
	}
	n, err := s.f.Write(line)
	if err != nil {
		// Cut a partial line off, so the next line starts a line of its
		// own; a file that cannot be cut is opened again (openLocked
		// ends the cut line).
		if n > 0 {
			if terr := s.f.Truncate(s.size); terr != nil {
				s.dropLocked()
			}
		}
		return nil, fmt.Errorf("cannot append to %s: %w", s.path, err)
	}
	s.size += int64(n)
	var b *batch
	if k := len(s.queue); k > 0 && s.queue[k-1].f == s.f {
		b = s.queue[k-1]
	} else {
		b = &batch{f: s.f, done: make(chan struct{})}
		s.queue = append(s.queue, b)
	}
	if !s.syncing {
		s.syncing = true
		go s.syncLoop()
	}
	return b, nil
}

// syncLoop fsyncs batch after batch until none is left. Lines written
// while it syncs one batch go into the next.
func (s *Sink) syncLoop() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.queue = nil
			s.syncing = false
			s.mu.Unlock()
			return
		}
		b := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.syncs.Add(1)
		if err := b.f.Sync(); err != nil {
			b.err = fmt.Errorf("cannot fsync %s: %w", s.path, err)
			// After a failed fsync the kernel may have dropped the
			// pages: the file is opened again, and the failed lines are
			// written again by their retries.
			s.mu.Lock()
			if s.f == b.f {
				s.dropLocked()
			}
			s.mu.Unlock()
		}
		close(b.done)
	}
}

// openLocked opens the file for appending, making its directory, and
// ends a line a crash cut short (never acknowledged) so that the next
// line is whole. Under s.mu.
func (s *Sink) openLocked() error {
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("cannot make the directory of %s (path): %w", s.path, err)
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open %s (path): %w", s.path, err)
	}
	size, err := endLine(f, s.path)
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("cannot open %s (path): %w", s.path, err)
	}
	s.f, s.size = f, size
	s.log.Info("appending delivered hooks to a file, one JSON envelope a line", zap.Int64("bytes", size))
	return nil
}

// endLine returns the length of the file f opened for appending at path,
// after writing a newline when the file's last byte is not one.
func endLine(f *os.File, path string) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	r, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, size-1); err != nil && err != io.EOF {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	n, err := f.Write([]byte{'\n'})
	return size + int64(n), err
}

// syncDir fsyncs a directory, so that a file just made in it is there
// after a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// dropLocked closes the file; the next Deliver opens it again. A batch
// still queued on it fails its fsync, and its lines are retried. Under
// s.mu.
func (s *Sink) dropLocked() {
	if err := s.f.Close(); err != nil {
		s.log.Warn("cannot close the file", zap.Error(err))
	}
	s.f = nil
}

// Close closes the file. Deliver calls in flight may fail (their lines
// are then retried by the dispatcher at the next start); later ones fail
// with ErrClosed.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
