//go:build linux

package main

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// peekIdle reports whether an idle connection has nothing to read: a
// non-blocking MSG_PEEK finds EAGAIN. EOF (the server closed it), a reset
// or unsolicited bytes mean it must not carry another request.
func peekIdle(c syscall.Conn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		alive = errors.Is(rerr, unix.EAGAIN)
		return true // never wait: this is a check, not a read
	})
	return err == nil && alive
}

// spinUntilReadable polls the connection without blocking until it has
// bytes to read or until deadline: the answer is then read without the
// runtime parking the goroutine and waking a thread for it (about 50 µs
// at low rates here), at the cost of a core spinning meanwhile.
func spinUntilReadable(c syscall.Conn, deadline time.Time) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	var buf [1]byte
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if n > 0 || !errors.Is(rerr, unix.EAGAIN) || time.Now().After(deadline) {
				return true
			}
		}
	})
}
