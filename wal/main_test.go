package wal_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the package if a commit loop is still running once every
// test has closed its logs: Close must stop the loop, whatever state the
// log is in (failed, closed twice, closed with commits queued).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if stacks, ok := loopsGone(2 * time.Second); !ok {
			fmt.Fprintf(os.Stderr, "a WAL commit loop outlived its test:\n%s\n", stacks)
			code = 1
		}
	}
	os.Exit(code)
}

func loopsGone(wait time.Duration) ([]byte, bool) {
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(wait)
	for {
		buf = buf[:runtime.Stack(buf[:cap(buf)], true)]
		if !bytes.Contains(buf, []byte("wal.(*WAL).loop")) {
			return nil, true
		}
		if time.Now().After(deadline) {
			return buf, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
