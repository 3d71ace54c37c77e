package main

// The appliance's crash harness under open-loop load (issue 3, acceptance
// point 5, and the segment stage's crash acceptance): it kills `ankusa
// serve` with SIGKILL repeatedly while tools/loadgen sends hooks on a
// fixed schedule and the node seals small segments all the time,
// restarts it on the same data directory each time, and at the end proves
// that every hook answered 201 is stored exactly once with the exact body
// that was sent, and can be fetched back.
//
// The proof rests on loadgen's -acked file: loadgen appends
//
//	<event id> <sha256 hex of the exact body sent>\n
//
// for every 201. The node's log is its sealed segments ("*.seg" in the
// segment directory) and the WAL files still on disk: a WAL file is deleted
// once every hook in it is sealed into a catalogued segment and at or below
// the dispatch checkpoint (DESIGN.md §6 item 3), so a hook is in a segment,
// in a WAL file, or in both while its WAL file is not deleted yet. After
// the last kill the harness proves it three ways:
//
//   - Through the running binary, as an operator would: the last boot
//     recovers from the last kill, seals what it holds by segment.max_age
//     once idle, and answers GET /v1/tenants/{tenant}/hooks/{id} on the
//     admin listener (a bearer token with scope tenant:*) for every
//     acknowledged id; the body, decoded per body_encoding, must hash to
//     what loadgen recorded. fetched must equal acknowledged; lost (404),
//     mismatched and errors must be zero. The -acked file does not name the
//     tenant a hook was sent to (loadgen draws it per request); the harness
//     takes it from the log, read while the node is down.
//   - From the log after a clean stop: every hook of every segment
//     (segment.OpenFile, ReadBlock, segment.Records, envelope.Decode) and
//     every WAL record (wal.ReadDir). Lost (acknowledged, in no segment and
//     no WAL file), mismatched (another body) and duplicated (one id at two
//     seqs, one seq twice in the segments or twice in the WAL, a seq whose
//     segment and WAL copies are not byte-identical, or one id acknowledged
//     twice) must be zero. Seqs are dense from 1 across segments and WAL
//     together, ids strictly increasing with seq; the WAL's hooks run
//     without a gap.
//   - From the segment and WAL directories after the clean stop: no
//     partial segment and nothing set aside; every segment opens, matches
//     its name, passes Verify and holds exactly the seqs it names; the
//     segments tile seqs 1..n with no gap or overlap, n being the log's
//     last seq (the idle last boot sealed everything). The WAL files on
//     disk are numbered consecutively (only a prefix may be gone), at
//     least one is left (the active file), and the first hook in them is
//     at most one past the last sealed seq: every hook of a deleted WAL
//     file is sealed. At least one WAL file must have been deleted over
//     the run, or these checks proved nothing; the report says how many.
//
// After the clean stop the idle last boot has sealed everything and its
// WAL holds no hook, so every log check above also runs on the log the
// last kill left, read before the last boot (the open segment aside, the
// WAL up to a torn tail): there the WAL files left still hold hooks, most
// of them sealed too. And the log after the clean stop must hold each hook
// of that one unchanged: the last boot's recovery, sealing and deletions
// lost nothing.
//
// Around each kill the harness samples the segment directory: whether a
// partial segment (the open one, being filled or being sealed) existed
// right before the SIGKILL, and how many partial segments the dead node
// left. The next boot must log the removal of exactly those ("removed a
// partial segment"); a kill between a segment's rename and its catalogue
// entry shows as "adopted a whole segment" at the next boot.
//
// `go test ./cmd/ankusa` (make test) runs 20 kills in under a minute. Run
// it longer by hand with its flags:
//
//	go test ./cmd/ankusa -run TestKill9UnderOpenLoad -v -timeout 1h \
//	    -args -kills 500 -rate 6000 -conns 256
//
// The harness's files are kill9_*_test.go; it shares the process helpers
// of main_test.go (proc, startCmd, freeAddr, runBin) and the hook's JSON
// form of admin_hooks_test.go (hookJSON).

