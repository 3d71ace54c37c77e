//go:build !linux

package main

import (
	"syscall"
	"time"
)

// peekIdle cannot check without blocking here; the connection is assumed
// alive, and a close by the server shows as a transport error.
func peekIdle(syscall.Conn) bool { return true }

// spinUntilReadable does nothing here: the read parks as usual.
func spinUntilReadable(syscall.Conn, time.Time) {}
