package redistest

import (
	"context"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// Server is a private redis-server on a free loopback port, for a test
// that stops and restarts Redis under the code it tests. Started by
// StartServer it keeps nothing on disk (no RDB, no AOF): a restart starts
// empty. Started by StartServerWith and ServerOptions.AppendOnly it keeps
// its data across Stop and Start, as a production Redis does.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	addr string
	opts ServerOptions

	mu  sync.Mutex
	cmd *exec.Cmd
	out *child.Buffer
}

// ServerOptions shape a private redis-server.
type ServerOptions struct {
	// AppendOnly runs the server with an append-only file in its own
	// temporary directory, fsynced at every write (appendfsync always), so
	// a Stop (SIGTERM) and Start lose nothing: the Redis of an outage,
	// not of a data loss.
	AppendOnly bool
}

// StartServer starts a private redis-server that keeps nothing on disk
// (Need when none is installed) and stops it when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	return StartServerWith(t, ServerOptions{})
}

// StartServerWith starts a private redis-server shaped by o (Need when
// none is installed) and stops it when the test ends.
func StartServerWith(t testing.TB, o ServerOptions) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Need(t, "redis-server is not installed: %v (scripts/ensure-redis.sh installs it)", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), addr: addr, opts: o}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the server's redis:// URL (database 0).
func (s *Server) URL() string { return "redis://" + s.addr + "/0" }

// Start starts the server again on the same port after Stop, and waits
// until it answers PING. It does nothing if the server is running.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	persist := []string{"--appendonly", "no"}
	if s.opts.AppendOnly {
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--bind", host, "--port", port, "--save", ""}, persist...)
	cmd := exec.Command(s.bin, append(args, "--daemonize", "no", "--dir", s.dir, "--logfile", "")...)
	s.out = &child.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	// The server dies with the test binary, even when a timeout kills it
	// before the cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	c, err := newClient(s.URL())
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s does not answer PING after 10s: %v; its output:\n%s", s.addr, err, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (SIGTERM, SIGKILL after 5 s) and waits until it
// has exited. It does nothing if the server is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	cmd := s.cmd
	s.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Output is what the server printed so far (its log).
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}
