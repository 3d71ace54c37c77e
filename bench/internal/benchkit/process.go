package benchkit

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ankusa/ankusa/internal/child"
)

// GetOK gets url with c and wants 200 OK.
func GetOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// Tail is the end of a process's output, for error messages.
func Tail(s string) string {
	const n = 2000
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// Metrics gets the Prometheus text exposition at url with c and calls
// each with every sample's name (its labels included, as written) and
// value; comments, and samples whose value is not a number, are passed
// over.
func Metrics(c *http.Client, url string, each func(name string, value float64)) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		each(line[:i], v)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// Server is a server's data directory and the loopback addresses it
// listens on, free a moment before, and once started its process, whose
// stdout and stderr it keeps.
type Server struct {
	Name    string
	Dir     string
	Addrs   []string
	Cmd     *exec.Cmd
	out     *child.Buffer
	exited  chan struct{}
	waitErr error
}

// NewServer creates a data directory under tmp ("": the system temp dir)
// and finds ports addresses for the server name; nothing runs yet.
func NewServer(name, tmp string, ports int) (*Server, error) {
	dir, err := os.MkdirTemp(tmp, "ankusa-bench-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a data directory (set -tmp): %w", err)
	}
	s := &Server{Name: name, Dir: dir}
	for range ports {
		addr, err := child.FreeAddr()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.Addrs = append(s.Addrs, addr)
	}
	return s, nil
}

// Start starts cmd and polls ready every 5 ms (a boot time is measured to
// that) until it answers, the process exits, ctx is done or timeout has
// passed: it returns the time from the start to that answer. On an error
// the process is stopped.
func (s *Server) Start(ctx context.Context, cmd *exec.Cmd, timeout time.Duration, ready func() error) (time.Duration, error) {
	out, exited := &child.Buffer{}, make(chan struct{})
	cmd.Stdout, cmd.Stderr = out, out
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start %s (build it with make bench-build): %w", s.Name, err)
	}
	s.Cmd, s.out, s.exited = cmd, out, exited
	go func() { s.waitErr = cmd.Wait(); close(exited) }()
	for {
		err := ready()
		if err == nil {
			return time.Since(began), nil
		}
		select {
		case <-exited:
			return 0, fmt.Errorf("%s exited before it was ready: %v\n%s", s.Name, s.waitErr, Tail(s.Output()))
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(5 * time.Millisecond):
			if time.Since(began) < timeout {
				continue
			}
			err = fmt.Errorf("%s not ready after %s: %v\n%s", s.Name, timeout, err, Tail(s.Output()))
		}
		s.Stop(10 * time.Second)
		return 0, err
	}
}

// Pid is the process's id.
func (s *Server) Pid() int { return s.Cmd.Process.Pid }

// Output is the process's stdout and stderr so far.
func (s *Server) Output() string { return s.out.String() }

// WaitErr is how the process exited, once it has.
func (s *Server) WaitErr() error {
	<-s.exited
	return s.waitErr
}

// Alive reports whether the process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to exit, with SIGKILL
// after grace; it returns an error unless the process exited 0.
func (s *Server) Stop(grace time.Duration) error {
	if s.Alive() {
		_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM\n%s", s.Name, s.waitErr, Tail(s.Output()))
		}
		return nil
	case <-time.After(grace):
		_ = s.Cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM", s.Name, grace)
	}
}

// Shut stops the server if it was started (see Stop), removes its data
// directory, and returns an error unless it exited 0.
func (s *Server) Shut(grace time.Duration) error {
	var err error
	if s.Cmd != nil {
		err = s.Stop(grace)
	}
	os.RemoveAll(s.Dir)
	return err
}

// readyClient asks a starting server whether it is ready.
var readyClient = &http.Client{Timeout: 5 * time.Second}

// StartRef starts the reference server in bin called name, bench/ceiling,
// bench/gcref (which logs to its data directory) or bench/relay, on a
// loopback port, with extra added to its flags, and waits up to 15 s for
// its GET /stats.
func StartRef(ctx context.Context, bin, tmp, name string, extra ...string) (*Server, error) {
	s, err := NewServer(name, tmp, 1)
	if err != nil {
		return nil, err
	}
	args := []string{"-listen", s.Addrs[0]}
	if name == "gcref" {
		args = append(args, "-dir", s.Dir)
	}
	args = append(args, extra...)
	_, err = s.Start(ctx, exec.Command(filepath.Join(bin, name), args...), 15*time.Second, func() error {
		return GetOK(readyClient, "http://"+s.Addrs[0]+"/stats")
	})
	if err != nil {
		s.Shut(time.Second) // Start stopped it: this removes the directory
		return nil, err
	}
	return s, nil
}

// Node is the appliance, `ankusa serve` of the binary in Bin, on a
// Server of its own: Listen is its listener, Admin its admin listener.
type Node struct {
	*Server
	Bin, Listen, Admin string
}

// NewNode creates the node's data directory under tmp and finds its two
// addresses; nothing runs yet.
func NewNode(bin, tmp string) (*Node, error) {
	s, err := NewServer("ankusa", tmp, 2)
	if err != nil {
		return nil, err
	}
	return &Node{Server: s, Bin: bin, Listen: s.Addrs[0], Admin: s.Addrs[1]}, nil
}

// Data is the directory for the node's config to name as its data_dir.
func (n *Node) Data() string { return filepath.Join(n.Dir, "data") }

// Boot writes config to the node's ankusa.yaml, starts the node on it and
// waits up to timeout for its admin listener's /readyz 200: it returns
// the time from the start to that answer.
func (n *Node) Boot(ctx context.Context, config string, timeout time.Duration) (time.Duration, error) {
	path := filepath.Join(n.Dir, "ankusa.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return 0, fmt.Errorf("cannot write the appliance's config: %w", err)
	}
	cmd := exec.Command(filepath.Join(n.Bin, "ankusa"), "serve", "-config", path)
	return n.Start(ctx, cmd, timeout, func() error { return GetOK(readyClient, "http://"+n.Admin+"/readyz") })
}

// StartNode starts a node on a fresh data directory under tmp, its config
// what config makes of it, and waits up to 15 s for /readyz 200.
func StartNode(ctx context.Context, bin, tmp string, config func(n *Node) string) (*Node, error) {
	n, err := NewNode(bin, tmp)
	if err != nil {
		return nil, err
	}
	if _, err := n.Boot(ctx, config(n), 15*time.Second); err != nil {
		n.Shut(time.Second)
		return nil, err
	}
	return n, nil
}
