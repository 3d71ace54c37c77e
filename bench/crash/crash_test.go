package crash

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// TestKill9UnderOpenLoad is acceptance point 5 of issue 3: kill -9 the
// appliance under open-loop load, restart it on the same data directory,
// repeat; at the end every hook answered 201 is in the WAL exactly once
// with the body that was sent. lost, mismatched and duplicated must be 0.
func TestKill9UnderOpenLoad(t *testing.T) {
	began := time.Now()
	ankusa, loadgen := buildBinaries(t)
	n := newNode(t, ankusa)
	built := time.Now()

	var acks []acked
	kills, vacuous := 0, 0
	for kills < *flagKills {
		a := killUnderLoad(t, n, loadgen, kills+1, filepath.Join(n.dir, fmt.Sprintf("acked-%03d.txt", kills+vacuous+1)))
		acks = append(acks, a...)
		if len(a) == 0 {
			// A crowded machine can stall the node or loadgen past the kill:
			// that kill proved nothing, so it does not count.
			vacuous++
			if vacuous > *flagKills {
				t.Fatalf("%d kills happened before any hook was acknowledged: the machine is too busy for this test", vacuous)
			}
			continue
		}
		kills++
	}
	// A last boot recovers from the last kill; a clean stop must exit 0.
	n.serve(t).stop()
	loaded := time.Now()

	w, err := readWAL(n.walDir())
	if err != nil {
		t.Fatal(err)
	}
	v := compare(acks, w)
	walFiles, _ := os.ReadDir(n.walDir())
	t.Logf("%d kills under load (%d more before any ack), %d/s open loop, %d connections", kills, vacuous, *flagRate, *flagConns)
	t.Logf("acknowledged %d, lost %d, body mismatches %d, duplicated %d", v.acked, v.lost, v.mismatched, v.duplicated)
	t.Logf("WAL: %d hooks (%d committed without the 201 reaching loadgen), %.1f MiB of bodies, %d files",
		w.hooks, w.hooks-v.acked+v.lost, float64(w.bytes)/(1<<20), len(walFiles))
	t.Logf("run time %s (build %s, kills %s, check %s)", time.Since(began).Round(time.Millisecond),
		built.Sub(began).Round(time.Millisecond), loaded.Sub(built).Round(time.Millisecond), time.Since(loaded).Round(time.Millisecond))
	for _, p := range v.problems {
		t.Error(p)
	}
	if v.lost != 0 || v.mismatched != 0 || v.duplicated != 0 {
		t.Fatalf("lost %d, body mismatches %d, duplicated %d of %d acknowledged hooks: want 0, 0, 0", v.lost, v.mismatched, v.duplicated, v.acked)
	}
	if v.acked < *flagMinAcked {
		t.Fatalf("only %d hooks were acknowledged over %d kills, want at least %d: the run proves too little", v.acked, kills, *flagMinAcked)
	}
}

// killUnderLoad is one boot: start the node, start loadgen in open loop,
// SIGKILL the node after a random delay, let loadgen run on against the
// dead port until its -d ends, and return what it wrote to ackedFile.
func killUnderLoad(t *testing.T, n *node, loadgen string, kill int, ackedFile string) []acked {
	t.Helper()
	p := n.serve(t)
	delay := *flagMinDelay + rand.N(*flagMaxDelay-*flagMinDelay+1)
	lg := startProc(t, n.dir, loadgen, loadgenArgs(n, delay+afterKill, ackedFile)...)
	// loadgen creates the -acked file right before its schedule starts
	// (after it has generated its bodies): the delay counts from there.
	lg.waitFile(ackedFile)
	time.Sleep(delay)
	p.kill9()
	killed := time.Now()
	if code := lg.wait(30 * time.Second); code != 0 {
		t.Fatalf("loadgen exited with %d, want 0:\n%s", code, lg.stderr)
	}
	exited := time.Since(killed)
	acks, err := readAcked(ackedFile)
	if err != nil {
		t.Fatal(err)
	}
	s := parseSummary(t, lg.stdout.String())
	t.Logf("kill %2d after %3dms: %5d acknowledged; loadgen %s; exited %dms after the kill",
		kill, delay.Milliseconds(), len(acks), s, exited.Milliseconds())
	if got := s.Status["201"]; got != int64(len(acks)) {
		t.Fatalf("loadgen counted %d 201 answers and wrote %d to -acked: a 201 without a usable id?\n%s", got, len(acks), lg.stderr)
	}
	for code, count := range s.Status {
		if code != "201" && code != "429" && code != "503" {
			t.Errorf("kill %d: %d answers %s: under load the appliance answers 201, or 429/503 when it sheds", kill, count, code)
		}
	}
	return acks
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
