package admin

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The canned 503 says its length right.
func TestOverloadedAnswer(t *testing.T) {
	head, body, _ := strings.Cut(overloadedAnswer, "\r\n\r\n")
	if !strings.Contains(head+"\r\n", "Content-Length: "+strconv.Itoa(len(body))+"\r\n") {
		t.Fatalf("Content-Length does not match the body's %d bytes:\n%s", len(body), overloadedAnswer)
	}
	if errCode(body) != codeOverloaded {
		t.Fatalf("body %q", body)
	}
}

// Past admin.max_connections a connection is answered 503 overloaded and
// closed at once (it holds nothing); one closing frees a place; a silent
// connection is closed after read_header_timeout.
func TestConnectionCap(t *testing.T) {
	const max = 4
	s := startServer(t, Options{Hooks: &fakeFetcher{}, Listener: ListenerOptions{
		MaxConnections: max, ReadHeaderTimeout: 500 * time.Millisecond, ReadTimeout: time.Second}})
	addr := s.Addr().String()
	var idle []net.Conn
	for range max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Wait until the server has accepted the idle ones.
	for deadline := time.Now().Add(2 * time.Second); s.ln.open.Load() < max; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", s.ln.open.Load(), max)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The one past the cap: 503 at once, then the server closes it.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the connection past the cap: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || errCode(string(b)) != "overloaded" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("past the cap: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("past the cap: the connection stays open (%v)", err)
	}
	c.Close()
	if n := s.ln.open.Load(); n != max {
		t.Fatalf("%d connections counted after the refusal, want %d", n, max)
	}
	// Closing one frees a place.
	idle[0].Close()
	deadline := time.Now().Add(2 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if a := rawDo(t, addr, "GET", "/healthz", "", ""); a.code == 200 {
			break
		}
	}
	if time.Now().After(deadline) {
		t.Fatal("no place after an idle connection closed")
	}
	// The silent ones are closed by the server after read_header_timeout.
	for _, c := range idle[1:] {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("a silent connection: %v after %s, want EOF", err, time.Since(start))
		}
		c.Close()
	}
	for deadline := time.Now().Add(2 * time.Second); s.ln.open.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still counted", s.ln.open.Load())
		}
	}
}

// A keep-alive connection idle for admin.idle_timeout is closed.
func TestIdleTimeout(t *testing.T) {
	s := startServer(t, Options{Hooks: &fakeFetcher{}, Listener: ListenerOptions{IdleTimeout: 300 * time.Millisecond}})
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle keep-alive connection: %v, want EOF", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("closed after %s, want about idle_timeout (300ms)", d)
	}
}
