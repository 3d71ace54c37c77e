package main

// These tests drive the built binary the way an operator does: they write a
// config, run `ankusa serve`, send hooks over HTTP, signal the process and
// read what it left on disk. TestMain builds the binary once per run.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// binVersion is stamped into the test binary the way the Makefile does it.
const binVersion = "v0.0.0-test"

// bin is the path of the ankusa binary built by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ankusa-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot create a directory for the binary:", err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ankusa")
	args := []string{"build", "-ldflags", "-X github.com/ankusa/ankusa/cli.Version=" + binVersion, "-o", bin}
	if os.Getenv("ANKUSA_TEST_RACE") != "" {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot build ankusa (go %s): %v\n%s", strings.Join(args, " "), err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runBin runs the binary to completion and returns its exit code and output.
func runBin(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ankusa %s did not finish in 30s\nstderr:\n%s", strings.Join(args, " "), errb.String())
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("cannot run ankusa %s: %v", strings.Join(args, " "), err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// proc is one running process: `ankusa serve`, or another program a test
// drives (the crash harness's loadgen).
type proc struct {
	t      *testing.T
	name   string // the program and its arguments, for messages
	cmd    *exec.Cmd
	stderr *child.Buffer // its stderr, and its stdout unless startCmd was given one
	done   chan struct{} // closed when the process has exited
	state  *os.ProcessState
}

// startProc starts the binary in dir with args; the test's cleanup kills it
// if it is still running.
func startProc(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	return startCmd(t, dir, nil, bin, args...)
}

// startCmd starts the program at path in dir with args, its stdout to
// stdout (nil: into p.stderr, with its stderr); the test's cleanup kills
// it if it is still running.
func startCmd(t *testing.T, dir string, stdout io.Writer, path string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: strings.Join(append([]string{filepath.Base(path)}, args...), " "), stderr: &child.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = p.stderr
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls the admin listener's /readyz until it answers 200.
func (p *proc) waitReady(adminAddr string) {
	p.t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			p.t.Fatalf("%s exited with %d before it was ready:\n%s", p.name, p.state.ExitCode(), p.stderr)
		}
		resp, err := client.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("%s: /readyz on %s did not answer 200 within 15s:\n%s", p.name, adminAddr, p.stderr)
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		p.t.Fatalf("cannot send %v to %s: %v", sig, p.name, err)
	}
}

// wait waits for the process to exit and returns its exit code, or -1 if a
// signal killed it.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s:\n%s", p.name, timeout, p.stderr)
	}
	return p.state.ExitCode()
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (p *proc) kill9() {
	p.t.Helper()
	p.signal(syscall.SIGKILL)
	if code := p.wait(10 * time.Second); code != -1 {
		p.t.Fatalf("%s exited with %d before SIGKILL reached it:\n%s", p.name, code, p.stderr)
	}
}

// stop sends SIGTERM and requires exit code 0.
func (p *proc) stop() {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		p.t.Fatalf("%s exited with %d after SIGTERM, want 0:\n%s", p.name, code, p.stderr)
	}
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// testNode is the config and directories of one appliance under test.
type testNode struct {
	dir     string // working directory of the process
	config  string // path of the config file
	dataDir string
	listen  string
	admin   string
}

// nodeYAML is the config the serve tests run: tenant routing, a shared
// source without a verifier that says it trusts the URL's tenant, and a
// source that belongs to tenant acme.
const nodeYAML = `node: {name: edge-test, data_dir: %s}
listen: %s
admin: {listen: %s}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 1MiB}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
  acme-billing:
    tenant_id: acme
    verify: {type: none}
`

// newNode writes a config into a fresh temporary directory.
func newNode(t *testing.T) *testNode {
	t.Helper()
	n := newTestNode(t)
	writeConfig(t, n, fmt.Sprintf(nodeYAML, n.dataDir, n.listen, n.admin))
	return n
}

// newTestNode is a testNode on a fresh temporary directory and two free
// loopback addresses; its config is not written yet.
func newTestNode(t *testing.T) *testNode {
	dir := t.TempDir()
	return &testNode{
		dir:     dir,
		config:  filepath.Join(dir, "ankusa.yaml"),
		dataDir: filepath.Join(dir, "data"),
		listen:  freeAddr(t),
		admin:   freeAddr(t),
	}
}

// writeConfig writes yaml as n's config and has the binary check it.
func writeConfig(t *testing.T, n *testNode, yaml string) {
	t.Helper()
	if err := os.WriteFile(n.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, n.dir, "check-config", "-config", n.config); code != 0 {
		t.Fatalf("the test's own config does not check (exit %d):\n%s", code, stderr)
	}
}

func (n *testNode) walDir() string { return filepath.Join(n.dataDir, "wal") }

// serve starts `ankusa serve -config` with extra flags and waits until ready.
func (n *testNode) serve(t *testing.T, flags ...string) *proc {
	t.Helper()
	p := startProc(t, n.dir, append([]string{"serve", "-config", n.config}, flags...)...)
	p.waitReady(n.admin)
	return p
}
