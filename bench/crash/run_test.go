package crash

// One run of the harness: the kill loop, the last boot with the fetches,
// the file checks, the report and the verdict.

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/wal"
)

// run is what one harness run did and found.
type run struct {
	began, built, loaded, fetched time.Time

	acks            []acked
	kills, vacuous  int
	seal            sealingTally
	prevPartials    int // partial segments the last SIGKILL left
	fetch           fetchVerdict
	fetchTime, idle time.Duration
	wal             walHooks
	walVerdict      verdict
	walFiles        int
	walGaps         []string
	segs            segCheck
}

// killAll kills the node under load until flagKills kills have each seen
// at least one hook acknowledged.
func (r *run) killAll(t *testing.T, n *node, loadgen string) {
	for r.kills < *flagKills {
		b := killUnderLoad(t, n, loadgen, r.kills+1, filepath.Join(n.dir, fmt.Sprintf("acked-%03d.txt", r.kills+r.vacuous+1)))
		r.seal.add(b, r.prevPartials)
		r.prevPartials = b.partialsLeft
		r.acks = append(r.acks, b.acks...)
		if len(b.acks) == 0 {
			// A crowded machine can stall the node or loadgen past the kill:
			// that kill proved nothing, so it does not count.
			r.vacuous++
			if r.vacuous > *flagKills {
				t.Fatalf("%d kills happened before any hook was acknowledged: the machine is too busy for this test", r.vacuous)
			}
			continue
		}
		r.kills++
	}
}

// lastBoot recovers from the last kill, waits until the idle sealer has
// sealed the open segment by age (no partial segment left), fetches every
// acknowledged hook back through the admin API and stops the node cleanly.
func (r *run) lastBoot(t *testing.T, n *node) {
	t.Helper()
	// loadgen's -acked file does not say which tenant a hook was sent to;
	// the WAL does. Read it while the node is down, before the last boot
	// cuts a torn tail (a torn tail was never acknowledged: stop there).
	sent, err := readWAL(n.walDir())
	if ce, torn := errors.AsType[*wal.CorruptError](err); torn {
		t.Logf("the last kill left a torn WAL tail: %s offset %d (%s)", ce.File, ce.Offset, ce.Reason)
	} else if err != nil {
		t.Fatal(err)
	}
	tenantOf := func(id envelope.ID) (string, bool) {
		if s := sent.byID[id]; s != nil {
			return s.tenant, true
		}
		return "", false
	}
	p := n.serve(t)
	r.idle = waitSealed(t, n)
	start := time.Now()
	r.fetch = fetchAll(n.admin, n.token, r.acks, tenantOf, fetchWorkers)
	r.fetchTime = time.Since(start)
	p.stop()
	r.seal.add(boot{recovered: parseRecovery(p.stderr.String())}, r.prevPartials)
}

// checkFiles reads the stopped node's WAL and segments back.
func (r *run) checkFiles(t *testing.T, n *node) {
	t.Helper()
	var err error
	if r.wal, err = readWAL(n.walDir()); err != nil {
		t.Fatal(err)
	}
	r.walVerdict = compare(r.acks, r.wal)
	if r.segs, err = checkSegments(n.segmentDir(), r.wal); err != nil {
		t.Fatal(err)
	}
	if r.walFiles, r.walGaps, err = walFileGaps(n.walDir()); err != nil {
		t.Fatal(err)
	}
}

func (r *run) report(t *testing.T) {
	v, f, w, sc, seal := &r.walVerdict, &r.fetch, &r.wal, &r.segs, &r.seal
	t.Logf("%d kills under load (%d more before any ack), %d/s open loop, %d connections", r.kills, r.vacuous, *flagRate, *flagConns)
	t.Logf("WAL proof: acknowledged %d, lost %d, body mismatches %d, duplicated %d", v.acked, v.lost, v.mismatched, v.duplicated)
	t.Logf("fetch proof (GET /v1/tenants/{tenant}/hooks/{id}, %d connections): fetched %d (%d base64), lost %d, mismatched %d, errors %d in %s (%.0f/s)",
		fetchWorkers, f.fetched, f.base64, f.lost, f.mismatched, f.errors, r.fetchTime.Round(time.Millisecond), float64(len(r.acks))/r.fetchTime.Seconds())
	t.Logf("WAL: %d hooks (%d committed without the 201 reaching loadgen), %.1f MiB of bodies, %d files numbered 1..%d",
		w.hooks, w.hooks-v.acked+v.lost, float64(w.bytes)/(1<<20), r.walFiles, r.walFiles)
	t.Logf("segments: %d files, %d hooks, seqs 1..%d of the WAL's 1..%d, %.1f MiB on disk; the last boot sealed by age within %s",
		sc.files, sc.records, sc.sealed, w.hooks, float64(sc.fileBytes)/(1<<20), r.idle.Round(time.Millisecond))
	t.Logf("sealing under kills: %d of %d kills came with a .partial segment (open or being sealed); kills left %d partial segments, boots removed %d, adopted %d whole segments the catalogue lacked, set aside %d",
		seal.sealing, r.kills+r.vacuous, seal.partialsLeft, seal.removed, seal.adopted, seal.setAside)
	t.Logf("run time %s (build %s, kills %s, last boot and fetch %s, check %s)", time.Since(r.began).Round(time.Millisecond),
		r.built.Sub(r.began).Round(time.Millisecond), r.loaded.Sub(r.built).Round(time.Millisecond),
		r.fetched.Sub(r.loaded).Round(time.Millisecond), time.Since(r.fetched).Round(time.Millisecond))
}

func (r *run) verdict(t *testing.T) {
	t.Helper()
	v, f := &r.walVerdict, &r.fetch
	for _, ps := range [][]string{v.problems, f.problems, r.segs.problems, r.walGaps, r.seal.problems} {
		for _, p := range ps {
			t.Error(p)
		}
	}
	if v.lost != 0 || v.mismatched != 0 || v.duplicated != 0 {
		t.Fatalf("WAL: lost %d, body mismatches %d, duplicated %d of %d acknowledged hooks: want 0, 0, 0", v.lost, v.mismatched, v.duplicated, v.acked)
	}
	if f.fetched != len(r.acks) {
		t.Fatalf("fetched %d of %d acknowledged hooks (lost %d, mismatched %d, errors %d): want all", f.fetched, len(r.acks), f.lost, f.mismatched, f.errors)
	}
	if r.segs.sealed != uint64(r.wal.hooks) {
		t.Fatalf("the segments hold seqs up to %d, the WAL %d: once idle, the last boot seals everything by segment.max_age", r.segs.sealed, r.wal.hooks)
	}
	if v.acked < *flagMinAcked {
		t.Fatalf("only %d hooks were acknowledged over %d kills, want at least %d: the run proves too little", v.acked, r.kills, *flagMinAcked)
	}
}
