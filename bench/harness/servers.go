package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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

// The servers, in the order each round runs them.
const (
	ceiling = "ceiling"
	gcref   = "gcref"
	ankusa  = "ankusa"
)

var serverNames = []string{ceiling, gcref, ankusa}

// loadPath is the catch URL's path: the appliance's demo source; the other
// two answer any path.
const loadPath = "/webhooks/demo"

// server is one started server process. Its data directory is removed by
// stop.
type server struct {
	name    string
	cmd     *exec.Cmd
	dir     string
	url     string                   // what loadgen posts to
	statsFn func() (counters, error) // nil for the ceiling
	stderr  child.Buffer             // its stdout and stderr
	exited  chan struct{}
	waitErr error
}

// appConfig is the appliance's config: the path resolver, one demo source
// without verification, the WAL on disk, and everything else at its default
// (the durable settings).
const appConfig = `node: {name: bench, data_dir: %s}
listen: %s
admin: {listen: %s}
log: {level: warn}
route_resolver: {type: path, prefix: [webhooks]}
wal: {type: disk}
source_store: {type: static}
sources:
  demo: {verify: {type: none}}
`

// startServer starts the named server on free loopback ports with a fresh
// data directory under tmp and waits until it answers.
func startServer(ctx context.Context, o *options, name string) (*server, error) {
	dir, err := os.MkdirTemp(o.tmp, "ankusa-bench-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("cannot create a data directory (set -tmp): %w", err)
	}
	addr, err := child.FreeAddr()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &server{name: name, dir: dir, url: "http://" + addr + loadPath, exited: make(chan struct{})}
	var ready func() error
	switch name {
	case ceiling:
		s.cmd = exec.Command(filepath.Join(o.bin, "ceiling"), "-listen", addr)
		ready = func() error { _, err := getJSON("http://" + addr + "/stats"); return err }
	case gcref:
		s.cmd = exec.Command(filepath.Join(o.bin, "gcref"), "-listen", addr, "-dir", dir)
		s.statsFn = func() (counters, error) {
			m, err := getJSON("http://" + addr + "/stats")
			return counters{records: m["records"], fsyncs: m["fsyncs"], fsyncSeconds: float64(m["fsync_ns"]) / 1e9}, err
		}
		ready = func() error { _, err := s.statsFn(); return err }
	case ankusa:
		admin, err := child.FreeAddr()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cfg := filepath.Join(dir, "ankusa.yaml")
		text := fmt.Sprintf(appConfig, filepath.Join(dir, "data"), addr, admin)
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("cannot write the appliance's config: %w", err)
		}
		s.cmd = exec.Command(filepath.Join(o.bin, "ankusa"), "serve", "-config", cfg)
		s.statsFn = func() (counters, error) { return walCounters("http://" + admin + "/metrics") }
		ready = func() error { return getOK("http://" + admin + "/readyz") }
	default:
		panic("BUG: unknown server " + name)
	}
	s.cmd.Stdout = &s.stderr
	s.cmd.Stderr = &s.stderr
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cannot start %s (build it with make bench-build): %w", name, err)
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx, ready); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(ctx context.Context, ready func() error) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited before it was ready: %v\n%s", s.name, s.waitErr, tail(s.stderr.String()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 15s: %v\n%s", s.name, err, tail(s.stderr.String()))
		}
	}
}

// alive reports whether the process is still running.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, waits for the drain (SIGKILL after 20s), removes the
// data directory, and returns an error if the server did not exit 0.
func (s *server) stop() error {
	if s.alive() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	var err error
	select {
	case <-s.exited:
		if s.waitErr != nil {
			err = fmt.Errorf("%s exited with %v after SIGTERM\n%s", s.name, s.waitErr, tail(s.stderr.String()))
		}
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		err = fmt.Errorf("%s did not stop within 20s of SIGTERM", s.name)
	}
	os.RemoveAll(s.dir)
	return err
}

var client = &http.Client{Timeout: 5 * time.Second}

func getOK(url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// getJSON reads the flat JSON object of counters that ceiling and gcref
// serve on /stats.
func getJSON(url string) (map[string]uint64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var m map[string]uint64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return m, nil
}

// counters are a durable server's commit counters so far.
type counters struct {
	records      uint64
	fsyncs       uint64
	fsyncSeconds float64 // time spent in fdatasync
}

// walCounters reads ankusa_wal_records_total, ankusa_wal_batches_total
// (one fdatasync per batch) and ankusa_wal_fsync_seconds_sum from the
// appliance's /metrics.
func walCounters(url string) (counters, error) {
	var c counters
	resp, err := client.Get(url)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		switch name {
		case "ankusa_wal_records_total":
			c.records = uint64(f)
		case "ankusa_wal_batches_total":
			c.fsyncs = uint64(f)
		case "ankusa_wal_fsync_seconds_sum":
			c.fsyncSeconds = f
		default:
			continue
		}
		if err != nil {
			return c, fmt.Errorf("GET %s: %s: %w", url, name, err)
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("GET %s: %w", url, err)
	}
	if found != 3 {
		return c, errors.New("GET " + url + ": want ankusa_wal_records_total, ankusa_wal_batches_total and ankusa_wal_fsync_seconds_sum")
	}
	return c, nil
}

// tail is the end of a server's output, for error messages.
func tail(s string) string {
	const n = 2000
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
