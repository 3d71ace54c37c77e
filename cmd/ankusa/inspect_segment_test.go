package main

// `ankusa inspect segment` on a segment a node really sealed, and on
// damaged copies of it, as an operator runs it after an alert.

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// sealedFixture is one segment sealed by a real node and the hooks in it.
type sealedFixture struct {
	path   string
	hooks  []*sent
	listen string
}

// sealOneSegment posts hooks to a node that does not seal (max_age 1h),
// stops it, and starts it again with a short max_age, so that all of them
// are sealed into one segment at boot. Three 90 KiB random bodies fill more
// than one 256 KiB block.
func sealOneSegment(t *testing.T) sealedFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	n := newAdminNode(t, "1h")
	c := newAdminClient(t, n.admin)
	hooks := providerHooks(rng)
	for range 3 {
		b := make([]byte, 90<<10)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		hooks = append(hooks, &sent{tenant: "globex", source: "open", body: b,
			headers: [][2]string{{"Content-Type", "application/octet-stream"}}})
	}
	hooks = append(hooks, &sent{tenant: "acme", source: "open", body: []byte(`{"last":true}`),
		headers: [][2]string{{"Content-Type", "application/json"}}})
	p := n.serve(t)
	sendAll(t, n, c, "before sealing", 1, hooks)
	p.stop()
	setMaxAge(t, n, "50ms")
	p = n.serve(t)
	segs := waitSealed(t, n, p, uint64(len(hooks)))
	p.stop()
	if len(segs) != 1 || segs[0].first != 1 || segs[0].last != uint64(len(hooks)) {
		t.Fatalf("segments %v, want one holding seqs 1..%d (sealed at boot)", segs, len(hooks))
	}
	return sealedFixture{path: segs[0].path, hooks: hooks, listen: n.listen}
}

// blockLine is one "block i" line of the inspect output.
type blockLine struct{ offset, compressed int64 }

var (
	blockLineRE  = regexp.MustCompile(`^block (\d+)\toffset=(\d+)\tcompressed=(\d+)\traw=(\d+)\tcrc32c=[0-9a-f]{8}\thooks=(\d+)\tfirst_seq=(\d+)\tfirst_id=(evt_\w{26})$`)
	blocksLineRE = regexp.MustCompile(`^blocks\t(\d+) \(index at offset (\d+)\)$`)
)