import (
	"flag"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// Flags for running the harness longer by hand (see above).
var (
	flagKills    = flag.Int("kills", 20, "SIGKILLs under load, each followed by a restart on the same data directory")
	flagRate     = flag.Int("rate", 4000, "loadgen -rate: open-loop requests per second")
	flagConns    = flag.Int("conns", 64, "loadgen -c: connections")
	flagTenants  = flag.Int("tenants", 500, "loadgen -tenants, zipf-distributed")
	flagMinDelay = flag.Duration("min-delay", 200*time.Millisecond, "shortest time from starting loadgen to the SIGKILL")
	flagMaxDelay = flag.Duration("max-delay", 800*time.Millisecond, "longest time from starting loadgen to the SIGKILL")
	flagMinAcked = flag.Int("min-acked", 5000, "fewest acknowledged hooks over the run for it to prove anything")
)

// afterKill is how long loadgen keeps sending at the dead port after the
// SIGKILL before its -d ends and it exits by itself, flushing -acked.
const afterKill = 300 * time.Millisecond

// fetchWorkers is how many keep-alive connections fetch the hooks back.
const fetchWorkers = 8

// TestKill9UnderOpenLoad is acceptance point 5 of issue 3 and the crash
// acceptance of the segment stage: kill -9 the appliance under open-loop
// load, while it seals segments all the time, restart it on the same data
// directory, repeat. At the end every hook answered 201 is fetchable
// through the admin API with the body that was sent, and is in the node's
// log (its sealed segments and the WAL files left) exactly once with that
// body; the segments on disk are whole, verified and tile the seqs, the
// WAL files continue them, and only a prefix of WAL files, all of it
// sealed, was deleted.
func TestKill9UnderOpenLoad(t *testing.T) {
	r := crashRun{began: time.Now()}
	loadgen := buildLoadgen(t)
	n := newCrashNode(t)
	r.built = time.Now()
	r.killAll(t, n, loadgen)
	r.loaded = time.Now()
	r.lastBoot(t, n)
	r.fetched = time.Now()
	r.checkFiles(t, n)
	r.report(t)
	r.verdict(t)
}

// killUnderLoad is one boot: start the node, start loadgen in open loop,
// SIGKILL the node after a random delay, let loadgen run on against the
// dead port until its -d ends, and return what it wrote to ackedFile and
// what the boot and the kill did to the segment directory.
func killUnderLoad(t *testing.T, n *crashNode, loadgen string, kill int, ackedFile string) boot {
	t.Helper()
	p := n.serve(t)
	delay := *flagMinDelay + rand.N(*flagMaxDelay-*flagMinDelay+1)
	lg := startLoadgen(t, n.dir, loadgen, loadgenArgs(n, delay+afterKill, ackedFile)...)
	// loadgen creates the -acked file right before its schedule starts
	// (after it has generated its bodies): the delay counts from there.
	lg.waitFile(ackedFile)
	time.Sleep(delay)
	// Was a segment open or being sealed when the SIGKILL came? Sampled
	// right before it: the directory may move on in the microseconds
	// between.
	before, err := listSegments(n.segmentDir())
	if err != nil {
		t.Fatal(err)
	}
	p.kill9()
	killed := time.Now()
	after, err := listSegments(n.segmentDir())
	if err != nil {
		t.Fatal(err)
	}
	b := boot{
		recovered:    parseRecovery(p.stderr.String()),
		sealing:      len(before.partials) > 0,
		partialsLeft: len(after.partials),
		segsLeft:     len(after.segs),
	}
	if code := lg.wait(30 * time.Second); code != 0 {
		t.Fatalf("loadgen exited with %d, want 0:\n%s", code, lg.stderr)
	}
	exited := time.Since(killed)
	if b.acks, err = readAcked(ackedFile); err != nil {
		t.Fatal(err)
	}
	s := parseSummary(t, lg.stdout.String())
	t.Logf("kill %2d after %3dms: %5d acknowledged; loadgen %s; exited %dms after the kill; %s",
		kill, delay.Milliseconds(), len(b.acks), summaryLine(s), exited.Milliseconds(), b)
	if got := s.Status["201"]; got != int64(len(b.acks)) {
		t.Fatalf("loadgen counted %d 201 answers and wrote %d to -acked: a 201 without a usable id?\n%s", got, len(b.acks), lg.stderr)
	}
	for code, count := range s.Status {
		if code != "201" && code != "429" && code != "503" {
			t.Errorf("kill %d: %d answers %s: under load the appliance answers 201, or 429/503 when it sheds", kill, count, code)
		}
	}
	return b
}

// waitIdleSealed waits until the idle node has sealed its open segment by age
// (no .partial file) and returns how long that took from now.
func waitIdleSealed(t *testing.T, n *crashNode) time.Duration {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		d, err := listSegments(n.segmentDir())
		if err != nil {
			t.Fatal(err)
		}
		if len(d.partials) == 0 {
			return time.Since(start)
		}
	}
	t.Fatalf("a partial segment is still there 10s after the last boot: the idle sealer seals by segment.max_age (see crashYAML)")
	return 0
}

// loadgenArgs is the open-loop load of one boot: mixed provider-like
// bodies of mixed sizes over many zipf-distributed tenants of the shared
// source, for d in all (no warm-up: every 201 counts).
func loadgenArgs(n *crashNode, d time.Duration, ackedFile string) []string {
	return []string{
		"-url", "http://" + n.listen + "/webhooks/{tenant}/{source}",
		"-c", strconv.Itoa(*flagConns),
		"-rate", strconv.Itoa(*flagRate),
		"-d", d.String(),
		"-warmup", "0s",
		"-size", "70%1KiB,25%8KiB,5%64KiB",
		"-kind", "mixed",
		"-sign", "none",
		"-tenants", strconv.Itoa(*flagTenants),
		"-tenant-dist", "zipf",
		"-sources", "open",
		"-timeout", "5s",
		"-json",
		"-acked", ackedFile,
	}
}
