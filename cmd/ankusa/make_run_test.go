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
// hook and gets a 201; the hook is then seen delivered (a line of the file
// the banner names, and the attempts API) and archived (a segment holding
// it in the directory the banner names); SIGTERM stops it with exit 0,
// and the hook is in ./data/wal.
func TestMakeRun(t *testing.T) {
	waitPortsFree(t, config.DefaultListen, config.DefaultAdminListen)
	dir := t.TempDir()
	p := startProc(t, dir, "serve")

	var curl, fetch, create string
	deadline := time.Now().Add(15 * time.Second)
	for create == "" {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			line = strings.TrimSpace(line)
			switch {
			case !strings.HasPrefix(line, "curl "):
			case strings.Contains(line, "/hooks/<id>"):
				fetch = line
			case strings.Contains(line, "/sources"):
				create = line
			case curl == "":
				curl = line
			}
		}
		if create != "" {
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
	acked := time.Now()
	status := regexp.MustCompile(`(?m)^HTTP/1\.1 (\d{3})`).FindStringSubmatch(out.String())
	if status == nil || status[1] != "201" {
		t.Fatalf("the printed curl line got:\n%s\nwant HTTP/1.1 201", out.String())
	}
	id := regexp.MustCompile(`\{"id":"(evt_[0-9A-Z]{26})"\}`).FindStringSubmatch(out.String())
	if id == nil {
		t.Fatalf("the 201 carries no event id:\n%s", out.String())
	}
	seeTheFlow(t, dir, p.stderr.String(), id[1], acked)

	// The admin lines: the hook read back, a source created that serves
	// at once.
	if got := runLine(t, dir, strings.Replace(fetch, "<id>", id[1], 1)); !strings.Contains(got, `"id":"`+id[1]+`"`) || !strings.Contains(got, `"source_id":"demo"`) {
		t.Fatalf("the printed fetch line got:\n%s", got)
	}
	if got := runLine(t, dir, create); !strings.Contains(got, `"name":"mine"`) || !strings.Contains(got, `"url_path":"/webhooks/mine"`) {
		t.Fatalf("the printed create line got:\n%s", got)
	}
	if got := runLine(t, dir, strings.Replace(curl, "/webhooks/demo", "/webhooks/mine", 1)); !strings.Contains(got, "HTTP/1.1 201") {
		t.Fatalf("a hook to the created source got:\n%s", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data", "admin-token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("data/admin-token: %v, mode %v; want mode 0600", err, fi.Mode())
	}

	p.stop()
	walDir := filepath.Join(dir, "data", "wal")
	if fi, err := os.Stat(walDir); err != nil || !fi.IsDir() {
		t.Fatalf("./data/wal in the working directory: %v", err)
	}
	c := readWAL(t, walDir)
	if len(c.hooks) != 2 {
		t.Fatalf("the WAL holds %d hooks, want the two curl sent", len(c.hooks))
	}
	h := c.hooks[0].env
	if h.ID.String() != id[1] || h.TenantID != config.DefaultTenant || h.SourceID != "demo" || string(h.Body) != `{"hello":"world"}` {
		t.Fatalf("stored %s tenant %q source %q body %q; want %s, default, demo, {\"hello\":\"world\"}", h.ID, h.TenantID, h.SourceID, h.Body, id[1])
	}
}

// runLine runs a printed shell line in dir and returns its stdout.
func runLine(t *testing.T, dir, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v\n%s", line, err, out)
	}
	return string(out)
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
