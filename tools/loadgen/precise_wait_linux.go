//go:build linux

package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fineTimer is a non-blocking timerfd wrapped in an *os.File, so that a
// read parks the goroutine in the runtime's poller, which the timerfd wakes
// on time (timerfd expiries get no timer slack). If the timerfd cannot be
// made, it falls back to time.Sleep.
type fineTimer struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newFineTimer() *fineTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &fineTimer{fd: -1}
	}
	return &fineTimer{fd: fd, f: os.NewFile(uintptr(fd), "loadgen-timerfd")}
}

// sleep returns after d (d > 0).
func (t *fineTimer) sleep(d time.Duration) {
	if t.f == nil {
		time.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
		return
	}
	if _, err := t.f.Read(t.buf[:]); err != nil {
		time.Sleep(d)
	}
}

func (t *fineTimer) close() {
	if t.f != nil {
		t.f.Close()
	}
}
