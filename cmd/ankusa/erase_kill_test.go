package main

// The tenant erase resumes after kill -9 (issue 20, acceptance 2): a node
// that kills itself right after each recorded stage of an erase
// (ANKUSA_TEST_ERASE_CRASH_AFTER, cli/erase.go), and one killed from
// outside at a random moment, finish the erase at the next boot and leave
// what an erase that nobody interrupted leaves, with the other tenant
// untouched.

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/tenant"
)

// ekCrashEnv is the variable that has the node kill itself after a stage
// (cli/erase.go eraseCrashEnv).
const ekCrashEnv = "ANKUSA_TEST_ERASE_CRASH_AFTER"

// ekKillPoints are the stages after which the node can kill itself:
// every stage but started (its record is the 202 itself).
func ekKillPoints() []string { return slices.Clone(tenant.EraseStages[1:]) }

// serveWithEnv starts `ankusa serve` of n with env added to the test's
// environment and waits until it is ready (startCmd, with an
// environment).
func serveWithEnv(t *testing.T, n *testNode, env ...string) *proc {
	t.Helper()
	args := []string{"serve", "-config", n.config}
	p := &proc{t: t, name: "ankusa " + strings.Join(args, " ") + " (" + strings.Join(env, " ") + ")", stderr: &child.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = n.dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	p.waitReady(n.admin)
	return p
}

// ekWaitKilled waits for p to die of SIGKILL.
func ekWaitKilled(t *testing.T, p *proc, within time.Duration) {
	t.Helper()
	p.wait(within)
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s ended with %v, want killed by SIGKILL:\n%s", p.name, p.state, p.stderr)
	}
}

// ekCheckKilledAt requires the killed node n's meta store to hold acme's
// erase as the kill after stage left it: the progress row at that stage
// before the final batch; after it the tombstone, its archive object
// pending until archived.
func ekCheckKilledAt(t *testing.T, n *erNode, stage string) {
	t.Helper()
	ms, err := meta.Open(meta.Options{Dir: filepath.Join(n.dataDir, "meta")})
	if err != nil {
		t.Fatalf("cannot open the killed node's meta store: %v", err)
	}
	defer ms.Close()
	row, running, err := ms.EraseProgress("acme")
	if err != nil {
		t.Fatal(err)
	}
	tomb, erased, err := ms.TombstoneOf("acme")
	if err != nil {
		t.Fatal(err)
	}
	if ekStageIndex(stage) < ekStageIndex(tenant.StageErased) {
		var j tenant.EraseJob
		if !running || erased || json.Unmarshal(row, &j) != nil || j.Stage != stage {
			t.Fatalf("killed after %s: progress row %s (found %v), tombstone %v; want the row at stage %s and no tombstone", stage, row, running, erased, stage)
		}
		return
	}
	if running || !erased || tomb.ArchivePending != (stage == tenant.StageErased) {
		t.Fatalf("killed after %s: progress row %v, tombstone %+v (found %v); want the tombstone alone, its archive object pending only after erased", stage, running, tomb, erased)
	}
}

// ekCopyNode is a fresh erNode (its own ports, lifecycle receiver and
// directories) holding a copy of the stopped node base's data dir, claim
// store and archive: the same state, to erase once more.
func ekCopyNode(t *testing.T, base *erNode) *erNode {
	t.Helper()
	n := newErNode(t)
	for src, dst := range map[string]string{base.dataDir: n.dataDir, base.claimDir: n.claimDir, base.archive: n.archive} {
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
		}
	}
	return n
}

// ekBase is the populated, stopped node every run copies, and what an
// erase of acme that nobody interrupts leaves.
type ekBase struct {
	node   *erNode
	acme   erPopulated
	globex erTraceReport // before any erase
	ref    erTraceReport // acme, erased without a kill
	took   time.Duration // how long that erase ran
}

// newEKBase populates acme and globex on a node, stops it, then erases
// acme on a copy for the reference trace.
func newEKBase(t *testing.T) *ekBase {
	t.Helper()
	b := &ekBase{node: newErNode(t)}
	p := b.node.serve(t)
	b.acme = erPopulate(t, b.node, "acme")
	erPopulate(t, b.node, "globex")
	p.stop()
	b.globex = b.node.trace(t, "globex")
	if b.globex.KeyCount() == 0 || len(b.globex.Events) == 0 {
		t.Fatalf("the populated globex has no keys or events: %+v", b.globex)
	}

	n := ekCopyNode(t, b.node)
	p = n.serve(t)
	start := time.Now()
	erErase(t, n, "acme")
	b.took = time.Since(start)
	ekFinishArchive(t, n, "acme")
	p.stop()
	b.ref = n.trace(t, "acme")
	erCheckErased(t, "acme erased without a kill", b.ref)
	if b.ref.Tombstone == nil || len(b.ref.Tombstone.Ordinals) != 1 {
		t.Fatalf("acme erased without a kill: tombstone %+v, want one ordinal", b.ref.Tombstone)
	}
	b.checkGlobex(t, "after an erase of acme without a kill", n)
	return b
}

