package wal

// writeAll on the production path: unix.Writev on the descriptor of a real
// file of vfs.Default. (The in-memory file systems of the other tests have
// no descriptor and take the one-Write-per-buffer path.)

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// testBuffers returns n buffers; sizes(i) is buffer i's length. Every byte
// depends on its buffer and position, so a buffer written twice, out of
// order or from the wrong offset changes the file.
func testBuffers(n int, sizes func(i int) int) [][]byte {
	iov := make([][]byte, n)
	for i := range iov {
		b := make([]byte, sizes(i))
		for j := range b {
			b[j] = byte(i*131 + j*7 + j>>8)
		}
		iov[i] = b
	}
	return iov
}

// createDiskFile creates a file on disk through vfs.Default and requires
// it to have a descriptor, so writeAll takes the writev path.
func createDiskFile(t *testing.T) (vfs.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName(1))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if f.Fd() == vfs.InvalidFd {
		f.Close()
		t.Fatal("vfs.Default gave a file without a descriptor: writeAll would not use writev")
	}
	return f, path
}

// writeAllWithin runs writeAll and fails the test if it has not returned
// within d. A writeAll that never returns spins on writev; closing the
// file makes its next writev fail, so the goroutine ends with the test.
func writeAllWithin(t *testing.T, f vfs.File, iov [][]byte, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var scratch []byte
		done <- writeAll(f, iov, &scratch)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		f.Close()
		<-done
		t.Fatalf("writeAll of %d buffers did not return within %s", len(iov), d)
		return nil
	}
}

// checkWriteAll writes iov to a new file and requires its contents to be
// the concatenation of the buffers.
func checkWriteAll(t *testing.T, iov [][]byte, timeout time.Duration) {
	t.Helper()
	want := bytes.Join(iov, nil) // before writeAll, which may reslice iov's entries
	f, path := createDiskFile(t)
	if err := writeAllWithin(t, f, iov, timeout); err != nil {
		t.Fatalf("writeAll: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("the file holds %d bytes, want the %d of the %d buffers; first difference at byte %d", len(got), len(want), len(iov), i)
	}
}

func TestWriteAllWritev(t *testing.T) {
	const mib = 1 << 20
	small := func(i int) int { return 1 + i%61 }
	cases := []struct {
		name string
		iov  [][]byte
	}{
		{"no buffers", nil},
		{"one buffer", testBuffers(1, func(int) int { return 100 })},
		{"IOV_MAX-1 buffers", testBuffers(maxIovec-1, small)},
		{"IOV_MAX buffers", testBuffers(maxIovec, small)},
		{"IOV_MAX+1 buffers", testBuffers(maxIovec+1, small)},
		{"three chunks and a bit", testBuffers(3*maxIovec+17, small)},
		{"every third buffer empty", testBuffers(2500, func(i int) int {
			if i%3 == 1 { // 2499 is not: see TestWriteAllEmptyTail
				return 0
			}
			return small(i)
		})},
		{"leading empty buffers, a chunk's worth less one", testBuffers(maxIovec+10, func(i int) int {
			if i < maxIovec-1 {
				return 0
			}
			return small(i)
		})},
		{"large buffers", testBuffers(7, func(i int) int {
			return []int{4*mib + 3, 1, 16 * mib, 0, 7, 9*mib + 1, 33}[i]
		})},
		{"large buffers at the chunk edges", testBuffers(2*maxIovec+5, func(i int) int {
			switch i {
			case 0, maxIovec - 1, maxIovec, 2*maxIovec - 1, 2 * maxIovec, 2*maxIovec + 4:
				return 2*mib + i
			}
			return small(i)
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkWriteAll(t, tc.iov, 30*time.Second)
		})
	}
}

// TestWriteAllEmptyTail: zero-length buffers where writev has nothing
// else to write (after the last byte, or a whole IOV_MAX chunk of them)
// make writev return 0; writeAll must still drop them and return.
func TestWriteAllEmptyTail(t *testing.T) {
	small := func(i int) int { return 1 + i%61 }
	cases := []struct {
		name string
		iov  [][]byte
	}{
		{"one empty buffer", [][]byte{{}}},
		{"data then an empty buffer", [][]byte{[]byte("hook"), {}}},
		{"data then more than a chunk of empty buffers", testBuffers(maxIovec+100, func(i int) int {
			if i < 50 {
				return small(i)
			}
			return 0
		})},
		{"a whole chunk of empty buffers, then data", testBuffers(maxIovec+3, func(i int) int {
			if i < maxIovec {
				return 0
			}
			return small(i)
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkWriteAll(t, tc.iov, 2*time.Second)
		})
	}
}

// pipeFile is the write end of a pipe as a vfs.File: writeAll uses only
// its descriptor (and writeAllWithin closes it on a timeout).
type pipeFile struct {
	vfs.File
	w  *os.File
	fd uintptr
}

func (p pipeFile) Fd() uintptr  { return p.fd }
func (p pipeFile) Close() error { return p.w.Close() }

// TestWriteAllPartialWritev makes the kernel return a short writev: Linux
// writes at most MAX_RW_COUNT (2GiB less a page) per call, so a call of
// more stops inside a buffer, and writeAll must go on from that byte. The
// buffers are overlapping windows of one 96MiB array, so the test holds
// 96MiB, not 2GiB; a pipe carries the bytes to a reader that checksums
// them, so nothing touches the disk.
func TestWriteAllPartialWritev(t *testing.T) {
	const (
		mib         = 1 << 20
		maxRWCount  = 0x7ffff000 // Linux MAX_RW_COUNT with 4KiB pages
		window      = 56 * mib
		windowCount = 40
	)
	backing := make([]byte, window+windowCount*mib)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(backing); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(backing[i:], x)
	}
	iov := make([][]byte, windowCount)
	total := 0
	table := crc32.MakeTable(crc32.Castagnoli)
	var want uint32
	for i := range iov {
		iov[i] = backing[i*mib : i*mib+window]
		total += len(iov[i])
		want = crc32.Update(want, table, iov[i])
	}
	if total <= maxRWCount {
		t.Fatalf("BUG: %d bytes do not pass MAX_RW_COUNT", total)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := w.Fd() // puts the write end in blocking mode, as a file is
	_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20)
	type result struct {
		n   int64
		sum uint32
		err error
	}
	read := make(chan result, 1)
	go func() {
		h := crc32.New(table)
		n, err := io.Copy(h, r)
		read <- result{n, h.Sum32(), err}
	}()
	start := time.Now()
	err = writeAllWithin(t, pipeFile{w: w, fd: fd}, iov, 5*time.Minute)
	w.Close()
	got := <-read
	if err != nil || got.err != nil {
		t.Fatalf("writeAll: %v; reader: %v", err, got.err)
	}
	if got.n != int64(total) || got.sum != want {
		t.Fatalf("the reader got %d bytes with crc %08x, want the %d bytes of the buffers with crc %08x", got.n, got.sum, total, want)
	}
	t.Logf("%d MiB in %s", total/mib, time.Since(start).Round(time.Millisecond))
}
