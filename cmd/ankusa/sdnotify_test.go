package main

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifications is a fake service manager's $NOTIFY_SOCKET: the unix
// datagram socket a Type=notify unit's process reports to.
type notifications struct {
	t    *testing.T
	conn *net.UnixConn
}

func listenNotifications(t *testing.T) (*notifications, string) {
	t.Helper()
	addr := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &notifications{t: t, conn: c}, addr
}

// await reads notifications until one carries key=1 and returns that
// one's assignments; seen collects every earlier one's.
func (n *notifications) await(p *proc, key string, seen *[]string) map[string]string {
	n.t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_ = n.conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		k, err := n.conn.Read(buf)
		if err != nil {
			if p.exited() {
				n.t.Fatalf("%s exited with %d before it sent %s=1 (got %q):\n%s", p.name, p.state.ExitCode(), key, *seen, p.stderr)
			}
			continue
		}
		msg := string(buf[:k])
		*seen = append(*seen, msg)
		got := map[string]string{}
		for _, line := range strings.Split(msg, "\n") {
			k, v, _ := strings.Cut(line, "=")
			got[k] = v
		}
		if got[key] == "1" {
			return got
		}
	}
	n.t.Fatalf("%s sent no %s=1 within 30s (got %q):\n%s", p.name, key, *seen, p.stderr)
	return nil
}

// Under a Type=notify unit: READY=1 comes once both listeners answer (a
// hook is 201 and /readyz 200 at the first try, with no polling before),
// STOPPING=1 when SIGTERM starts the drain, and the drain exits 0.
func TestServeNotifiesServiceManager(t *testing.T) {
	n := newNode(t)
	notes, addr := listenNotifications(t)
	t.Setenv("NOTIFY_SOCKET", addr)
	p := startProc(t, n.dir, "serve", "-config", n.config)

	var seen []string
	ready := notes.await(p, "READY", &seen)
	if pid := strconv.Itoa(p.cmd.Process.Pid); ready["MAINPID"] != pid {
		t.Errorf("READY=1 came with MAINPID=%q, want the process's %s", ready["MAINPID"], pid)
	}
	if !strings.Contains(ready["STATUS"], n.listen) {
		t.Errorf("READY=1's STATUS=%q does not name the public listener %s", ready["STATUS"], n.listen)
	}
	a := postOne(t, n.listen, "t0", "open", []byte("the first hook after READY=1"))
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + n.admin + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz right after READY=1: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz right after READY=1: %d %s, want 200", resp.StatusCode, body)
	}

	p.signal(syscall.SIGTERM)
	stopping := notes.await(p, "STOPPING", &seen)
	if !strings.Contains(stopping["STATUS"], "draining") {
		t.Errorf("STOPPING=1's STATUS=%q does not say the node drains", stopping["STATUS"])
	}
	if code := p.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, p.stderr)
	}
	checkAcked(t, []ack{a}, readWAL(t, n.walDir()).hooks)
	if strings.Contains(p.stderr.String(), "cannot notify") {
		t.Errorf("the node logged a failed notification:\n%s", p.stderr)
	}
}
