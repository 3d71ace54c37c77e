// Package exampletest runs the stock ankusa binary on an example's own
// ankusa.yaml, for the end-to-end tests of the config-only examples
// (examples/gateway, examples/saas): it builds the binary, writes the
// sample with the test's listen addresses in place of its own, starts
// `serve`, waits for /readyz, and records what reaches an HTTP receiver.
//
// It is a test helper: nothing of the product imports it, and it imports
// nothing of the product (internal/child only), so an example's test
// drives the node as an operator would, over HTTP.
package exampletest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// Build builds the stock binary (cmd/ankusa) as bin/ankusa-examples in
// the module's root (bin/ankusa-examples-race with the race detector,
// when ANKUSA_TEST_RACE is set, as cmd/ankusa's tests build it) and
// returns its path. go build leaves an up-to-date binary as it is, so
// the examples' tests share one link instead of paying one each; a lock
// file keeps two test binaries from writing it at once. It is not
// bin/ankusa, which make build stamps with a version.
func Build(t testing.TB) string {
	t.Helper()
	root, err := child.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	name := "ankusa-examples"
	args := []string{"build"}
	if os.Getenv("ANKUSA_TEST_RACE") != "" {
		name, args = name+"-race", append(args, "-race")
	}
	bin := filepath.Join(root, "bin", name)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close() // and so unlocks it
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("cannot lock %s: %v", lock.Name(), err)
	}
	args = append(args, "-o", bin, "./cmd/ankusa")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build ankusa (go %s): %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// FreeAddr is a loopback address with a port nothing listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// WriteConfig reads the sample (the example's ankusa.yaml), replaces every
// occurrence of each pair's old text by its new one, and writes the result
// into dir. An old text the sample does not hold fails the test, so a
// sample that changes under the test is not served half replaced.
func WriteConfig(t testing.TB, sample, dir string, replace ...[2]string) string {
	t.Helper()
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	for _, r := range replace {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("%s does not hold %q (the test replaces it)", sample, r[0])
		}
		cfg = strings.ReplaceAll(cfg, r[0], r[1])
	}
	path := filepath.Join(dir, "ankusa.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Node is a running `ankusa serve`.
type Node struct {
	Listen, Admin string // host:port of the public and the admin listener
	Dir           string // its working directory (relative paths of the config)
	cmd           *exec.Cmd
	out           *child.Buffer
	done          chan struct{}
}

// Start runs `bin serve -config cfg` in dir with env added to the test's
// environment, and waits until /readyz on admin answers 200. The process
// is killed when the test ends, if it is still running.
func Start(t testing.TB, bin, dir, cfg, listen, admin string, env ...string) *Node {
	t.Helper()
	n := &Node{Listen: listen, Admin: admin, Dir: dir, out: &child.Buffer{}, done: make(chan struct{})}
	n.cmd = exec.Command(bin, "serve", "-config", cfg)
	n.cmd.Dir, n.cmd.Env = dir, append(os.Environ(), env...)
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("cannot start serve: %v", err)
	}
	go func() {
		_ = n.cmd.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	n.waitReady(t)
	return n
}

func (n *Node) waitReady(t testing.TB) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-n.done:
			t.Fatalf("serve exited with %d before it was ready:\n%s", n.cmd.ProcessState.ExitCode(), n.out)
		default:
		}
		resp, err := client.Get("http://" + n.Admin + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	t.Fatalf("/readyz on %s did not answer 200 within 20s:\n%s", n.Admin, n.out)
}

// Output is what the node has written so far (stdout and stderr).
func (n *Node) Output() string { return n.out.String() }

// Stop sends SIGTERM and requires a clean exit (0) within 30 s.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
		if code := n.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("serve exited with %d after SIGTERM, want 0:\n%s", code, n.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit within 30s of SIGTERM:\n%s", n.out)
	}
}

// Answer is one HTTP answer, read whole.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a *Answer) String() string { return fmt.Sprintf("%d %s", a.Status, a.Body) }

// Do sends req with client and reads the answer; a transport error fails
// the test.
func Do(t testing.TB, client *http.Client, req *http.Request) *Answer {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	return &Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// Received is one request that reached a Receiver.
type Received struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Receiver is an HTTP server that answers 204 to every POST and keeps
// what it received, standing in for the backend a sink delivers to.
type Receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []Received
	more chan struct{} // closed and replaced on every request
}

// NewReceiver starts a Receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{more: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, Received{Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
		close(r.more)
		r.more = make(chan struct{})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// Wait returns the first request received for which match is true,
// waiting up to timeout for it; the test fails if none comes.
func (r *Receiver) Wait(t testing.TB, what string, timeout time.Duration, match func(Received) bool) Received {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		r.mu.Lock()
		for _, g := range r.got {
			if match(g) {
				r.mu.Unlock()
				return g
			}
		}
		more := r.more
		n := len(r.got)
		r.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("%s: not delivered within %s (%d other requests received)", what, timeout, n)
		}
	}
}

// All is every request received so far.
func (r *Receiver) All() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.got...)
}

// Hook is the JSON form of a hook, as the admin API answers
// GET /v1/tenants/<tenant>/hooks/<id> and a broker sink's envelope format
// carries it.
type Hook struct {
	ID           string `json:"id"`
	TenantID     string `json:"tenant_id"`
	SourceID     string `json:"source_id"`
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding"`
	Verification struct {
		Verifier string `json:"verifier"`
		Verified bool   `json:"verified"`
	} `json:"verification"`
}
