package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// ServerOptions shape a private nats-server (they go in its config file).
type ServerOptions struct {
	// User and Password, when set, are the only credentials the server
	// takes.
	User, Password string
	// Token, when set, is the only credential the server takes (with
	// User unset).
	Token string
	// TLSCert and TLSKey, when set, are the server's certificate and key
	// files: it then takes TLS connections only (tls://).
	TLSCert, TLSKey string
	// Authorization, when set, is the server's authorization block's
	// body verbatim (users with permissions...), instead of User,
	// Password and Token.
	Authorization string
	// MaxPayload, when positive, is the server's max_payload (bytes).
	MaxPayload int
}

// Server is a private nats-server with JetStream on a free loopback port,
// its store in a directory of the test's own that Stop and Start keep: a
// stream and its messages survive a restart, as in production.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *child.Buffer
	paused bool
}

// StartServer starts a private nats-server shaped by o (Need when none is
// installed) and stops it when the test ends.
func StartServer(t testing.TB, o ServerOptions) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		Need(t, "nats-server is not installed: %v (scripts/ensure-nats.sh installs it)", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), addr: addr}
	host, port, _ := net.SplitHostPort(addr)
	var conf strings.Builder
	fmt.Fprintf(&conf, "listen: %q\n", net.JoinHostPort(host, port))
	fmt.Fprintf(&conf, "jetstream {\n  store_dir: %q\n}\n", filepath.Join(s.dir, "store"))
	if o.MaxPayload > 0 {
		fmt.Fprintf(&conf, "max_payload: %d\n", o.MaxPayload)
	}
	if o.TLSCert != "" {
		fmt.Fprintf(&conf, "tls {\n  cert_file: %q\n  key_file: %q\n}\n", o.TLSCert, o.TLSKey)
	}
	if o.Authorization != "" {
		fmt.Fprintf(&conf, "authorization {\n%s\n}\n", o.Authorization)
	}
	if o.Token != "" {
		fmt.Fprintf(&conf, "authorization {\n  token: %q\n}\n", o.Token)
	}
	if o.User != "" {
		fmt.Fprintf(&conf, "authorization {\n  user: %q\n  password: %q\n}\n", o.User, o.Password)
	}
	if err := os.WriteFile(s.confPath(), []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.Start()
	return s
}

// binary is ANKUSA_NATS_SERVER when set, else nats-server in PATH, else
// <repo>/bin/nats-server (where scripts/ensure-nats.sh puts the one it
// builds when it can install none).
func binary() (string, error) {
	if p := os.Getenv("ANKUSA_NATS_SERVER"); p != "" {
		_, err := os.Stat(p)
		return p, err
	}
	p, err := exec.LookPath("nats-server")
	if err == nil {
		return p, nil
	}
	if root, rerr := child.ModuleRoot(); rerr == nil {
		local := filepath.Join(root, "bin", "nats-server")
		if fi, serr := os.Stat(local); serr == nil && fi.Mode()&0o111 != 0 {
			return local, nil
		}
	}
	return "", err
}

func (s *Server) confPath() string { return filepath.Join(s.dir, "nats.conf") }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the server's nats:// URL, without credentials.
func (s *Server) URL() string { return "nats://" + s.addr }

// Start starts the server (again, on the same port and store, after
// Stop) and waits until it accepts connections. It does nothing if the
// server is running.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "-c", s.confPath())
	s.out = &child.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	// The server dies with the test binary, even when a timeout kills it
	// before the cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	s.cmd = cmd
	s.paused = false
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The server logs this line once JetStream is up and the client
		// listener accepts connections.
		if strings.Contains(s.out.String(), "Server is ready") {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("nats-server on %s is not ready after 10s; its output:\n%s", s.addr, s.out.String())
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
	if s.paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		s.paused = false
	}
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

// Pause stops the server's process (SIGSTOP): connections stay open and
// nothing is answered, a server too slow to matter. It returns once every
// thread of the process is stopped (kill returns before they are: a
// request sent at once could still be answered). Resume undoes it.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP, true)
	pid := s.Pid()
	deadline := time.Now().Add(5 * time.Second)
	for !allStopped(pid) {
		if time.Now().After(deadline) {
			s.t.Fatalf("nats-server (pid %d) is not stopped 5s after SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// allStopped reports whether every thread of process pid is in state T
// (stopped), by /proc/<pid>/task/*/stat.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// "pid (comm) S ...": the state follows the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT, false) }

func (s *Server) signal(sig syscall.Signal, paused bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("nats-server on %s is not running", s.addr)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal nats-server: %v", err)
	}
	s.paused = paused
}

// Pid is the server process's id, 0 when it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
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

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(p)
	return n
}
