package wal_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the package if a commit loop, or the preparation of a
// file ahead of rotation, is still running once every test has closed its
// logs: Close must stop both, whatever state the log is in (failed, closed
// twice, closed with commits queued or a preparation under way).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if stacks, ok := loopsGone(2 * time.Second); !ok {
			fmt.Fprintf(os.Stderr, "a WAL commit loop or file preparation outlived its test:\n%s\n", stacks)
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
		if !bytes.Contains(buf, []byte("wal.(*WAL).loop(")) && !bytes.Contains(buf, []byte("wal.(*WAL).prepare(")) {
			return nil, true
		}
		if time.Now().After(deadline) {
			return buf, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