// ekFinishArchive waits until the erase of tenant on n has written its
// archive tombstone (GET erase: stage archived).
func ekFinishArchive(t *testing.T, n *erNode, tenantName string) {
	t.Helper()
	var st erStatus
	if !waitFor(30*time.Second, func() bool { st = erGetStatus(t, n, tenantName); return st.Stage == tenant.StageArchived }) {
		t.Fatalf("the erase of %s did not write its archive tombstone in 30s: %+v", tenantName, st)
	}
}

// checkAcme requires the trace of acme on the stopped node n to be the
// reference's: nothing in its ranges, claim stores or progress row, one
// event, the tombstone of the same ordinals, seq at close, counters and
// removed counts (deliveries aside: the attempt log of a row retried in
// the meantime grows), and as many audit rows. With atBoundary false (a
// kill inside a stage) the removed counts are not compared: the stage
// runs again at the boot and counts what was left.
func (b *ekBase) checkAcme(t *testing.T, what string, n *erNode, atBoundary bool) {
	t.Helper()
	got := n.trace(t, "acme")
	erCheckErased(t, what, got, b.ref.Tombstone.Ordinals...)
	if got.Tombstone == nil {
		return
	}
	g, r := *got.Tombstone, *b.ref.Tombstone
	if g.SeqAtClose != r.SeqAtClose || g.Hooks != r.Hooks || g.Bytes != r.Bytes || g.ArchivePending {
		t.Errorf("%s: tombstone seq_at_close %d, hooks %d, bytes %d, archive pending %v; want %d, %d, %d, false",
			what, g.SeqAtClose, g.Hooks, g.Bytes, g.ArchivePending, r.SeqAtClose, r.Hooks, r.Bytes)
	}
	for _, s := range tenant.EraseStages {
		if !atBoundary {
			break
		}
		if s == tenant.StageDeliveries {
			if g.Removed[s] <= 0 {
				t.Errorf("%s: removed %v counts no delivery row", what, g.Removed)
			}
			continue
		}
		if g.Removed[s] != r.Removed[s] {
			t.Errorf("%s: removed %v, want %v (deliveries aside)", what, g.Removed, r.Removed)
			break
		}
	}
	if got.Audit != b.ref.Audit {
		t.Errorf("%s: %d audit rows of acme, want %d as without a kill", what, got.Audit, b.ref.Audit)
	}
	if got.HasLive {
		t.Errorf("%s: acme still has the live ordinal %d", what, got.Live)
	}
}

// checkGlobex requires globex's trace on the stopped node n to be the
// populated one: the same keys in every family, as many in the attempt
// log and due index at least and at most (its pending rows are retried
// meanwhile: their due keys carry the next try's time, the log grows), the
// same events, claims and audit rows, no tombstone.
func (b *ekBase) checkGlobex(t *testing.T, what string, n *erNode) {
	t.Helper()
	got := n.trace(t, "globex")
	if got.Tombstone != nil || got.Erasing {
		t.Errorf("%s: globex has a tombstone or a running erase", what)
	}
	if !got.HasLive || got.Live != b.globex.Live {
		t.Errorf("%s: globex's ordinal is %d (%v), want %d", what, got.Live, got.HasLive, b.globex.Live)
	}
	for fam, keys := range b.globex.Keys {
		switch fam {
		case "attempts":
			if len(got.Keys[fam]) < len(keys) {
				t.Errorf("%s: globex's attempt log has %d keys, fewer than the %d it had", what, len(got.Keys[fam]), len(keys))
			}
			continue
		case "due":
			if len(got.Keys[fam]) != len(keys) {
				t.Errorf("%s: globex has %d due keys, want the %d it had", what, len(got.Keys[fam]), len(keys))
			}
			continue
		}
		if !slices.Equal(got.Keys[fam], keys) {
			t.Errorf("%s: globex's %s keys are %d, want the %d it had: %v", what, fam, len(got.Keys[fam]), len(keys), got.Keys[fam])
		}
	}
	if len(got.Events) != len(b.globex.Events) || got.Audit != b.globex.Audit {
		t.Errorf("%s: globex has %d events and %d audit rows, want %d and %d", what, len(got.Events), got.Audit, len(b.globex.Events), b.globex.Audit)
	}
	for store, objs := range b.globex.Claims {
		if len(objs) == 0 || len(got.Claims[store]) != len(objs) {
			t.Errorf("%s: globex's claims in %s are %v, want the %d it had", what, store, got.Claims[store], len(objs))
		}
	}
}