// checkFooterLines checks the footer and index lines of inspect's stdout
// against the fixture and returns the blocks.
func checkFooterLines(t *testing.T, fx sealedFixture, stdout string) []blockLine {
	t.Helper()
	st, err := os.Stat(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	first, last := fx.hooks[0], fx.hooks[len(fx.hooks)-1]
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	want := []string{
		"segment\t" + fx.path,
		fmt.Sprintf("size\t%d bytes", st.Size()),
		fmt.Sprintf("hooks\t%d", len(fx.hooks)),
		fmt.Sprintf("seqs\t1..%d", len(fx.hooks)),
		fmt.Sprintf("ids\t%s..%s", first.id, last.id),
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Fatalf("inspect segment: line %d is %q, want %q\n%s", i+1, lineAt(lines, i), w, stdout)
		}
	}
	for i, prefix := range []string{"received_at\t", "raw\t", "blocks\t"} {
		if l := lineAt(lines, len(want)+i); !strings.HasPrefix(l, prefix) {
			t.Fatalf("inspect segment: line %d is %q, want it to start %q\n%s", len(want)+i+1, l, prefix, stdout)
		}
	}
	m := blocksLineRE.FindStringSubmatch(lines[len(want)+2])
	if m == nil {
		t.Fatalf("inspect segment: %q is not \"blocks\\tN (index at offset X)\"", lines[len(want)+2])
	}
	nblocks, _ := strconv.Atoi(m[1])
	indexAt, _ := strconv.ParseInt(m[2], 10, 64)
	if nblocks < 2 {
		t.Fatalf("inspect segment: %d blocks; the fixture's %d hooks should fill more than one:\n%s", nblocks, len(fx.hooks), stdout)
	}
	var blocks []blockLine
	var hooks int
	next := int64(16) // the first block follows the 16-byte file header
	for i := range nblocks {
		l := lineAt(lines, len(want)+3+i)
		m := blockLineRE.FindStringSubmatch(l)
		if m == nil || m[1] != strconv.Itoa(i) {
			t.Fatalf("inspect segment: line %q is not block %d's\n%s", l, i, stdout)
		}
		off, _ := strconv.ParseInt(m[2], 10, 64)
		comp, _ := strconv.ParseInt(m[3], 10, 64)
		count, _ := strconv.Atoi(m[5])
		firstSeq, _ := strconv.Atoi(m[6])
		if off != next {
			t.Fatalf("inspect segment: block %d at offset %d, want %d (right after the previous one)", i, off, next)
		}
		if firstSeq != hooks+1 || m[7] != fx.hooks[hooks].id {
			t.Fatalf("inspect segment: block %d starts at seq %s id %s, want %d %s", i, m[6], m[7], hooks+1, fx.hooks[hooks].id)
		}
		next += comp
		hooks += count
		blocks = append(blocks, blockLine{offset: off, compressed: comp})
	}
	if hooks != len(fx.hooks) || next != indexAt {
		t.Fatalf("inspect segment: blocks hold %d hooks and end at %d; want %d hooks and the index at %d", hooks, next, len(fx.hooks), indexAt)
	}
	// The fixture is its node's first segment: nothing before it left a
	// dictionary.
	if l := lineAt(lines, len(want)+3+nblocks) + "\n" + lineAt(lines, len(want)+4+nblocks); l != "format\tversion 1\ndictionary\tnone" {
		t.Fatalf("inspect segment: after the blocks %q, want the format (version 1) and no dictionary\n%s", l, stdout)
	}
	if l := lines[len(lines)-1]; !strings.HasPrefix(l, "verify\tok") {
		t.Fatalf("inspect segment: last line %q, want verify\\tok", l)
	}
	return blocks
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// checkVerboseHooks checks the hook lines of `inspect segment -v`: every
// hook in seq order, its headers as sent and its body.
func checkVerboseHooks(t *testing.T, fx sealedFixture, stdout string) {
	t.Helper()
	var hooks [][]string // each: the seq= line, then its indented lines
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "seq="):
			hooks = append(hooks, []string{l})
		case strings.HasPrefix(l, "\t") && len(hooks) > 0:
			hooks[len(hooks)-1] = append(hooks[len(hooks)-1], l)
		}
	}
	if len(hooks) != len(fx.hooks) {
		t.Fatalf("inspect segment -v prints %d hooks, want %d:\n%s", len(hooks), len(fx.hooks), stdout)
	}
	for i, s := range fx.hooks {
		h := hooks[i]
		want := fmt.Sprintf("seq=%d\tid=%s\ttenant=%s\tsource=%s\tsize=%d\treceived_at=", s.seq, s.id, s.tenant, s.source, len(s.body))
		if !strings.HasPrefix(h[0], want) {
			t.Fatalf("inspect segment -v: hook %d is %q, want it to start %q", i, h[0], want)
		}
		var headers []string
		for _, f := range s.wireHeaders(fx.listen) {
			headers = append(headers, "\theader\t"+f[0]+": "+f[1])
		}
		body := "\tbody(hex)\t" + hex.EncodeToString(s.body)
		if utf8.Valid(s.body) {
			body = "\tbody\t" + strconv.Quote(string(s.body))
		}
		// The sender's address first: the test posts from loopback.
		if len(h) < 2 || !strings.HasPrefix(h[1], "\tremote_addr\t127.0.0.1:") {
			t.Fatalf("inspect segment -v: hook %s prints\n%s\nwant the sender's address first", s.id, strings.Join(h[1:], "\n"))
		}
		got := h[2:]
		if len(got) != len(headers)+1 || got[len(got)-1] != body {
			t.Fatalf("inspect segment -v: hook %s prints\n%s\nwant %d header lines and\n%s", s.id, strings.Join(got, "\n"), len(headers), body)
		}
		// Each name's values in the order sent (the node may list
		// Content-Type and the like before other fields).
		if fmt.Sprint(groupLines(got[:len(got)-1])) != fmt.Sprint(groupLines(headers)) {
			t.Fatalf("inspect segment -v: hook %s headers\n%s\nwant the ones sent\n%s", s.id, strings.Join(got[:len(got)-1], "\n"), strings.Join(headers, "\n"))
		}
	}
}

