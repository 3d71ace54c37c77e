package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/internal/child"
	"github.com/ankusa/ankusa/internal/s3test"
)

// service is a private server the soak owns: a command it starts in a
// process group of its own (so kill -9 reaches the whole tree, as the
// RabbitMQ wrapper script starts beam.smp as a child) and a readiness
// check. Its methods are safe for concurrent use.
type service struct {
	name  string
	cmd   func() *exec.Cmd // a fresh command for each start
	ready func() error
	boot  time.Duration // the longest the server may take to answer ready

	mu     sync.Mutex
	run    *exec.Cmd
	out    *child.Buffer
	exited chan struct{}
	boots  []time.Duration // time to ready of each start
}

// start starts the server and waits until ready answers; it does nothing
// if the server runs. It holds the service's lock meanwhile: a kill
// waits for the boot to end.
func (s *service) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil {
		return nil
	}
	cmd := s.cmd()
	s.out = &child.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", s.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.run, s.exited = cmd, exited
	for {
		err := s.ready()
		if err == nil {
			s.boots = append(s.boots, time.Since(began))
			return nil
		}
		select {
		case <-exited:
			s.run = nil
			return fmt.Errorf("%s exited before it was ready: %v\n%s", s.name, cmd.ProcessState, tail(s.out.String()))
		case <-ctx.Done():
			s.killLocked()
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Since(began) > s.boot {
			s.killLocked()
			return fmt.Errorf("%s not ready after %v: %v\n%s", s.name, s.boot, err, tail(s.out.String()))
		}
	}
}

// kill kills the server's process group with SIGKILL and waits for it.
func (s *service) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *service) killLocked() {
	if s.run == nil {
		return
	}
	_ = syscall.Kill(-s.run.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.run = nil
}

// bootTimes is the time to ready of each start so far.
func (s *service) bootTimes() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.boots...)
}

func tail(s string) string {
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// dialable answers nil once something accepts TCP connections on addr.
func dialable(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
}

// newRedis is a private redis-server on a free port, keeping nothing on
// disk: a restart starts empty, as a lost Redis would.
func newRedis(dir string) (*service, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server is not installed (scripts/ensure-redis.sh installs it): %w", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	s := &service{name: "redis-server", boot: 10 * time.Second, ready: dialable(addr), cmd: func() *exec.Cmd {
		return exec.Command(bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--dir", dir, "--logfile", "")
	}}
	return s, "redis://" + addr + "/0", nil
}

// rabbitBin is where the Debian package keeps the server's own scripts
// (the /usr/sbin wrappers switch user and then fail on the Erlang cookie).
const rabbitBin = "/usr/lib/rabbitmq/bin"

// newRabbit is a private RabbitMQ node: its own node name, AMQP and
// distribution ports, HOME (the Erlang cookie), mnesia and logs under dir;
// the shared epmd registers it beside the machine's broker. Its data
// survives a kill -9, so durable exchanges, queues and confirmed
// persistent messages outlive a restart.
func newRabbit(dir string) (*service, string, error) {
	server := filepath.Join(rabbitBin, "rabbitmq-server")
	if _, err := os.Stat(server); err != nil {
		return nil, "", fmt.Errorf("RabbitMQ is not installed (scripts/ensure-rabbitmq.sh installs it): %w", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	dist, err := child.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	_, distPort, _ := net.SplitHostPort(dist)
	if err := os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte("listeners.tcp.1 = "+addr+"\n"), 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o600); err != nil {
		return nil, "", err
	}
	env := append(os.Environ(),
		"HOME="+dir,
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		fmt.Sprintf("RABBITMQ_NODENAME=soak-%d@localhost", os.Getpid()),
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+port,
		"RABBITMQ_DIST_PORT="+distPort,
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"))
	s := &service{name: "rabbitmq", boot: 90 * time.Second, ready: dialable(addr), cmd: func() *exec.Cmd {
		c := exec.Command(server)
		c.Env = env
		return c
	}}
	return s, "amqp://guest:guest@" + addr + "/", nil
}

// s3Region is the region the private versitygw answers for.
const s3Region = "us-east-1"

// s3Server is a private versitygw (posix backend) as internal/s3test runs
// one, for a program rather than a test: the soak needs errors, not
// t.Fatal, and a bucket the node archives to.
type s3Server struct {
	*service
	endpoint, access, secret, bucket string
}

func newS3(bin, dir string) (*s3Server, error) {
	exe, err := versitygw(bin)
	if err != nil {
		return nil, err
	}
	addr, err := child.FreeAddr()
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	s := &s3Server{endpoint: addr, access: "ankusa-soak", secret: hex.EncodeToString(secret), bucket: "soak"}
	root := filepath.Join(dir, "root")
	args := []string{"--port", addr, "--region", s3Region, "--health", "/health", "--quiet", "posix"}
	if _, err := unix.Getxattr(dir, "user.test", nil); errors.Is(err, unix.ENOTSUP) {
		args = append(args, "--sidecar", filepath.Join(dir, "meta"))
	}
	for _, d := range []string{root, filepath.Join(dir, "meta")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	args = append(args, root)
	health := &http.Client{Timeout: time.Second}
	s.service = &service{name: "versitygw", boot: 20 * time.Second, cmd: func() *exec.Cmd {
		c := exec.Command(exe, args...)
		c.Env = append(s3test.ServerEnv(), "ROOT_ACCESS_KEY="+s.access, "ROOT_SECRET_KEY="+s.secret)
		return c
	}, ready: func() error {
		resp, err := health.Get("http://" + addr + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /health: %s", resp.Status)
		}
		return nil
	}}
	return s, nil
}

// versitygw is bin/versitygw (make services builds it) or one in PATH.
func versitygw(bin string) (string, error) {
	if p := os.Getenv("ANKUSA_VERSITYGW"); p != "" {
		return p, nil
	}
	local := filepath.Join(bin, "versitygw")
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("versitygw is neither at %s nor in PATH (make services builds it)", local)
}

// client is a minio-go client of the server (path-style, plain HTTP).
func (s *s3Server) client() (*minio.Client, error) {
	return minio.New(s.endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.access, s.secret, ""),
		Region:       s3Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
	})
}

func (s *s3Server) makeBucket(ctx context.Context) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s3Region}); err != nil {
		return fmt.Errorf("cannot create bucket %q on %s: %w", s.bucket, s.endpoint, err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of size bytes on dir, so that the disk-full
// fault fills the node's disk and nothing else.
func mountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("cannot mount a tmpfs on %s (the soak needs root): %w", dir, err)
	}
	return nil
}

func unmount(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("cannot unmount the tmpfs on %s: %w", dir, err)
	}
	return nil
}

// current is the running command and the channel its exit closes (nil,
// nil when none runs).
func (s *service) current() (*exec.Cmd, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run, s.exited
}

// forget drops a command that has exited, so that start starts another.
func (s *service) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return
	}
	select {
	case <-s.exited:
		s.run = nil
	default:
	}
}

// output is what the server printed since it last started.
func (s *service) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}
