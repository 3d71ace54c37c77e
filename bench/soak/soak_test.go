package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

// TestSoak is the 2-minute chaos soak on the built binary (make build):
// every fault kind once, then the check. It loads both cores for minutes
// and kills and stops servers (its own), so make test runs it alone,
// after the other packages' tests, and leaves it out of its go test ./...
// with -skip. It never skips itself: where it cannot run (no root, no
// tmpfs, no RabbitMQ) it fails. ANKUSA_SOAK_DURATION changes its length,
// ANKUSA_SOAK_FLAGS adds the program's flags (-disk-fault=false, -faults,
// -seed), ANKUSA_SOAK_OUT writes the report there too.
func TestSoak(t *testing.T) {
	args := []string{"-bin", repoBin(t), "-d", "2m", "-drain", "90s", "-pause", "3s", "-tmp", t.TempDir()}
	if d := os.Getenv("ANKUSA_SOAK_DURATION"); d != "" {
		args = append(args, "-d", d)
	}
	args = append(args, strings.Fields(os.Getenv("ANKUSA_SOAK_FLAGS"))...)
	o, err := parseOptions(args)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	r, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Publish(time.Since(began))
	t.Log("\n" + p.Markdown)
	if out := os.Getenv("ANKUSA_SOAK_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(p.Markdown), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, f := range p.Failures {
		t.Error(f)
	}
	for _, k := range o.Faults {
		if r.Figures.FaultsByKind[k] == 0 {
			t.Errorf("no %s fault was injected (%v)", k, r.Figures.FaultsByKind)
		}
	}
}

// repoBin is <repo>/bin, where make build puts ankusa.
func repoBin(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "ankusa")); err != nil {
		t.Fatalf("%v: run make build first", err)
	}
	return bin
}

// TestCompare: the check finds a hook missing from a sink, one whose body
// differs (on its first delivery or a later one), and counts duplicates
// and deliveries nobody acknowledged.
func TestCompare(t *testing.T) {
	at := time.Now()
	acked := map[string]ack{
		"evt_a": {sum: sumOf([]byte("a")), at: at},
		"evt_b": {sum: sumOf([]byte("b")), at: at},
		"evt_c": {sum: sumOf([]byte("c")), at: at},
		"evt_d": {sum: sumOf([]byte("d")), at: at},
	}
	r := newRecord("http")
	r.add("evt_a", []byte("a"), at.Add(time.Second))
	r.add("evt_a", []byte("a"), at.Add(2*time.Second)) // duplicate, same body
	r.add("evt_b", []byte("B"), at.Add(3*time.Second)) // differs
	r.add("evt_c", []byte("c"), at.Add(time.Second))
	r.add("evt_c", []byte("x"), at.Add(time.Second)) // a later delivery differs
	r.add("evt_z", []byte("z"), at)                  // never acknowledged
	r.add("", []byte("?"), at)                       // no id
	c := compare(acked, r, &intervals{start: at, width: 2 * time.Second})
	if c.Missing != 1 || c.Differing != 2 || c.Duplicated != 2 || c.Unacked != 1 || c.NoID != 1 || c.Received != 4 || c.Deliveries != 7 {
		t.Fatalf("compare: %+v", c)
	}
	if c.MaxDelayS != 3 {
		t.Errorf("max delay %vs, want 3s", c.MaxDelayS)
	}
	if len(c.IntervalMaxDelayS) != 1 || c.IntervalMaxDelayS[0] != 3 {
		t.Errorf("max delay per interval %v, want [3]", c.IntervalMaxDelayS)
	}
	want := []string{"differing evt_b", "differing evt_c", "missing evt_d"}
	if strings.Join(c.Examples, ",") != strings.Join(want, ",") {
		t.Errorf("examples %v, want %v", c.Examples, want)
	}
	if f := checkFailures(Check{Sinks: []SinkCheck{c}}); len(f) != 1 || !strings.Contains(f[0], "1 acknowledged hooks missing, 2 differing") {
		t.Errorf("failures %q", f)
	}
	ok := compare(map[string]ack{"evt_a": acked["evt_a"]}, r, nil)
	if ok.Missing != 0 || ok.Differing != 0 || ok.MaxDelayS != 0 || len(checkFailures(Check{Sinks: []SinkCheck{ok}})) != 0 {
		t.Errorf("a hook delivered intact: %+v", ok)
	}
	if got := missingAny(acked, r, newRecord("empty")); got != 4 {
		t.Errorf("missingAny with an empty sink: %d, want 4", got)
	}
	if got := missingAny(acked, r); got != 1 {
		t.Errorf("missingAny: %d, want 1", got)
	}
}

// TestParseKinds: all, none, a list, an unknown kind, and -disk-fault
// false dropping disk-full.
func TestParseKinds(t *testing.T) {
	cases := []struct {
		list string
		disk bool
		want string
		err  bool
	}{
		{"all", true, allKindsList(), false},
		{"all", false, strings.TrimSuffix(allKindsList(), ","+kindDiskFull), false},
		{"none", true, "", false},
		{"redis-kill, node-kill9,redis-kill", true, "redis-kill,node-kill9", false},
		{"disk-full", false, "", false},
		{"node-kil9", true, "", true},
	}
	for _, c := range cases {
		got, err := parseKinds(c.list, c.disk)
		if (err != nil) != c.err || strings.Join(got, ",") != c.want {
			t.Errorf("parseKinds(%q, %v) = %v, %v; want %q (error %v)", c.list, c.disk, got, err, c.want, c.err)
		}
	}
}