// groupLines groups "\theader\tName: value" lines by name, keeping order.
func groupLines(lines []string) map[string][]string {
	m := map[string][]string{}
	for _, l := range lines {
		name, value, _ := strings.Cut(strings.TrimPrefix(l, "\theader\t"), ": ")
		m[name] = append(m[name], value)
	}
	return m
}

// damagedCopy writes a copy of the fixture's file changed by mod.
func damagedCopy(t *testing.T, fx sealedFixture, name string, mod func([]byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, mod(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func flipAt(off int64) func([]byte) []byte {
	return func(b []byte) []byte { b[off] ^= 0x5a; return b }
}

func TestInspectSegment(t *testing.T) {
	fx := sealOneSegment(t)
	dir := t.TempDir()

	code, stdout, stderr := runBin(t, dir, "inspect", "segment", fx.path)
	if code != 0 || stderr != "" {
		t.Fatalf("inspect segment %s: exit %d, stderr:\n%s", fx.path, code, stderr)
	}
	blocks := checkFooterLines(t, fx, stdout)
	if strings.Contains(stdout, "\nseq=") {
		t.Fatalf("inspect segment without -v prints hooks:\n%s", stdout)
	}

	code, vout, stderr := runBin(t, dir, "inspect", "segment", "-v", fx.path)
	if code != 0 || stderr != "" {
		t.Fatalf("inspect segment -v %s: exit %d, stderr:\n%s", fx.path, code, stderr)
	}
	checkFooterLines(t, fx, vout)
	checkVerboseHooks(t, fx, vout)

	st, err := os.Stat(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	last := blocks[len(blocks)-1]
	indexAt := last.offset + last.compressed
	damage := []struct {
		name string
		mod  func([]byte) []byte
		want []string // each must be in stderr
	}{
		{"first-block.seg", flipAt(blocks[0].offset + blocks[0].compressed/2),
			[]string{"block checksum mismatch", fmt.Sprintf("offset %d", blocks[0].offset)}},
		{"first-byte-of-first-block.seg", flipAt(16),
			[]string{"block checksum mismatch", "offset 16"}},
		{"last-block.seg", flipAt(last.offset + last.compressed - 1),
			[]string{"block checksum mismatch", fmt.Sprintf("offset %d", last.offset)}},
		{"index.seg", flipAt(indexAt + 5), []string{"index", fmt.Sprintf("offset %d", indexAt)}},
		{"footer.seg", flipAt(size - 112 + 20), []string{"footer"}},
		{"header.seg", flipAt(2), []string{"offset 0"}},
		// A cut file has no footer where the footer belongs.
		{"truncated-by-one.seg", func(b []byte) []byte { return b[:len(b)-1] }, []string{"not a whole segment"}},
		{"truncated-mid-block.seg", func(b []byte) []byte { return b[:blocks[1].offset+10] }, []string{"not a whole segment"}},
		{"truncated-footer.seg", func(b []byte) []byte { return b[:len(b)-112] }, []string{"not a whole segment"}},
		{"header-only.seg", func(b []byte) []byte { return b[:16] }, []string{"too short"}},
		{"empty.seg", func(b []byte) []byte { return b[:0] }, []string{"too short"}},
	}
	for _, d := range damage {
		t.Run(strings.TrimSuffix(d.name, ".seg"), func(t *testing.T) {
			path := damagedCopy(t, fx, d.name, d.mod)
			for _, args := range [][]string{{"inspect", "segment", path}, {"inspect", "segment", "-v", path}} {
				code, _, stderr := runBin(t, dir, args...)
				if code != 1 {
					t.Fatalf("ankusa %s: exit %d, want 1\nstderr:\n%s", strings.Join(args, " "), code, stderr)
				}
				if !strings.HasPrefix(stderr, "ankusa inspect: ") || !strings.Contains(stderr, path) {
					t.Fatalf("ankusa %s: stderr %q does not name the file", strings.Join(args, " "), stderr)
				}
				for _, w := range d.want {
					if !strings.Contains(stderr, w) {
						t.Fatalf("ankusa %s: stderr %q, want it to name %q", strings.Join(args, " "), stderr, w)
					}
				}
				t.Logf("%s", strings.TrimSpace(stderr))
			}
		})
	}
}

// Files that are not segments, and usage errors.
func TestInspectSegmentUsage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.seg")
	notSeg := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notSeg, []byte(strings.Repeat("not a segment\n", 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := func(wantCode int, wantStderr string, args ...string) {
		t.Helper()
		code, stdout, stderr := runBin(t, dir, append([]string{"inspect"}, args...)...)
		if code != wantCode || !strings.Contains(stderr, wantStderr) {
			t.Fatalf("ankusa inspect %s: exit %d, stderr %q; want %d naming %q", strings.Join(args, " "), code, stderr, wantCode, wantStderr)
		}
		if wantCode == 2 && stdout != "" {
			t.Fatalf("ankusa inspect %s: a usage error printed to stdout: %q", strings.Join(args, " "), stdout)
		}
	}
	f(1, "cannot open segment", "segment", missing)
	f(1, "cannot open segment", "segment", "-v", missing)
	f(1, "offset 0", "segment", notSeg)
	f(1, dir, "segment", dir)
	f(2, "usage: ankusa inspect", "segment")
	f(2, "usage: ankusa inspect", "segment", "-v")
	f(2, "usage: ankusa inspect", "segment", notSeg, notSeg)
	f(2, "usage: ankusa inspect", "segment", "-x", notSeg)
	f(1, "not a directory", "segments", notSeg)
	f(1, "no such file", "segments", filepath.Join(dir, "nope"))
	f(2, "usage: ankusa inspect", "segments")
	f(2, "usage: ankusa inspect", "segments", dir, dir)
	f(2, "usage: ankusa inspect", "-v", "segment", notSeg)
	f(2, "usage: ankusa inspect", "")
	f(2, "usage: ankusa inspect")
}

// TestFetchFromDamagedSegment: a hook whose sealed segment is damaged (a
// byte flipped in its block) is answered 500 corrupt, naming the segment
// and the offset, not a bare 500; the other hooks of the segment whose
// blocks are whole are still served. (Issue 16 adds scrubbing and repair
// from the archive; this is what a fetch says meanwhile.)
func TestFetchFromDamagedSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := newAdminNode(t, "1h")
	c := newAdminClient(t, n.admin)
	var hooks []*sent
	for range 3 {
		b := make([]byte, 200<<10)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		hooks = append(hooks, &sent{tenant: "globex", source: "open", body: b,
			headers: [][2]string{{"Content-Type", "application/octet-stream"}}})
	}
	p := n.serve(t)
	sendAll(t, n, c, "before sealing", 1, hooks)
	p.stop()
	setMaxAge(t, n, "50ms")
	p = n.serve(t)
	segs := waitSealed(t, n, p, uint64(len(hooks)))
	p.stop()
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	data, err := os.ReadFile(segs[0].path)
	if err != nil {
		t.Fatal(err)
	}
	data[16+1000] ^= 0x5a // inside the first block: the first hook's
	if err := os.WriteFile(segs[0].path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	p = n.serve(t)
	defer p.stop()
	a := c.get("/v1/tenants/globex/hooks/"+hooks[0].id, opsToken)
	if a.status != 500 || !strings.Contains(string(a.body), `"error":"corrupt"`) || !strings.Contains(string(a.body), filepath.Base(segs[0].path)) || !strings.Contains(string(a.body), "offset") {
		t.Fatalf("the hook of the damaged block: %d %s, want 500 corrupt naming %s and the offset", a.status, a.body, filepath.Base(segs[0].path))
	}
	if last := c.get("/v1/tenants/globex/hooks/"+hooks[2].id, opsToken); last.status != 200 {
		t.Fatalf("a hook of a whole block of the same segment: %d %s, want 200", last.status, last.body)
	}
}
