package crash

// Building and running the two binaries the harness drives.

import (
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

// buildBinaries builds the appliance and loadgen into a temporary
// directory, the way `make build` builds bin/ankusa, and returns their paths.
func buildBinaries(t *testing.T) (ankusa, loadgen string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"github.com/ankusa/ankusa/cmd/ankusa", "github.com/ankusa/ankusa/tools/loadgen")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the binaries (%s): %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return filepath.Join(dir, "ankusa"), filepath.Join(dir, "loadgen")
}

// proc is one running child process. The test's cleanup kills it if it is
// still running.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout *child.Buffer
	stderr *child.Buffer
	done   chan struct{} // closed when the process has exited
}

func startProc(t *testing.T, dir, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{
		t:      t,
		name:   filepath.Base(bin) + " " + strings.Join(args, " "),
		stdout: &child.Buffer{},
		stderr: &child.Buffer{},
		done:   make(chan struct{}),
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", p.name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
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

// wait waits for the process to exit and returns its exit code, -1 if a
// signal ended it.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s\nstderr:\n%s", p.name, timeout, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		p.t.Fatalf("cannot send %v to %s: %v", sig, p.name, err)
	}
}

// kill9 sends SIGKILL and requires that it, not an earlier exit, ended the
// process.
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

// waitReady polls the admin listener's /readyz until it answers 200.
func (p *proc) waitReady(adminAddr string) {
	p.t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if p.exited() {
			p.t.Fatalf("%s exited with %d before it was ready:\n%s", p.name, p.cmd.ProcessState.ExitCode(), p.stderr)
		}
		resp, err := client.Get("http://" + adminAddr + "/readyz")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	p.t.Fatalf("%s: /readyz on %s did not answer 200 within 20s:\n%s", p.name, adminAddr, p.stderr)
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

// waitFile waits until the process has created path.
func (p *proc) waitFile(path string) {
	p.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if p.exited() {
			p.t.Fatalf("%s exited with %d before it created %s:\n%s", p.name, p.cmd.ProcessState.ExitCode(), path, p.stderr)
		}
	}
	p.t.Fatalf("%s did not create %s within 30s:\n%s", p.name, path, p.stderr)
}
