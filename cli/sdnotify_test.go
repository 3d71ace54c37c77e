package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeManager is the service manager's end of $NOTIFY_SOCKET: a unix
// datagram socket the test reads notifications from.
type fakeManager struct {
	t    *testing.T
	conn *net.UnixConn
}

func listenManager(t *testing.T, addr string) *fakeManager {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatalf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &fakeManager{t: t, conn: c}
}

// next reads one datagram and returns its KEY=value lines.
func (m *fakeManager) next() map[string]string {
	m.t.Helper()
	buf := make([]byte, 4096)
	_ = m.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	k, err := m.conn.Read(buf)
	if err != nil {
		m.t.Fatalf("no notification: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(buf[:k]), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			m.t.Fatalf("notification line %q is not KEY=value (datagram %q)", line, buf[:k])
		}
		got[key] = value
	}
	return got
}

func TestNotifierSends(t *testing.T) {
	for name, addr := range map[string]string{
		"path":     filepath.Join(t.TempDir(), "notify"),
		"abstract": fmt.Sprintf("@ankusa-notify-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
	} {
		t.Run(name, func(t *testing.T) {
			m := listenManager(t, addr)
			core, logs := observer.New(zapcore.DebugLevel)
			n := newNotifier(addr, zap.New(core))

			n.status("starting: recovering")
			if got := m.next(); len(got) != 1 || got["STATUS"] != "starting: recovering" {
				t.Errorf("status sent %v, want only STATUS=starting: recovering", got)
			}
			n.ready("serving on 127.0.0.1:1\nINJECTED=1")
			got := m.next()
			want := map[string]string{"READY": "1", "MAINPID": fmt.Sprint(os.Getpid()), "STATUS": "serving on 127.0.0.1:1 INJECTED=1"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ready sent %v, want %v", got, want)
			}
			n.stopping("draining after terminated")
			if got := m.next(); got["STOPPING"] != "1" || got["STATUS"] != "draining after terminated" || len(got) != 2 {
				t.Errorf("stopping sent %v, want STOPPING=1 and its STATUS", got)
			}
			if logs.Len() != 0 {
				t.Errorf("sends that reached the manager logged %v", logs.All())
			}
		})
	}
}

// Without a manager listening, the sends fail, and only the first is
// logged; nothing panics or blocks.
func TestNotifierFailureLoggedOnce(t *testing.T) {
	for name, addr := range map[string]string{
		"missing path": filepath.Join(t.TempDir(), "nobody"),
		"relative":     "notify.sock",
	} {
		t.Run(name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			n := newNotifier(addr, zap.New(core))
			n.status("starting")
			n.ready("serving")
			n.stopping("draining")
			if logs.Len() != 1 {
				t.Fatalf("three failed sends logged %d lines, want 1: %v", logs.Len(), logs.All())
			}
			e := logs.All()[0]
			if e.Level != zapcore.WarnLevel || e.ContextMap()["notify_socket"] != addr || e.ContextMap()["error"] == nil {
				t.Errorf("the failure's line is %v %v, want a warning naming the socket and the error", e.Level, e.ContextMap())
			}
		})
	}
}

// Unset, $NOTIFY_SOCKET sends nothing and logs nothing; read, it is taken
// out of the environment.
func TestNotifierFromEnv(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	t.Setenv(notifySocket, "")
	n := newNotifierFromEnv(zap.New(core))
	n.ready("serving")
	n.stopping("draining")
	if n.addr != "" || logs.Len() != 0 {
		t.Errorf("without NOTIFY_SOCKET: addr %q, %d log lines; want none", n.addr, logs.Len())
	}

	addr := filepath.Join(t.TempDir(), "notify")
	m := listenManager(t, addr)
	t.Setenv(notifySocket, addr)
	n = newNotifierFromEnv(zap.New(core))
	if v, ok := os.LookupEnv(notifySocket); ok {
		t.Errorf("NOTIFY_SOCKET=%q is still set after it was read", v)
	}
	n.ready("serving")
	if got := m.next(); got["READY"] != "1" {
		t.Errorf("the socket from the environment got %v, want READY=1", got)
	}
}
