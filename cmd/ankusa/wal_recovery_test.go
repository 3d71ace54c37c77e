package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/wal"
)

// sendSequential posts n hooks one after another and returns them in order.
func sendSequential(t *testing.T, n *testNode, count int) []ack {
	t.Helper()
	var acks []ack
	for i := range count {
		tenant := []string{"t0", "t1", "acme"}[i%3]
		acks = append(acks, postOne(t, n.listen, tenant, "open", fmt.Appendf(nil, "hook %d %s", i, strings.Repeat("x", 100+i*7))))
	}
	return acks
}

// activeFile is the WAL file holding the hooks: the only file that has any
// record (each boot starts a new one).
func activeFile(t *testing.T, c walContents) string {
	t.Helper()
	file := c.hooks[0].file
	for _, h := range c.hooks {
		if h.file != file {
			t.Fatalf("hooks span %s and %s; the test wants them in one file", file, h.file)
		}
	}
	return file
}

// corruptMiddle writes 40 hooks, stops the node cleanly and flips the byte
// in the middle of the WAL file. It returns the acknowledged hooks, the WAL
// before the flip, the index of the hook the flip hit, and the file.
func corruptMiddle(t *testing.T, n *testNode) (acks []ack, before walContents, bad int, file string) {
	t.Helper()
	p := n.serve(t)
	acks = sendSequential(t, n, 40)
	p.stop()
	before = readWAL(t, n.walDir())
	checkAcked(t, acks, before.hooks)
	file = activeFile(t, before)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(len(data) / 2)
	bad = -1
	for i, h := range before.hooks {
		if h.offset <= pos {
			bad = i
		}
	}
	if bad < 1 || bad > len(before.hooks)-5 {
		t.Fatalf("the middle byte falls in hook %d of %d; the test wants whole records on both sides", bad, len(before.hooks))
	}
	data[pos] ^= 0x5a
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return acks, before, bad, file
}

// TestWALCorruptRefusesToStart: a flipped byte in the middle of the WAL,
// with whole records after it, is corruption, not a torn tail: serve exits
// non-zero naming the file and the offset of the bad record, and changes
// nothing; -wal-recovery=truncate cuts the log there and starts.
func TestWALCorruptRefusesToStart(t *testing.T) {
	n := newNode(t)
	acks, before, bad, file := corruptMiddle(t, n)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	refused := startProc(t, n.dir, "serve", "-config", n.config)
	code := refused.wait(30 * time.Second)
	if code == 0 {
		t.Fatalf("serve started on a corrupt WAL (exit 0):\n%s", refused.stderr)
	}
	want := fmt.Sprintf("%s at offset %d", file, before.hooks[bad].offset)
	if msg := refused.stderr.String(); !strings.Contains(msg, want) || !strings.Contains(msg, "-wal-recovery=truncate") {
		t.Fatalf("serve exited %d; its message should name %q and the way out (-wal-recovery=truncate):\n%s", code, want, msg)
	}
	after, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(after, data) {
		t.Fatalf("a refused start changed %s (err %v)", file, err)
	}

	// Told to, it cuts the log at the bad record and serves.
	p := n.serve(t, "-wal-recovery=truncate")
	more := postOne(t, n.listen, "t0", "open", []byte("after the cut"))
	p.stop()
	c := readWAL(t, n.walDir())
	kept := before.hooks[:bad]
	if len(c.hooks) != len(kept)+1 {
		t.Fatalf("after the cut the WAL has %d hooks, want the %d before the bad record and one more", len(c.hooks), len(kept))
	}
	checkAcked(t, append(acks[:bad:bad], more), c.hooks)
	// Numbering never goes back: the dropped hooks were acknowledged, and
	// their seqs and ids may already be downstream.
	last := c.hooks[len(c.hooks)-1].env
	dropped := before.hooks[len(before.hooks)-1].env
	if last.Seq <= dropped.Seq || bytes.Compare(last.ID[:], dropped.ID[:]) <= 0 {
		t.Fatalf("the hook after the cut got seq %d id %s; the highest ever given was seq %d id %s", last.Seq, last.ID, dropped.Seq, dropped.ID)
	}
}

// TestWALRestartAfterTruncate: once -wal-recovery=truncate has cut the log,
// the node serves on and numbering resumes above everything ever given, so
// the log has a seq gap at the cut. Every later boot must start on that log
// and keep every hook acknowledged since the cut.
func TestWALRestartAfterTruncate(t *testing.T) {
	n := newNode(t)
	acks, _, bad, _ := corruptMiddle(t, n)
	p := n.serve(t, "-wal-recovery=truncate")
	more := postOne(t, n.listen, "t0", "open", []byte("after the cut"))
	p.stop()

	p = n.serve(t) // strict again, as an operator leaves it
	later := postOne(t, n.listen, "t1", "open", []byte("one boot later"))
	p.stop()
	defer func() {
		if t.Failed() {
			t.Logf("the log of the boot after the truncating one:\n%s", p.stderr)
		}
	}()
	c := readWAL(t, n.walDir())
	checkAcked(t, append(append(acks[:bad:bad], more), later), c.hooks)
	if len(c.hooks) != bad+2 {
		t.Fatalf("two boots after the cut the WAL has %d hooks, want %d", len(c.hooks), bad+2)
	}
}

