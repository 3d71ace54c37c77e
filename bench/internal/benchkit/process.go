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

// Proc is a started server process; its output is kept.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	out     child.Buffer
	exited  chan struct{}
	waitErr error
}

// StartProc starts cmd, its stdout and stderr kept in Output, and waits
// for it in the background. The error is exec's, for the caller to say
// how to build the binary.
func StartProc(name string, cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, Cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout = &p.out
	cmd.Stderr = &p.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Output is the process's stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// WaitErr is how the process exited, once it has.
func (p *Proc) WaitErr() error {
	<-p.exited
	return p.waitErr
}

// Alive reports whether the process is still running.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// WaitReady polls ready every 20 ms until it succeeds, the process exits,
// ctx is done or timeout has passed.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready: %v\n%s", p.Name, p.waitErr, Tail(p.Output()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s: %v\n%s", p.Name, timeout, err, Tail(p.Output()))
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit, with SIGKILL
// after grace; it returns an error unless the process exited 0.
func (p *Proc) Stop(grace time.Duration) error {
	if p.Alive() {
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM\n%s", p.Name, p.waitErr, Tail(p.Output()))
		}
		return nil
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM", p.Name, grace)
	}
}

// DataDir creates a fresh data directory under parent ("": the system
// temp dir) and finds n loopback addresses whose ports were free a moment
// ago, for a server to listen on.
func DataDir(parent, prefix string, n int) (dir string, addrs []string, err error) {
	dir, err = os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("cannot create a data directory (set -tmp): %w", err)
	}
	for range n {
		addr, err := child.FreeAddr()
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		addrs = append(addrs, addr)
	}
	return dir, addrs, nil
}

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

// Server is a server process started on a data directory of its own and
// on loopback addresses that were free a moment before.
type Server struct {
	*Proc
	Dir   string
	Addrs []string
}

// StartServer creates a data directory under tmp ("": the system temp
// dir) and finds ports addresses, starts the command cmd makes for them,
// and waits up to 15 s until ready answers. On an error nothing is left
// running or on disk.
func StartServer(ctx context.Context, name, tmp string, ports int, cmd func(dir string, addrs []string) (*exec.Cmd, error), ready func(addrs []string) error) (*Server, error) {
	dir, addrs, err := DataDir(tmp, "ankusa-bench-"+name+"-", ports)
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Addrs: addrs}
	c, err := cmd(dir, addrs)
	if err == nil {
		if s.Proc, err = StartProc(name, c); err != nil {
			err = fmt.Errorf("cannot start %s (build it with make bench-build): %w", name, err)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.WaitReady(ctx, 15*time.Second, func() error { return ready(addrs) }); err != nil {
		s.Shut(10 * time.Second)
		return nil, err
	}
	return s, nil
}

// Shut stops the server (SIGTERM, SIGKILL after grace), removes its data
// directory, and returns an error unless it exited 0.
func (s *Server) Shut(grace time.Duration) error {
	err := s.Stop(grace)
	os.RemoveAll(s.Dir)
	return err
}

// AnkusaCmd writes config to dir/ankusa.yaml and returns `ankusa serve`
// of the binary in bin on it.
func AnkusaCmd(bin, dir, config string) (*exec.Cmd, error) {
	path := filepath.Join(dir, "ankusa.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the appliance's config: %w", err)
	}
	return exec.Command(filepath.Join(bin, "ankusa"), "serve", "-config", path), nil
}
