package crash

import (
	"flag"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// Flags for running the harness longer by hand (see the package doc).
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
	r := run{began: time.Now()}
	ankusa, loadgen := buildBinaries(t)
	n := newNode(t, ankusa)
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
func killUnderLoad(t *testing.T, n *node, loadgen string, kill int, ackedFile string) boot {
	t.Helper()
	p := n.serve(t)
	delay := *flagMinDelay + rand.N(*flagMaxDelay-*flagMinDelay+1)
	lg := startProc(t, n.dir, loadgen, loadgenArgs(n, delay+afterKill, ackedFile)...)
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
		kill, delay.Milliseconds(), len(b.acks), s, exited.Milliseconds(), b)
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

// waitSealed waits until the idle node has sealed its open segment by age
// (no .partial file) and returns how long that took from now.
func waitSealed(t *testing.T, n *node) time.Duration {
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
	t.Fatalf("a partial segment is still there 10s after the last boot: the idle sealer seals by segment.max_age (see nodeYAML)")
	return 0
}

// loadgenArgs is the open-loop load of one boot: mixed provider-like
// bodies of mixed sizes over many zipf-distributed tenants of the shared
// source, for d in all (no warm-up: every 201 counts).
func loadgenArgs(n *node, d time.Duration, ackedFile string) []string {
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
