package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/envelope"
)

// Issue 16, a full disk (DESIGN.md §6 item 10): ENOSPC is not fatal.
// These tests put node.data_dir on a 20 MiB tmpfs (they need root to
// mount it, and fail rather than skip without it) and fill it.

// diskYAML is the node of the disk-full tests: a small reserve, small WAL
// files and segments, so that 20 MiB holds several of each.
const diskYAML = `node: {name: edge-disk, data_dir: %s}
listen: %s
admin: {listen: %s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 1MiB}
segment: {max_bytes: 256KiB, max_age: 200ms}
storage: {reserve_bytes: 2MiB}
log: {level: info, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
`

// mountTmpfs mounts a tmpfs of size under a fresh directory and unmounts
// it when the test ends.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("the disk-full tests mount a tmpfs and need root (uid %d)", os.Geteuid())
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("cannot mount a tmpfs on %s: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("cannot unmount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// newDiskNode is a node whose data_dir is on a 20 MiB tmpfs; it returns
// the node and the mount point.
func newDiskNode(t *testing.T) (*testNode, string) {
	t.Helper()
	n := newTestNode(t)
	mnt := mountTmpfs(t, "20m")
	n.dataDir = filepath.Join(mnt, "data")
	writeConfig(t, n, fmt.Sprintf(diskYAML, n.dataDir, n.listen, n.admin))
	return n, mnt
}

// fill takes every free byte of the file system at dir into one file
// (fallocate, smaller each time the node took some meanwhile) and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for range 1000 {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		if free < 64<<10 {
			return path
		}
		err = unix.Fallocate(int(f.Fd()), 0, fi.Size(), free)
		if err != nil && !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("cannot fill %s: %v", dir, err)
		}
	}
	t.Fatalf("cannot fill %s: the node keeps freeing space", dir)
	return ""
}

// diskLoad posts hooks from a few senders and records every 201 and
// every 503 unavailable with Retry-After; any other answer is a failure.
type diskLoad struct {
	t       *testing.T
	base    string
	stopCh  chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	acks    []ack
	bad     []string
	last201 atomic.Int64 // unix nanos of the last 201
	last503 atomic.Int64 // unix nanos of the last 503 unavailable
	refused atomic.Int64
	pause   time.Duration // between two posts of a sender
	maxBody int
}

// startDiskLoad starts senders that post a hook of up to maxBody bytes
// every pause.
func startDiskLoad(t *testing.T, listen string, senders int, pause time.Duration, maxBody int) *diskLoad {
	l := &diskLoad{t: t, base: "http://" + listen + "/webhooks/", stopCh: make(chan struct{}), pause: pause, maxBody: maxBody}
	for i := range senders {
		l.wg.Add(1)
		go l.sender(uint64(i))
	}
	return l
}

func (l *diskLoad) sender(seed uint64) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for {
		select {
		case <-l.stopCh:
			return
		default:
		}
		time.Sleep(l.pause)
		tenant := fmt.Sprintf("t%d", rng.IntN(4))
		body := randomBody(rng, l.maxBody)
		req, _ := http.NewRequest(http.MethodPost, l.base+tenant+"/open", strings.NewReader(string(body)))
		resp, err := client.Do(req)
		if err != nil {
			l.fail(fmt.Sprintf("POST: %v (the node must not go away)", err))
			time.Sleep(10 * time.Millisecond)
			continue
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusCreated:
			var v struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(answer, &v); err != nil || len(v.ID) != envelope.IDTextLen {
				l.fail(fmt.Sprintf("201 without an id: %s", answer))
				continue
			}
			a := ack{id: v.ID, at: time.Now()}
			a.tenant, a.source, a.body = tenant, "open", body
			l.mu.Lock()
			l.acks = append(l.acks, a)
			l.mu.Unlock()
			l.last201.Store(time.Now().UnixNano())
		case resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(answer), `"error":"unavailable"`) && resp.Header.Get("Retry-After") != "":
			l.refused.Add(1)
			l.last503.Store(time.Now().UnixNano())
			time.Sleep(5 * time.Millisecond)
		default:
			l.fail(fmt.Sprintf("POST /webhooks/%s/open: %d %s", tenant, resp.StatusCode, answer))
		}
	}
}

