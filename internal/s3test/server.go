package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/internal/child"
)

const (
	// Region is the region the server answers for and Client signs for.
	Region = "us-east-1"
	// healthPath answers 200 to GET once the server serves requests.
	healthPath = "/health"
	// startTimeout bounds the wait for the health path after a start.
	startTimeout = 20 * time.Second
)

// Server is a private versitygw on a free loopback port, serving the posix
// directory Dir. Its methods are safe for concurrent use; Stop and Restart
// may be called from any goroutine, but Restart fails the test (t.Fatal)
// and so belongs on the test's goroutine.
type Server struct {
	// Endpoint is the server's host:port on 127.0.0.1, the same for the
	// server's life (Restart keeps it).
	Endpoint string
	// AccessKey and SecretKey are the root credentials; the secret is
	// random per server, so a request that reaches another test's server
	// fails its signature instead of succeeding there.
	AccessKey string
	SecretKey string
	// Dir is the posix root: a directory per bucket, a file per object.
	// It outlives Stop and Restart and goes with the test's TempDir.
	Dir string

	t    testing.TB
	bin  string
	meta string // sidecar metadata directory, when Dir has no xattrs

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	out    *child.Buffer
}

// Start starts a private versitygw and waits until it answers GET /health;
// the server is killed when the test ends. It fails the test when the
// server cannot be found, built or started.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binary(t)
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	s := &Server{
		Endpoint:  addr,
		AccessKey: "ankusa-test",
		SecretKey: hex.EncodeToString(secret),
		Dir:       t.TempDir(),
		t:         t,
		bin:       bin,
	}
	if !hasXattrs(s.Dir) {
		s.meta = t.TempDir()
	}
	t.Cleanup(s.Stop)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	return s
}

// Stop kills the server (SIGKILL, as a crash would) and waits until it has
// exited; Dir stays. It does nothing if the server is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

// Restart stops the server if it runs and starts it again on the same
// Endpoint and Dir, with the same credentials, and waits until it answers
// GET /health.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	s.startLocked()
}

// Output is what the server printed since it last started.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Client is a minio-go client of the server: path-style bucket lookup,
// plain HTTP, root credentials, one retry. It holds no resource that needs
// closing beyond idle connections, closed when the test ends.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	tr, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure:       false,
		Transport:    tr,
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
	})
	if err != nil {
		t.Fatalf("cannot create an S3 client of %s: %v", s.Endpoint, err)
	}
	return c
}

// MakeBucket creates the bucket name on the server.
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("cannot create bucket %q on %s: %v", name, s.Endpoint, err)
	}
}

func (s *Server) startLocked() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	args := []string{"--port", s.Endpoint, "--region", Region, "--health", healthPath, "--quiet", "posix"}
	if s.meta != "" {
		args = append(args, "--sidecar", s.meta)
	}
	cmd := exec.Command(s.bin, append(args, s.Dir)...)
	cmd.Env = append(ServerEnv(), "ROOT_ACCESS_KEY="+s.AccessKey, "ROOT_SECRET_KEY="+s.SecretKey)
	out := &child.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the test binary, even when a timeout kills it
	// before the cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Wait returns soon after the kill even if a child of the process
	// still holds its output open.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("cannot start %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.out = cmd, exited, out
	if err := waitHealthy(s.Endpoint, exited); err != nil {
		s.stopLocked()
		if cmd.ProcessState != nil {
			err = fmt.Errorf("%w (%s)", err, cmd.ProcessState)
		}
		s.t.Fatalf("versitygw on %s: %v; its output:\n%s", s.Endpoint, err, out.String())
	}
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// waitHealthy waits until GET /health on addr answers 200 from the process
// whose exit closes exited.
func waitHealthy(addr string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second}
	url := "http://" + addr + healthPath
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return errors.New("exited before answering GET " + healthPath)
		default:
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// A server that failed to bind exits at once: make sure
				// the answer was not another process's on the port.
				select {
				case <-exited:
					return errors.New("exited (port taken?) while something answered GET " + healthPath)
				case <-time.After(20 * time.Millisecond):
					return nil
				}
			}
			err = fmt.Errorf("GET %s: %s", healthPath, resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no 200 from GET %s within %v: %w", healthPath, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ServerEnv is the environment without the variables versitygw
// reads as flags (VGW_*, the root credentials, LOGFILE, WEBHOOK), so a
// developer's settings do not change the server the tests run.
func ServerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VGW_") || strings.HasPrefix(name, "ROOT_") || name == "LOGFILE" || name == "WEBHOOK" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// hasXattrs reports whether dir's filesystem supports user xattrs, the
// check versitygw's posix backend makes at start.
func hasXattrs(dir string) bool {
	_, err := unix.Getxattr(dir, "user.test", nil)
	return !errors.Is(err, unix.ENOTSUP)
}

// buildMu makes the tests of one process build the binary once.
var buildMu sync.Mutex

// binary finds the versitygw to run: ANKUSA_VERSITYGW, <repo>/bin or PATH;
// when there is none it builds <repo>/bin/versitygw, or fails when CI=true.
func binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("ANKUSA_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("ANKUSA_VERSITYGW: %v", err)
		}
		return p
	}
	root, rootErr := child.ModuleRoot()
	local := filepath.Join(root, "bin", "versitygw")
	if rootErr == nil && isExecutable(local) {
		return local
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("versitygw is not at %s, in PATH or named by ANKUSA_VERSITYGW (CI=true: failing instead of building it; run make services first)", local)
	}
	if rootErr != nil {
		t.Fatalf("versitygw is not installed and cannot be built here: %v (set ANKUSA_VERSITYGW)", rootErr)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if isExecutable(local) { // another test of this process built it
		return local
	}
	t.Logf("building %s with scripts/ensure-versitygw.sh (about 2 minutes cold)", local)
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-versitygw.sh"))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || !isExecutable(local) {
		t.Fatalf("cannot build versitygw (run make services): %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	return local
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