// TestOptions: the flags' checks.
func TestOptions(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ankusa"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"-d", "5s"}, {"-rate", "0"}, {"-inflight", "0"}, {"-tenants", "0"}, {"-interval", "10ms"},
		{"-drain", "0s"}, {"-faults", "bogus"}, {"extra"}, {"-bin", t.TempDir()},
	} {
		if _, err := parseOptions(append([]string{"-bin", bin}, bad...)); err == nil {
			t.Errorf("parseOptions(%q) accepted", bad)
		}
	}
	o, err := parseOptions([]string{"-bin", bin, "-d", "2m", "-disk-fault=false"})
	if os.Geteuid() != 0 {
		if err == nil {
			t.Fatal("parseOptions accepted a soak without root")
		}
		return
	}
	if err != nil || o.Duration != 2*time.Minute || strings.Contains(strings.Join(o.Faults, ","), kindDiskFull) {
		t.Fatalf("parseOptions: %+v, %v", o, err)
	}
}

// TestTimelineAnswers: answers land in the interval of their due time.
func TestTimelineAnswers(t *testing.T) {
	start := time.Now()
	tl := newTimeline(start, 5*time.Second)
	tl.answer(start, 201)
	tl.answer(start.Add(4*time.Second), 429)
	tl.answer(start.Add(6*time.Second), 503)
	tl.answer(start.Add(7*time.Second), 0)
	tl.answer(start.Add(7*time.Second), -1)
	tl.answer(start.Add(11*time.Second), 500)
	_, _, _, b := tl.snapshot()
	want := []Answers{{Sent: 2, Created: 1, Limited: 1}, {Sent: 2, Overload: 1, Transport: 1, Unsent: 1}, {Sent: 1, Other: 1}}
	if len(b) != len(want) {
		t.Fatalf("buckets %+v", b)
	}
	for i := range want {
		if b[i] != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, b[i], want[i])
		}
	}
}

// TestFill: fill takes every byte of a small tmpfs, so that a write
// there fails with ENOSPC, and removing its file frees them.
func TestFill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting a tmpfs needs root (the soak does too)")
	}
	dir := t.TempDir()
	if err := mountTmpfs(dir, 8<<20); err != nil {
		t.Fatal(err)
	}
	defer unmount(dir)
	path := filepath.Join(dir, "fill")
	n, err := fill(path)
	if err != nil || n < 7<<20 {
		t.Fatalf("fill: %d bytes, %v", n, err)
	}
	err = os.WriteFile(filepath.Join(dir, "x"), make([]byte, 4096), 0o600)
	if err == nil || !strings.Contains(err.Error(), unix.ENOSPC.Error()) {
		t.Fatalf("a write on the filled tmpfs: %v, want ENOSPC", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 4096), 0o600); err != nil {
		t.Fatalf("a write after freeing: %v", err)
	}
}

// TestExitReason: a panic's line, else the last error-level log line's
// message and error, else the last lines.
func TestExitReason(t *testing.T) {
	cases := []struct{ out, want string }{
		{`{"level":"warn","msg":"redis down","error":"refused"}
{"level":"error","msg":"storage failure: stopping the node","error":"no space left on device","stacktrace":"x"}
{"level":"info","msg":"bye"}`, "storage failure: stopping the node: no space left on device"},
		{"{\"level\":\"error\",\"msg\":\"a\"}\npanic: boom\n\ngoroutine 1 [running]:\nmain.main()", "panic: boom"},
		{"one\ntwo\nthree\n", "two | three"},
		{"", ""},
	}
	for _, c := range cases {
		if got := exitReason(c.out); got != c.want {
			t.Errorf("exitReason(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

// TestReadSegment: the archive reader finds every hook of a segment with
// its body, and refuses a damaged object rather than reading fewer.
func TestReadSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1-3.seg")
	w, err := segment.Create(vfs.Default, path, segment.NewEncoder(), 0)
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{`{"id":"a"}`, `{"id":"b"}`, "\x00binary"}
	for i, b := range bodies {
		seq := uint64(i + 1)
		e := envelope.Envelope{Seq: seq, ID: envelope.MakeID(1_700_000_000_000, 1, seq), TenantID: "t0", SourceID: "s0", Body: []byte(b)}
		if err := w.Append(e.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord("archive")
	if err := readSegment("1-3.seg", data, segment.NewDecoder(), rec); err != nil {
		t.Fatal(err)
	}
	for i, b := range bodies {
		id := envelope.MakeID(1_700_000_000_000, 1, uint64(i+1)).String()
		d, ok := rec.get(id)
		if !ok || d.sum != sumOf([]byte(b)) || d.n != 1 {
			t.Errorf("hook %s: %+v, found %v", id, d, ok)
		}
	}
	data[len(data)/2] ^= 0xff
	if err := readSegment("1-3.seg", data, segment.NewDecoder(), newRecord("archive")); err == nil {
		t.Error("a damaged segment was read without an error")
	}
}