// TestEraseKill9AtEveryStage: for each stage boundary, a node that kills
// itself right after the stage is recorded finishes the erase at its next
// boot (without the variable), and leaves what the erase without a kill
// leaves; globex is untouched. Then a kill -9 from outside at a random
// moment of the erase, and the name's next hook is a new tenant's.
func TestEraseKill9AtEveryStage(t *testing.T) {
	b := newEKBase(t)
	t.Logf("the erase without a kill took %s", b.took)

	t.Run("stages", func(t *testing.T) {
		for _, stage := range ekKillPoints() {
			t.Run(stage, func(t *testing.T) {
				t.Parallel()
				n := ekCopyNode(t, b.node)
				p := serveWithEnv(t, n.testNode, ekCrashEnv+"="+stage)
				// The kill can come before the 202 is written (after closed):
				// a transport error is the kill, not a failure.
				if a, err := n.tryDo("DELETE", "/v1/tenants/acme?confirm=acme", erAdminToken, ""); err == nil && a.status != http.StatusAccepted {
					t.Fatalf("DELETE acme: %d %s, want 202", a.status, a.body)
				}
				ekWaitKilled(t, p, 60*time.Second)
				if !strings.Contains(p.stderr.String(), "killing the node after a stage") {
					t.Fatalf("the node died without saying it kills itself after %s:\n%s", stage, p.stderr)
				}
				ekCheckKilledAt(t, n, stage)
				p = n.serve(t)
				erWaitErased(t, n, "acme")
				ekFinishArchive(t, n, "acme")
				p.stop()
				b.checkAcme(t, "killed after "+stage, n, true)
				b.checkGlobex(t, "killed after "+stage, n)
			})
		}
	})

	t.Run("random", func(t *testing.T) {
		seed := time.Now().UnixNano()
		rng := rand.New(rand.NewPCG(uint64(seed), 0))
		// A kill after the erase finished proves nothing: try again, sooner,
		// until the kill lands inside it (the progress row is still there).
		var n *erNode
		var p *proc
		for try, within := 0, b.took; ; try, within = try+1, within/2 {
			after := time.Duration(rng.Int64N(int64(within) + 1))
			t.Logf("seed %d, try %d: kill -9 %s after the 202 (the erase without a kill took %s)", seed, try, after, b.took)
			n = ekCopyNode(t, b.node)
			p = n.serve(t)
			erStart(t, n, "acme", http.StatusAccepted)
			time.Sleep(after)
			p.kill9()
			if tr := erTrace(t, n.dataDir, "acme"); tr.Erasing {
				break
			}
			if try == 8 {
				t.Fatalf("the erase finished before a kill -9 %s after its 202, 9 times", after)
			}
		}
		p = n.serve(t)
		erWaitErased(t, n, "acme")
		ekFinishArchive(t, n, "acme")
		p.stop()
		b.checkAcme(t, "killed at random", n, false)
		b.checkGlobex(t, "killed at random", n)

		// The name sends again: a new tenant, with a higher ordinal, served;
		// its old hooks stay gone.
		p = n.serve(t)
		n.erAddSource("acme", "again", `{"name": "again", "verify": {"type": "none"}}`)
		id := hookID(t, "a hook to acme after the erase", n.hook("acme", "again", `{"again":1}`))
		if ord, ok := erTenantOrdinal(t, n, "acme"); !ok || ord <= b.ref.Tombstone.Ordinals[0] {
			t.Fatalf("acme after the erase has the ordinal %d (%v), want one above the erased %d", ord, ok, b.ref.Tombstone.Ordinals[0])
		}
		wantStatus(t, "fetch acme's new hook", n.do("GET", hookPath("acme", id), erAdminToken, ""), http.StatusOK)
		for _, old := range b.acme.Pending {
			wantError(t, "fetch an erased hook of acme", n.do("GET", hookPath("acme", old), erAdminToken, ""), http.StatusGone, "gone")
		}
		p.stop()
	})
}
