package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// nodeConfig is the node the soak runs (DESIGN.md §5): the tenantpath
// resolver over shared sources that trust the URL's tenant, each with an
// HTTP and a RabbitMQ sink in raw format; fleet-scoped rate limits and
// dedupe through the private Redis; small segments sealed every 2 s and
// archived to the private versitygw. The sinks retry for as long as the
// soak lasts (max_attempts, max_age) with at most 2 s between attempts,
// so that a fault's end is followed by delivery within seconds and a
// dead letter is a finding, not the config's doing.
const nodeConfig = `node: {name: soak-1, data_dir: %[1]s}
listen: %[2]s
admin: {listen: %[3]s}
log: {level: warn, format: json}
limits: {max_body_bytes: 64KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  scope: fleet
  default: {rate: 100000, burst: 100000}
redis: {url: "%[4]s"}
dedupe: {scope: fleet, ttl: 1h}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_bytes: 4MiB, max_age: 2s, retain_local: 20s}
archive: {type: s3, endpoint: %[5]s, bucket: %[6]s, prefix: soak, region: us-east-1, access_key: "file:%[7]s", secret_key: "file:%[8]s"}
source_store: {type: static}
sources:
%[9]s`

// sourceConfig is one shared source; %[2]s is its dedupe line or nothing.
const sourceConfig = `  %[1]s:
    verify: {type: none}
    trust_url_tenant: true%[2]s
    sinks:
      - {id: http, type: http, url: "http://%[3]s/in/{tenant_id}/{source_id}", allow_private: true, format: raw, timeout: 3s, max_attempts: 100000, max_age: 24h, retry_base: 200ms, retry_max: 2s}
      - {id: amqp, type: rabbitmq, url: "%[4]s", exchange: %[5]s, routing_key: "soak.{tenant_id}.{source_id}", format: raw, timeout: 3s, max_attempts: 100000, max_age: 24h, retry_base: 200ms, retry_max: 2s}
`

// node is `ankusa serve` under a supervisor that restarts it whenever it
// exits, and tells an exit the scheduler caused (kill -9) from one it did
// not, which is a finding.
type node struct {
	svc          *service
	listen, admn string
	dataDir      string

	mu       sync.Mutex
	expected bool // the next exit is the scheduler's kill
	pid      int
	stopping bool

	tl   *timeline
	done chan struct{}
}

func newNode(o Options, dir, dataDir string, cfg func(listen, admin string) string, tl *timeline) (*node, error) {
	listen, err := child.FreeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := child.FreeAddr()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "ankusa.yaml")
	if err := os.WriteFile(path, []byte(cfg(listen, admin)), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the node's config: %w", err)
	}
	exe, err := filepath.Abs(filepath.Join(o.Bin, "ankusa"))
	if err != nil {
		return nil, err
	}
	ready := &http.Client{Timeout: 2 * time.Second}
	n := &node{listen: listen, admn: admin, dataDir: dataDir, tl: tl, done: make(chan struct{})}
	n.svc = &service{name: "ankusa", boot: 60 * time.Second, cmd: func() *exec.Cmd {
		return exec.Command(exe, "serve", "-config", path)
	}, ready: func() error {
		resp, err := ready.Get("http://" + admin + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /readyz: %s", resp.Status)
		}
		return nil
	}}
	return n, nil
}

// supervise starts the node and restarts it after each exit until stop.
// A boot that fails (a full disk, say) is retried every second.
func (n *node) supervise(ctx context.Context) error {
	if err := n.svc.start(ctx); err != nil {
		return err
	}
	n.notePid()
	go n.loop(ctx)
	return nil
}

func (n *node) loop(ctx context.Context) {
	defer close(n.done)
	for {
		cmd, exited := n.svc.current()
		if cmd == nil { // a restart gave up: the soak is ending
			return
		}
		select {
		case <-exited:
		case <-ctx.Done():
			return
		}
		n.mu.Lock()
		expected, stopping := n.expected, n.stopping
		n.expected = false
		n.mu.Unlock()
		if stopping {
			return
		}
		n.svc.forget()
		if !expected {
			n.tl.finding("node exited on its own (%v): %s", cmd.ProcessState, exitReason(n.svc.output()))
		}
		n.restart(ctx)
	}
}

// restart boots the node again, retrying every second until it is ready
// or the soak ends.
func (n *node) restart(ctx context.Context) {
	began := time.Now()
	for attempt := 1; ; attempt++ {
		if n.isStopping() {
			return
		}
		err := n.svc.start(ctx)
		if err == nil {
			n.notePid()
			n.tl.event("node restarted in %v (attempt %d)", time.Since(began).Round(time.Millisecond), attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if attempt == 1 || attempt%10 == 0 {
			n.tl.event("node boot failed (attempt %d): %s", attempt, firstLine(err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (n *node) isStopping() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopping
}

func (n *node) notePid() {
	cmd, _ := n.svc.current()
	n.mu.Lock()
	defer n.mu.Unlock()
	if cmd != nil {
		n.pid = cmd.Process.Pid
	}
}

// kill9 kills the node as a crash would; the supervisor restarts it.
func (n *node) kill9() {
	n.mu.Lock()
	n.expected = true
	pid := n.pid
	n.mu.Unlock()
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// signal sends sig (SIGSTOP, SIGCONT) to the node.
func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	pid := n.pid
	n.mu.Unlock()
	_ = syscall.Kill(pid, sig)
}

// shutdown stops supervising, and stops the node with SIGTERM (SIGKILL
// after 10 s): it answers an error unless the node exited 0.
func (n *node) shutdown() error {
	n.mu.Lock()
	n.stopping = true
	pid := n.pid
	n.mu.Unlock()
	cmd, exited := n.svc.current()
	if cmd == nil {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		n.svc.kill()
		return fmt.Errorf("the node did not stop within 10s of SIGTERM")
	}
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("the node exited %v after SIGTERM: %s", cmd.ProcessState, exitReason(n.svc.output()))
	}
	return nil
}

// exitReason is why the node's output says it stopped: a Go panic's
// first line, else the message and error of its last error-level log
// line (JSON), else its last two lines.
func exitReason(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return l
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		var m struct{ Level, Msg, Error string }
		if json.Unmarshal([]byte(lines[i]), &m) != nil {
			continue
		}
		switch m.Level {
		case "error", "dpanic", "panic", "fatal":
			return strings.TrimSuffix(m.Msg+": "+m.Error, ": ")
		}
	}
	return lastLines(out, 2)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// lastLines is the last k non-empty lines of s, joined by " | ".
func lastLines(s string, k int) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) > k {
		out = out[len(out)-k:]
	}
	return strings.Join(out, " | ")
}
