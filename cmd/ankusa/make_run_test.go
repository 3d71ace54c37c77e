package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

// TestMakeRun is `make run` on a fresh machine: `ankusa serve` with no
// config in an empty directory prints a curl line; that exact line sends a
// hook and gets a 201; SIGTERM stops it with exit 0, and the hook is in
// ./data/wal.
func TestMakeRun(t *testing.T) {
	waitPortsFree(t, config.DefaultListen, config.DefaultAdminListen)
	dir := t.TempDir()
	p := startProc(t, dir, "serve")

	var curl string
	deadline := time.Now().Add(15 * time.Second)
	for curl == "" {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "curl ") {
				curl = strings.TrimSpace(line)
			}
		}
		if curl != "" {
			break
		}
		if p.exited() {
			t.Fatalf("ankusa serve exited with %d before printing a curl line:\n%s", p.state.ExitCode(), p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ankusa serve printed no curl line within 15s:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(curl, "http://"+config.DefaultListen+"/webhooks/demo") {
		t.Errorf("the curl line %q should post to the demo source on %s", curl, config.DefaultListen)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", curl)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sh -c %q: %v\nstdout:\n%s\nstderr:\n%s\nserver:\n%s", curl, err, out.String(), errb.String(), p.stderr)
	}
	status := regexp.MustCompile(`(?m)^HTTP/1\.1 (\d{3})`).FindStringSubmatch(out.String())
	if status == nil || status[1] != "201" {
		t.Fatalf("the printed curl line got:\n%s\nwant HTTP/1.1 201", out.String())
	}
	id := regexp.MustCompile(`\{"id":"(evt_[0-9A-Z]{26})"\}`).FindStringSubmatch(out.String())
	if id == nil {
		t.Fatalf("the 201 carries no event id:\n%s", out.String())
	}

	p.stop()
	walDir := filepath.Join(dir, "data", "wal")
	if fi, err := os.Stat(walDir); err != nil || !fi.IsDir() {
		t.Fatalf("./data/wal in the working directory: %v", err)
	}
	c := readWAL(t, walDir)
	if len(c.hooks) != 1 {
		t.Fatalf("the WAL holds %d hooks, want the one curl sent", len(c.hooks))
	}
	h := c.hooks[0].env
	if h.ID.String() != id[1] || h.TenantID != config.DefaultTenant || h.SourceID != "demo" || string(h.Body) != `{"hello":"world"}` {
		t.Fatalf("stored %s tenant %q source %q body %q; want %s, default, demo, {\"hello\":\"world\"}", h.ID, h.TenantID, h.SourceID, h.Body, id[1])
	}
}

// waitPortsFree waits a little for the embedded default's ports (another
// test binary may be finishing with them) and fails, saying why, if they
// stay busy.
func waitPortsFree(t *testing.T, addrs ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var busy []string
		for _, a := range addrs {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				busy = append(busy, a)
				continue
			}
			ln.Close()
		}
		if len(busy) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the embedded default config listens on %s and admin on %s, but %v stayed busy for 20s: stop whatever listens there (ss -ltnp) and run the test again",
				config.DefaultListen, config.DefaultAdminListen, busy)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
