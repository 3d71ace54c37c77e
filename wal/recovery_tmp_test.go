package wal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/wal"
)

// TestRecoveryKeepsLeftoversOnRefusal: a crash while a file was being
// prepared leaves its .tmp file. A refused Open leaves it where it was (a
// refused Open changes no file: the operator may want to look); an Open
// that succeeds removes it.
func TestRecoveryKeepsLeftoversOnRefusal(t *testing.T) {
	src, acked := buildLog(t, 10, 2<<10, 0, time.Millisecond)
	mem := copyFS(t, src, dir)
	files := walFiles(t, mem, dir)
	if len(files) < 2 {
		t.Fatalf("files %v: the test needs two", files)
	}
	// File 1 loses its last byte: corruption, since file 2 follows.
	path := mem.PathJoin(dir, files[0])
	var lastOff int64
	for _, r := range mustReadLog(t, src, dir) {
		if r.File == path {
			lastOff = r.Offset
		}
	}
	data := readFile(t, mem, path)
	writeFile(t, mem, path, data[:len(data)-1])
	tmp := mem.PathJoin(dir, wal.FileName(uint64(len(files)+1))+".tmp")
	writeFile(t, mem, tmp, []byte("ANKUSAWL\x00\x00\x00\x01\x00\x00\x00\x00"))
	checkStrictRefuses(t, mem, path, lastOff, 0, "a cut earlier file")
	if _, err := mem.Stat(tmp); err != nil {
		t.Fatalf("a refused Open removed %s: %v", tmp, err)
	}
	writeFile(t, mem, path, data)
	w := openWAL(t, wal.Options{FS: mem})
	closeWAL(t, w)
	names, err := mem.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			t.Fatalf("Open left %s", n)
		}
	}
	checkAcked(t, checkLog(t, mustReadLog(t, mem, dir), 1, nil), acked)
}
