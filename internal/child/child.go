// Package child holds the small pieces that every harness driving a child
// process (the binary's tests, the crash harness, the benchmark harness, the
// example's end-to-end test) needs: an output buffer safe to read while the
// process writes it, a free loopback address, and the module's root (where
// bin/ holds the programs a test runs). Only tests and
// benchmarks import it; it imports nothing of this module.
package child

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// Buffer collects a process's output while another goroutine reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) {
	// The kernel may hand a port just closed out again: a process never
	// gets the same one twice from here (two listeners of one node, one
	// address, was a test failure).
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("cannot find a free loopback port: %w", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		given.Lock()
		fresh := !given.addrs[addr]
		given.addrs[addr] = true
		given.Unlock()
		if fresh {
			return addr, nil
		}
	}
	return "", fmt.Errorf("cannot find a loopback port not given out before")
}

// given are the addresses FreeAddr has returned.
var given = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// ModuleRoot is the nearest directory above the working directory (a
// test's package directory) that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
