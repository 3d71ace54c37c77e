package main

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

// crashRun is what one harness run did and found.
type crashRun struct {
	began, built, loaded, fetched time.Time

	acks            []acked
	kills, vacuous  int
	seal            sealingTally
	prevPartials    int // partial segments the last SIGKILL left
	fetch           fetchVerdict
	fetchTime, idle time.Duration
	// pre is the log the last kill left, read before the last boot; log is
	// the log after the clean stop.
	pre, log   *nodeLog
	logVerdict verdict
	carried    int // hooks of pre found unchanged in log
	carriedBad []string
}

// killAll kills the node under load until flagKills kills have each seen
// at least one hook acknowledged.
func (r *crashRun) killAll(t *testing.T, n *crashNode, loadgen string) {
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
func (r *crashRun) lastBoot(t *testing.T, n *crashNode) {
	t.Helper()
	// loadgen's -acked file does not say which tenant a hook was sent to;
	// the log does. Read it (the segments, then the WAL files left) while
	// the node is down, before the last boot cuts a torn tail (a torn tail
	// was never acknowledged: stop there) and deletes WAL files.
	var err error
	r.pre, err = readLog(n.segmentDir(), n.walDir(), false, false)
	if ce, torn := errors.AsType[*wal.CorruptError](err); torn {
		t.Logf("the last kill left a torn WAL tail: %s offset %d (%s)", ce.File, ce.Offset, ce.Reason)
	} else if err != nil {
		t.Fatal(err)
	}
	tenants := make(map[envelope.ID]string, r.pre.hooks())
	for _, h := range r.pre.bySeq {
		tenants[h.id] = h.tenant
	}
	tenantOf := func(id envelope.ID) (string, bool) {
		s, ok := tenants[id]
		return s, ok
	}
	p := n.serve(t)
	r.idle = waitIdleSealed(t, n)
	start := time.Now()
	r.fetch = fetchAcked(n.admin, n.token, r.acks, tenantOf, fetchWorkers)
	r.fetchTime = time.Since(start)
	p.stop()
	r.seal.add(boot{recovered: parseRecovery(p.stderr.String())}, r.prevPartials)
}

// checkFiles reads the stopped node's log back (its segments, verified,
// and its WAL files) and compares it with the acknowledged hooks and with
// the log before the last boot.
func (r *crashRun) checkFiles(t *testing.T, n *crashNode) {
	t.Helper()
	var err error
	if r.log, err = readLog(n.segmentDir(), n.walDir(), true, true); err != nil {
		t.Fatal(err)
	}
	r.logVerdict = compare(r.acks, r.log)
	r.carried, r.carriedBad = carried(r.pre, r.log)
}

func (r *crashRun) report(t *testing.T) {
	v, f, l, sc, seal := &r.logVerdict, &r.fetch, r.log, &r.log.seg, &r.seal
	t.Logf("%d kills under load (%d more before any ack), %d/s open loop, %d connections", r.kills, r.vacuous, *flagRate, *flagConns)
	t.Logf("log proof (sealed segments and WAL files on disk): acknowledged %d, lost %d, body mismatches %d, duplicated %d", v.acked, v.lost, v.mismatched, v.duplicated)
	t.Logf("fetch proof (GET /v1/tenants/{tenant}/hooks/{id}, %d connections): fetched %d (%d base64), lost %d, mismatched %d, errors %d in %s (%.0f/s)",
		fetchWorkers, f.fetched, f.base64, f.lost, f.mismatched, f.errors, r.fetchTime.Round(time.Millisecond), float64(len(r.acks))/r.fetchTime.Seconds())
	kept := "all in it unchanged"
	if len(r.carriedBad) > 0 {
		kept = "NOT all in it unchanged"
	}
	t.Logf("log: %d hooks, seqs 1..%d (%d committed without the 201 reaching loadgen), %.1f MiB of bodies; the %d hooks of the log the last kill left are %s",
		l.hooks(), l.last, l.hooks()-v.acked+v.lost, float64(l.bodyBytes)/(1<<20), r.carried, kept)
	t.Logf("segments: %d files (%d with a dictionary), %d hooks, seqs 1..%d of the log's 1..%d, %.1f MiB on disk; the last boot sealed by age within %s",
		sc.files, sc.dictFiles, sc.records, sc.sealed, l.last, float64(sc.fileBytes)/(1<<20), r.idle.Round(time.Millisecond))
	t.Logf("WAL before the last boot: %s", walLine(r.pre))
	t.Logf("WAL after the clean stop: %s", walLine(l))
	t.Logf("sealing under kills: %d of %d kills came with a .partial segment (open or being sealed); kills left %d partial segments, boots removed %d, adopted %d whole segments the catalogue lacked, set aside %d",
		seal.sealing, r.kills+r.vacuous, seal.partialsLeft, seal.removed, seal.adopted, seal.setAside)
	t.Logf("run time %s (build %s, kills %s, last boot and fetch %s, check %s)", time.Since(r.began).Round(time.Millisecond),
		r.built.Sub(r.began).Round(time.Millisecond), r.loaded.Sub(r.built).Round(time.Millisecond),
		r.fetched.Sub(r.loaded).Round(time.Millisecond), time.Since(r.fetched).Round(time.Millisecond))
}

// walLine says what a log's WAL files hold: "69 files deleted; 2 on
// disk, 000000000070.wal..000000000071.wal, hooks 39576..40449 (874), 804
// of them also sealed (...); the segments end at 40379".
func walLine(l *nodeLog) string {
	s := fmt.Sprintf("%d files deleted; %d on disk", l.walDeleted(), len(l.walFiles))
	switch n := len(l.walFiles); {
	case n == 1:
		s += ", " + wal.FileName(l.walFiles[0])
	case n > 1:
		s += fmt.Sprintf(", %s..%s", wal.FileName(l.walFiles[0]), wal.FileName(l.walFiles[n-1]))
	}
	if l.walHooks == 0 {
		return s + ", no hook"
	}
	return s + fmt.Sprintf(", hooks %d..%d (%d), %d of them also sealed (identical copies); the segments end at %d",
		l.walFirst, l.walLast, l.walHooks, l.overlap, l.seg.sealed)
}

func (r *crashRun) verdict(t *testing.T) {
	t.Helper()
	v, f, l := &r.logVerdict, &r.fetch, r.log
	for _, ps := range [][]string{v.problems, f.problems, l.seg.problems, l.problems, r.carriedBad, r.seal.problems} {
		for _, p := range ps {
			t.Error(p)
		}
	}
	for _, ps := range [][]string{r.pre.seg.problems, r.pre.problems} {
		for _, p := range ps {
			t.Error("before the last boot: " + p)
		}
	}
	if sc := &l.seg; sc.files >= 20 && sc.dictFiles == 0 {
		// Segments of 256 KiB sealed back to back under load each carry
		// the one before's last records: the proof above must have read
		// version 2 segments, or it proved nothing about them.
		t.Errorf("none of %d segments has a dictionary: the run read no version 2 segment", sc.files)
	}
	if v.lost != 0 || v.mismatched != 0 || v.duplicated != 0 {
		t.Fatalf("log: lost %d, body mismatches %d, duplicated %d of %d acknowledged hooks: want 0, 0, 0", v.lost, v.mismatched, v.duplicated, v.acked)
	}
	if f.fetched != len(r.acks) {
		t.Fatalf("fetched %d of %d acknowledged hooks (lost %d, mismatched %d, errors %d): want all", f.fetched, len(r.acks), f.lost, f.mismatched, f.errors)
	}
	if l.seg.sealed != l.last {
		t.Fatalf("the segments hold seqs up to %d, the log %d: once idle, the last boot seals everything by segment.max_age", l.seg.sealed, l.last)
	}
	if v.acked < *flagMinAcked {
		t.Fatalf("only %d hooks were acknowledged over %d kills, want at least %d: the run proves too little", v.acked, r.kills, *flagMinAcked)
	}
	if l.walDeleted() == 0 {
		t.Fatalf("no WAL file was deleted over the run: the checks of WAL deletion (DESIGN.md §6 item 3) proved nothing")
	}
}
