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
	"math/rand/v2"
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
//
// The port comes from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), which the kernel never hands out by
// itself: a port it chose for a listener on port 0 could be taken, before
// the child binds it, as the local end of any process's outgoing
// connection ("bind: address already in use" in a fresh-clone CI run,
// with the race-built and plain test binaries running side by side).
// Without room below that range it falls back to a kernel-chosen port.
func FreeAddr() (string, error) {
	lo, hi := quietPorts()
	for range 200 {
		var addr string
		if hi > lo {
			addr = fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", fmt.Errorf("cannot find a free loopback port: %w", err)
			}
			addr = ln.Addr().String()
			ln.Close()
		}
		// A process never gets the same address twice from here (two
		// listeners of one node, one address, was a test failure).
		given.Lock()
		fresh := !given.addrs[addr]
		given.addrs[addr] = true
		given.Unlock()
		if !fresh {
			continue
		}
		if hi > lo {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				continue // someone listens there
			}
			ln.Close()
		}
		return addr, nil
	}
	return "", fmt.Errorf("cannot find a loopback port not given out before")
}

// quietPorts is the range [lo, hi) FreeAddr draws from: from 20000 up to
// the start of the ephemeral range, or nothing (lo == hi) when that leaves
// fewer than 1000 ports or the range cannot be read.
func quietPorts() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first-20000 < 1000 {
		return 0, 0
	}
	return 20000, first
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
