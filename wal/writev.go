package wal

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// maxIovec is what one writev call may take (IOV_MAX on Linux).
const maxIovec = 1024

// writeAll writes every buffer of iov to f, in order: with writev on the
// file's descriptor when it has one, one Write of the buffers joined in
// scratch otherwise (the in-memory file systems of tests).
func writeAll(f vfs.File, iov [][]byte, scratch *[]byte) error {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		// A file without a descriptor (a test file system, a fault
		// injector) gets one copy of the batch: it may keep or change what
		// it is given (pebble's MemFS flips the bytes it wrote under
		// invariants), and the records must stay intact for whoever holds
		// them after the commit (dispatch).
		buf := (*scratch)[:0]
		for _, b := range iov {
			buf = append(buf, b...)
		}
		*scratch = buf
		n, err := f.Write(buf)
		if err != nil {
			return err
		}
		if n != len(buf) {
			return errShortWrite
		}
		return nil
	}
	for len(iov) > 0 {
		chunk := iov[:min(len(iov), maxIovec)]
		n, err := unix.Writev(int(fd), chunk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		// Drop what was written (empty buffers included); a partial writev
		// leaves a tail to redo.
		before := len(iov)
		for len(iov) > 0 && n >= len(iov[0]) {
			n -= len(iov[0])
			iov = iov[1:]
		}
		if n > 0 {
			iov[0] = iov[0][n:]
		} else if len(iov) == before {
			return errShortWrite // nothing written of a non-empty chunk: do not spin
		}
	}
	return nil
}