func (l *diskLoad) fail(msg string) {
	l.mu.Lock()
	l.bad = append(l.bad, msg)
	l.mu.Unlock()
}

func (l *diskLoad) stop() []ack {
	close(l.stopCh)
	l.wg.Wait()
	if len(l.bad) > 0 {
		l.t.Errorf("%d answers the node must not give; first: %s", len(l.bad), strings.Join(l.bad[:min(5, len(l.bad))], "\n"))
	}
	return l.acks
}

// waitUntil polls cond every 2ms until it holds or within passes.
func waitUntil(t *testing.T, p *proc, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if p.exited() {
			t.Fatalf("the node exited (%d) waiting for %s:\n%s", p.state.ExitCode(), what, lastBytes(p.stderr.String()))
		}
		if time.Since(start) > within {
			t.Fatalf("no %s within %s; the node's log ends:\n%s", what, within, lastBytes(p.stderr.String()))
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

func lastBytes(s string) string { return s[max(0, len(s)-4000):] }

// readyz returns /readyz's status and body.
func readyz(t *testing.T, admin string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDiskFullUnderLoad fills the node's file system five times under
// load: ingest answers 503 unavailable (the node never exits), /readyz
// names the full disk, and within 5s of the space coming back hooks are
// acknowledged again. After a clean stop and a restart every acknowledged
// hook is in the log once, with its body, and seqs are dense.
func TestDiskFullUnderLoad(t *testing.T) {
	n, mnt := newDiskNode(t)
	p := n.serve(t)
	// About 100 hooks a second per sender, of up to 1 KiB: 20 MiB holds
	// the whole run, so only the filler fills the disk.
	l := startDiskLoad(t, n.listen, 4, 10*time.Millisecond, 1<<10)
	var resumes []time.Duration
	for round := range 5 {
		since := time.Now().UnixNano()
		waitUntil(t, p, 5*time.Second, "201 before filling", func() bool { return l.last201.Load() > since })
		time.Sleep(300 * time.Millisecond)
		filler := fill(t, mnt)
		filled := time.Now().UnixNano()
		waitUntil(t, p, 5*time.Second, "503 unavailable on a full disk", func() bool { return l.last503.Load() > filled })
		if code, body := readyz(t, n.admin); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk full") || !strings.Contains(body, n.dataDir) {
			t.Fatalf("round %d: /readyz on a full disk: %d %q, want 503 naming the full disk and data_dir", round, code, body)
		}
		time.Sleep(300 * time.Millisecond) // the sealer and the meta store meet the full disk too
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		freed := time.Now().UnixNano()
		took := waitUntil(t, p, 5*time.Second, "201 after space returned", func() bool { return l.last201.Load() > freed })
		resumes = append(resumes, took)
		waitUntil(t, p, 5*time.Second, "/readyz 200 after space returned", func() bool { code, _ := readyz(t, n.admin); return code == http.StatusOK })
	}
	acks := l.stop()
	t.Logf("%d hooks acknowledged, %d refused with 503; first 201 after space returned: %v", len(acks), l.refused.Load(), resumes)
	if len(p.stderr.String()) > 1<<20 {
		t.Errorf("the node logged %d bytes in five fills, want under 1 MiB", len(p.stderr.String()))
	}
	p.stop()
	p = n.serve(t)
	p.stop()
	c := readWAL(t, n.walDir())
	checkNumbering(t, c.hooks)
	checkAcked(t, acks, c.hooks)
}

// TestDiskFullBoot starts a node on a file system with no space left.
// With the storage reserve its last run held, it serves (its admin API
// answers, the log stays small) until stopped; without it, it exits at
// once with one line naming data_dir. Never a hang, never a flood of log.
// Once space returns it starts and takes hooks.
func TestDiskFullBoot(t *testing.T) {
	n, mnt := newDiskNode(t)
	p := n.serve(t)
	postOne(t, n.listen, "acme", "open", []byte("before the disk filled"))
	p.stop()

	filler := fill(t, mnt)
	start := time.Now()
	p = startProc(t, n.dir, "serve", "-config", n.config)
	waitUntil(t, p, 10*time.Second, "an admin listener on a full disk with the reserve", func() bool {
		resp, err := http.Get("http://" + n.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	t.Logf("boot on a full disk with the reserve: admin answers after %v", time.Since(start))
	time.Sleep(2 * time.Second)
	if log := p.stderr.String(); len(log) > 1<<20 {
		t.Fatalf("a node on a full disk logged %d bytes in 2s", len(log))
	} else {
		t.Logf("a node on a full disk with the reserve logged %d bytes in 2s", len(log))
	}
	p.stop()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}

	// The reserve is gone (a node stopped while it was released).
	if err := os.Remove(filepath.Join(n.dataDir, "storage.reserve")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	filler = fill(t, mnt)
	start = time.Now()
	p = startProc(t, n.dir, "serve", "-config", n.config)
	code := p.wait(10 * time.Second)
	log := p.stderr.String()
	t.Logf("boot on a full disk: exit %d after %v, %d bytes of log:\n%s", code, time.Since(start), len(log), log)
	if code == 0 {
		t.Fatalf("serve on a full disk exited 0")
	}
	if len(log) > 1<<20 || !strings.Contains(log, n.dataDir) || !strings.Contains(log, "full") {
		t.Fatalf("serve on a full disk logged %d bytes, want under 1 MiB naming data_dir %s and the full disk", len(log), n.dataDir)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = n.serve(t)
	postOne(t, n.listen, "acme", "open", []byte("after space returned"))
	p.stop()
}

// TestDiskFilledByHooks is the issue as reported: hooks alone fill the
// 20 MiB data_dir (segments are kept for segment.retain_local). The node
// must not exit: it answers 503 unavailable, keeps its admin API and a
// small log, stops cleanly, and every hook it acknowledged is kept. The
// next boot, with the disk still full, exits at once or serves; it never
// hangs.
func TestDiskFilledByHooks(t *testing.T) {
	n, _ := newDiskNode(t)
	p := n.serve(t)
	l := startDiskLoad(t, n.listen, 4, 0, 16<<10)
	start := time.Now().UnixNano()
	waitUntil(t, p, 30*time.Second, "503 unavailable once hooks filled the disk", func() bool { return l.last503.Load() > start })
	time.Sleep(2 * time.Second) // the sealer, the meta store and the WAL all meet the full disk
	if code, body := readyz(t, n.admin); code != http.StatusServiceUnavailable || !strings.Contains(body, "disk full") {
		t.Fatalf("/readyz with the disk full of hooks: %d %q", code, body)
	}
	acks := l.stop()
	log := p.stderr.String()
	t.Logf("%d hooks acknowledged, %d refused; %d bytes of log", len(acks), l.refused.Load(), len(log))
	if len(log) > 1<<20 {
		t.Errorf("the node logged %d bytes with its disk full, want under 1 MiB", len(log))
	}
	p.stop()

	start2 := time.Now()
	p = startProc(t, n.dir, "serve", "-config", n.config)
	waitUntil(t, p, 15*time.Second, "an exit or an admin listener on the boot with the disk full", func() bool {
		if p.exited() {
			return true
		}
		resp, err := http.Get("http://" + n.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	if p.exited() {
		t.Logf("boot with the disk full of hooks: exit %d after %v:\n%s", p.state.ExitCode(), time.Since(start2), p.stderr)
		if !strings.Contains(p.stderr.String(), n.dataDir) || len(p.stderr.String()) > 1<<20 {
			t.Fatalf("the boot that refused a full disk did not name data_dir %s", n.dataDir)
		}
	} else {
		t.Logf("boot with the disk full of hooks: serving after %v", time.Since(start2))
		p.stop()
	}
	c := readWAL(t, n.walDir())
	checkNumbering(t, c.hooks)
	checkAcked(t, acks, c.hooks)
}