// TestWALTornTail: a crash in the middle of a write leaves a partial
// record after the last whole one (a batch that was never synced, so never
// acknowledged). The next boot cuts it, keeps every whole record, and
// serves; numbering carries on from the last whole record.
func TestWALTornTail(t *testing.T) {
	n := newNode(t)
	p := n.serve(t)
	acks := sendSequential(t, n, 20)
	p.kill9()
	before := readWAL(t, n.walDir())
	checkAcked(t, acks, before.hooks)
	file := activeFile(t, before)

	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	// The torn write: all but the last 5 bytes of a frame like the last
	// one, after it.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lastFrame := data[before.hooks[len(before.hooks)-1].offset:]
	if err := os.WriteFile(file, append(data, lastFrame[:len(lastFrame)-5]...), 0o644); err != nil {
		t.Fatal(err)
	}
	// Readers report the torn tail (serve is the one that cuts it).
	if err := wal.ReadDir(vfs.Default, n.walDir(), func(*wal.Record) error { return nil }); err == nil {
		t.Fatal("wal.ReadDir found nothing wrong with a torn tail")
	}
	tornAt := fmt.Sprintf("%s at offset %d", file, fi.Size())
	if code, _, stderr := runBin(t, n.dir, "inspect", "wal", n.walDir()); code != 1 || !strings.Contains(stderr, tornAt) {
		t.Fatalf("ankusa inspect wal on a torn tail: exit %d, want 1 naming %q:\n%s", code, tornAt, stderr)
	}

	p = n.serve(t)
	more := postOne(t, n.listen, "acme", "acme-billing", []byte("after the torn tail"))
	p.stop()
	c := readWAL(t, n.walDir())
	if len(c.hooks) != len(before.hooks)+1 {
		t.Fatalf("the WAL has %d hooks, want the %d whole ones and one more", len(c.hooks), len(before.hooks))
	}
	checkAcked(t, acks, c.hooks)
	checkAcked(t, []ack{more}, c.hooks)
	checkNumbering(t, c.hooks)
	checkInspect(t, n.walDir(), c)
	if got, _ := os.Stat(file); got.Size() != fi.Size() {
		t.Fatalf("%s is %d bytes; the torn record should have been cut back to %d", file, got.Size(), fi.Size())
	}

	// Every later boot is clean.
	p = n.serve(t)
	p.stop()
}

// TestWALDamagedTailRefusesToStart: after a clean stop every hook in the
// log was acknowledged, and the clean-close record says so. Damage at the
// tail of the last file (a flipped byte in its last record, the file cut
// short) is then not a crash's torn batch: serve refuses to start, naming
// the file, the offset and how many acknowledged hooks a cut would lose,
// and changes nothing; -wal-recovery=truncate still cuts.
func TestWALDamagedTailRefusesToStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(data []byte, hooks []hook) []byte
		lost   int
	}{
		{"byte flipped in the last record", func(data []byte, hooks []hook) []byte {
			data[int(hooks[len(hooks)-1].offset)+40] ^= 0x5a
			return data
		}, 1},
		// A cut at a record boundary scans clean: only the clean-close
		// record tells it from a crash.
		{"file cut at a record boundary", func(data []byte, hooks []hook) []byte { return data[:hooks[len(hooks)-5].offset] }, 5},
		{"file cut to 10 bytes", func(data []byte, _ []hook) []byte { return data[:10] }, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t)
			p := n.serve(t)
			acks := sendSequential(t, n, 12)
			p.stop()
			before := readWAL(t, n.walDir())
			checkAcked(t, acks, before.hooks)
			file := activeFile(t, before)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			damaged := c.damage(data, before.hooks)
			if err := os.WriteFile(file, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			refused := startProc(t, n.dir, "serve", "-config", n.config)
			if code := refused.wait(30 * time.Second); code == 0 {
				t.Fatalf("serve started on a damaged tail (exit 0):\n%s", refused.stderr)
			}
			msg := refused.stderr.String()
			if !strings.Contains(msg, file+" at offset ") || !strings.Contains(msg, fmt.Sprintf("would lose %d acknowledged hooks", c.lost)) || !strings.Contains(msg, "-wal-recovery=truncate") {
				t.Fatalf("serve's refusal should name %s, the offset, %d acknowledged hooks lost and the way out:\n%s", file, c.lost, msg)
			}
			if after, _ := os.ReadFile(file); !bytes.Equal(after, damaged) {
				t.Fatal("a refused start changed the file")
			}
			p = n.serve(t, "-wal-recovery=truncate")
			postOne(t, n.listen, "t0", "open", []byte("after the cut"))
			p.stop()
		})
	}
}
