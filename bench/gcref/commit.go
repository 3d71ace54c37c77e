package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// queueLen bounds the records waiting for the commit goroutine. Handlers
// block when it is full; the load generator's connection count keeps it far
// below that.
const queueLen = 1 << 14

// maxIovec is what one writev call may take (IOV_MAX on Linux).
const maxIovec = 1024

// exitFatal is the exit status after a failed write or fdatasync.
const exitFatal = 3

// hook is one request's record on its way through the commit goroutine.
// The handler owns it until it sends it on the queue and again once done
// is signalled; in between the commit goroutine owns rec and sets seq.
type hook struct {
	rec  []byte // 4-byte length + a copy of the body
	seq  uint64
	done chan struct{}
}

var hookPool = sync.Pool{New: func() any { return &hook{done: make(chan struct{}, 1)} }}

type committer struct {
	f       *os.File
	queue   chan *hook
	stopped chan struct{}
	handle  fasthttp.RequestHandler // benchkit.Handler of commit

	records atomic.Uint64
	fsyncs  atomic.Uint64
	fsyncNs atomic.Uint64 // time spent in fdatasync
}

// openCommitter creates (or truncates) the log at path, makes its directory
// entry durable, and starts the commit goroutine.
func openCommitter(path string) (*committer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot create %q: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot sync the directory of %q: %w", path, err)
	}
	c := &committer{
		f:       f,
		queue:   make(chan *hook, queueLen),
		stopped: make(chan struct{}),
	}
	c.handle = benchkit.Handler(c.commit, func() string {
		return `{"records":` + strconv.FormatUint(c.records.Load(), 10) +
			`,"fsyncs":` + strconv.FormatUint(c.fsyncs.Load(), 10) +
			`,"fsync_ns":` + strconv.FormatUint(c.fsyncNs.Load(), 10) + `}`
	})
	go c.loop()
	return c, nil
}

// commit hands a POST body to the commit goroutine and returns its seq
// once it is on disk.
func (c *committer) commit(body []byte) uint64 {
	h := hookPool.Get().(*hook)
	h.rec = binary.BigEndian.AppendUint32(h.rec[:0], uint32(len(body)))
	h.rec = append(h.rec, body...)
	c.queue <- h
	<-h.done
	seq := h.seq
	hookPool.Put(h)
	return seq
}

// loop is the commit goroutine: one writev and one fdatasync per batch of
// every record waiting, then the whole batch is released.
func (c *committer) loop() {
	defer close(c.stopped)
	fd := int(c.f.Fd())
	var (
		batch []*hook
		iov   [][]byte
		seq   uint64
	)
	for h := range c.queue {
		batch = append(batch[:0], h)
	drain:
		for len(batch) < queueLen {
			select {
			case h, ok := <-c.queue:
				if !ok {
					break drain
				}
				batch = append(batch, h)
			default:
				break drain
			}
		}
		iov = iov[:0]
		for _, h := range batch {
			iov = append(iov, h.rec)
		}
		if err := writeAll(fd, iov); err != nil {
			fatal("cannot write the log", err)
		}
		start := time.Now()
		if err := unix.Fdatasync(fd); err != nil {
			fatal("cannot fdatasync the log", err)
		}
		c.fsyncNs.Add(uint64(time.Since(start)))
		c.fsyncs.Add(1)
		c.records.Add(uint64(len(batch)))
		for _, h := range batch {
			seq++
			h.seq = seq
			h.done <- struct{}{}
		}
		clear(batch) // drop the pointers: the handlers own the hooks again
	}
}

// close stops the commit goroutine once the handlers are gone and closes
// the log.
func (c *committer) close() {
	close(c.queue)
	<-c.stopped
	c.f.Close()
}

// writeAll writes every buffer of iov to fd in order, redoing the tail of a
// partial writev.
func writeAll(fd int, iov [][]byte) error {
	for len(iov) > 0 {
		n, err := unix.Writev(fd, iov[:min(len(iov), maxIovec)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("writev wrote nothing")
		}
		for len(iov) > 0 && n >= len(iov[0]) {
			n -= len(iov[0])
			iov = iov[1:]
		}
		if n > 0 {
			iov[0] = iov[0][n:]
		}
	}
	return nil
}

func fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "gcref: %s: %v; stopping, nothing after this is acknowledged\n", what, err)
	os.Exit(exitFatal)
}
