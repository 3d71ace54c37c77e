package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fidelityShape is a header block written byte for byte, its body as
// framed, and the fields (name, value) the node must store.
type fidelityShape struct {
	name  string
	lines string
	body  string
	want  [][2]string
}

// fidelityShapes are unusual but lawful header blocks (Host is added).
func fidelityShapes() []fidelityShape {
	long := strings.Repeat("L", 8000)
	return []fidelityShape{
		{"case as sent", "x-GitHub-EVENT: push\r\ncontent-TYPE: application/json\r\ncontent-length: 2\r\n", "{}",
			[][2]string{{"x-GitHub-EVENT", "push"}, {"content-TYPE", "application/json"}, {"content-length", "2"}}},
		{"order and duplicates", "X-B: 1\r\nX-A: 2\r\nX-B: 3\r\nx-b: 4\r\nX-B: 3\r\nContent-Length: 2\r\n", "{}",
			[][2]string{{"X-B", "1"}, {"X-A", "2"}, {"X-B", "3"}, {"x-b", "4"}, {"X-B", "3"}, {"Content-Length", "2"}}},
		{"empty values", "X-Empty:\r\nX-Blank: \t \r\nContent-Length: 2\r\n", "{}",
			[][2]string{{"X-Empty", ""}, {"X-Blank", ""}, {"Content-Length", "2"}}},
		{"long value", "X-Long: " + long + "\r\nContent-Length: 2\r\n", "{}",
			[][2]string{{"X-Long", long}, {"Content-Length", "2"}}},
		{"tabs and spaces in values", "X-Tab:\tlead\t\tinner \t\r\nX-Ows:   v  w  \r\nX-Tight:v\r\nContent-Length: 2\r\n", "{}",
			[][2]string{{"X-Tab", "lead\t\tinner"}, {"X-Ows", "v  w"}, {"X-Tight", "v"}, {"Content-Length", "2"}}},
		{"content-length with transfer-encoding", "Content-Length: 99\r\nTransfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n",
			[][2]string{{"Content-Length", "99"}, {"Transfer-Encoding", "chunked"}}},
		{"signature-like fields", "Stripe-Signature: t=1,v1=abc\r\nstripe-signature: t=2,v1=def\r\nContent-Length: 2\r\n", "{}",
			[][2]string{{"Stripe-Signature", "t=1,v1=abc"}, {"stripe-signature", "t=2,v1=def"}, {"Content-Length", "2"}}},
	}
}

// envelopeSink is a receiver for sinks of format envelope: it keeps each
// delivery's body by event id.
type envelopeSink struct {
	addr string
	mu   sync.Mutex
	got  map[string][]byte
}

func newEnvelopeSink(t *testing.T) *envelopeSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &envelopeSink{addr: ln.Addr().String(), got: map[string][]byte{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got[r.Header.Get("x-ankusa-event-id")] = b
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *envelopeSink) wait(t *testing.T, id string, within time.Duration) []byte {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		b, ok := s.got[id]
		s.mu.Unlock()
		if ok {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("hook %s not delivered within %v", id, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rawPost writes req on a fresh connection and returns the answer's
// status and body.
func rawPost(t *testing.T, addr, req string) (int, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// groupedHeaders is the JSON form's view of fields: names in order of
// first occurrence, each with its values in order.
func groupedHeaders(fields [][2]string) (names []string, values map[string][]string) {
	values = map[string][]string{}
	for _, f := range fields {
		if _, ok := values[f[0]]; !ok {
			names = append(names, f[0])
		}
		values[f[0]] = append(values[f[0]], f[1])
	}
	return names, values
}

// TestHeaderFidelityEndToEnd: hooks written byte for byte with unusual
// but lawful header blocks are stored as sent: the admin fetch shows
// each field (names in the case sent, order, repeats, empty and long
// values, tabs, a Content-Length beside Transfer-Encoding, no field the
// server adds) and the sender's address, and an HTTP sink of format
// envelope receives the same JSON. A folded header (obs-fold) is refused
// 400 invalid_header and stored nowhere.
func TestHeaderFidelityEndToEnd(t *testing.T) {
	sink := newEnvelopeSink(t)
	n := newDispatchConfigNode(t, "fidelity-test", fmt.Sprintf(
		`      - {id: e, type: http, url: "http://%s/e", secret: "`+secretA+`", allow_private: true, format: envelope}
`, sink.addr))
	p := n.serve(t)
	defer p.stop()
	c := newAdminClient(t, n.admin)
	for _, tc := range fidelityShapes() {
		host := [2]string{"Host", n.listen}
		req := "POST /webhooks/acme/open HTTP/1.1\r\nHost: " + n.listen + "\r\n" + tc.lines + "\r\n" + tc.body
		status, answer := rawPost(t, n.listen, req)
		var v struct{ ID string }
		if status != http.StatusCreated || json.Unmarshal(answer, &v) != nil {
			t.Fatalf("%s: %d %s, want 201", tc.name, status, answer)
		}
		fetched := c.get(hookPath("acme", v.ID), opsToken)
		if fetched.status != http.StatusOK {
			t.Fatalf("%s: fetch %d %s", tc.name, fetched.status, fetched.body)
		}
		text := bytes.TrimSuffix(fetched.body, []byte("\n"))
		checkFidelity(t, tc.name+" (admin fetch)", text, append([][2]string{host}, tc.want...))
		delivered := sink.wait(t, v.ID, 15*time.Second)
		if !bytes.Equal(delivered, text) {
			t.Errorf("%s: the sink received\n%s\nthe admin fetch shows\n%s", tc.name, delivered, text)
		}
	}
	for _, fold := range []string{" ", "\t"} {
		req := "POST /webhooks/acme/open HTTP/1.1\r\nHost: " + n.listen + "\r\nX-Folded: one\r\n" + fold + "two\r\nContent-Length: 2\r\n\r\n{}"
		if status, answer := rawPost(t, n.listen, req); status != http.StatusBadRequest || !bytes.Contains(answer, []byte(`"invalid_header"`)) {
			t.Errorf("obs-fold %q: %d %s, want 400 invalid_header", fold, status, answer)
		}
	}
}

// checkFidelity checks a hook's JSON text: its headers object holds the
// fields sent, grouped by name in order of first occurrence, and its
// remote_addr is the test's loopback peer.
func checkFidelity(t *testing.T, name string, text []byte, fields [][2]string) {
	t.Helper()
	var h struct {
		Headers    json.RawMessage `json:"headers"`
		RemoteAddr string          `json:"remote_addr"`
	}
	if err := json.Unmarshal(text, &h); err != nil {
		t.Fatalf("%s: %v: %s", name, err, text)
	}
	wantNames, wantValues := groupedHeaders(fields)
	names, err := topLevelKeys(h.Headers)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var values map[string][]string
	if err := json.Unmarshal(h.Headers, &values); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !slices.Equal(names, wantNames) || fmt.Sprint(values) != fmt.Sprint(wantValues) {
		t.Errorf("%s: headers %s\nwant names %q values %q", name, h.Headers, wantNames, wantValues)
	}
	if !strings.HasPrefix(h.RemoteAddr, "127.0.0.1:") {
		t.Errorf("%s: remote_addr %q, want the loopback peer", name, h.RemoteAddr)
	}
}
