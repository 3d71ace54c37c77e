package edge_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/envelope"
)

// headerShape is a request's header lines (after the request line, up to
// the empty line), its body as framed, and the fields the envelope must
// hold.
type headerShape struct {
	name  string
	lines string
	body  string
	want  []envelope.Header
}

func hdrs(kv ...string) []envelope.Header {
	var out []envelope.Header
	for i := 0; i < len(kv); i += 2 {
		out = append(out, envelope.Header{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

var longValue = strings.Repeat("v", 3000)

// headerShapes are unusual but lawful header blocks.
var headerShapes = []headerShape{
	{"case as sent", "host: h\r\nx-GitHub-EVENT: push\r\ncontent-length: 2\r\n", "ok",
		hdrs("host", "h", "x-GitHub-EVENT", "push", "content-length", "2")},
	{"order and duplicates", "Host: h\r\nX-B: 1\r\nX-A: 2\r\nX-B: 3\r\nx-b: 4\r\nContent-Length: 2\r\n", "ok",
		hdrs("Host", "h", "X-B", "1", "X-A", "2", "X-B", "3", "x-b", "4", "Content-Length", "2")},
	{"empty values", "Host: h\r\nX-Empty:\r\nX-Blank:   \r\nContent-Length: 2\r\n", "ok",
		hdrs("Host", "h", "X-Empty", "", "X-Blank", "", "Content-Length", "2")},
	{"long value", "Host: h\r\nX-Long: " + longValue + "\r\nContent-Length: 2\r\n", "ok",
		hdrs("Host", "h", "X-Long", longValue, "Content-Length", "2")},
	{"tabs and spaces in values", "Host: h\r\nX-Tab:\tlead\t\tinner \t\r\nX-Ows:   v  w  \r\nX-Tight:v\r\nContent-Length: 2\r\n", "ok",
		hdrs("Host", "h", "X-Tab", "lead\t\tinner", "X-Ows", "v  w", "X-Tight", "v", "Content-Length", "2")},
	{"obs-text", "Host: h\r\nX-Bytes: caf\xe9 \x80\xff\r\nContent-Length: 2\r\n", "ok",
		hdrs("Host", "h", "X-Bytes", "caf\xe9 \x80\xff", "Content-Length", "2")},
	{"content-length with transfer-encoding", "Host: h\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n", "2\r\nok\r\n0\r\n\r\n",
		hdrs("Host", "h", "Content-Length", "99", "Transfer-Encoding", "chunked")},
}

// TestHeaderFidelity: the envelope holds the header fields as they
// arrived: names in the case sent, values without the whitespace around
// them, in order, repeats kept; neither a field fasthttp drops
// (Content-Length beside Transfer-Encoding) is lost nor one it adds
// (Connection: close) stored.
func TestHeaderFidelity(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for i, tc := range headerShapes {
		r := roundTrip(t, n.addr, exchange{req: []byte("POST /webhooks/demo HTTP/1.1\r\n" + tc.lines + "\r\n" + tc.body)})
		if r.status != 201 {
			t.Fatalf("%s: %s", tc.name, r)
		}
		got := n.stored(t)
		if len(got) != i+1 {
			t.Fatalf("%s: %d hooks stored, want %d", tc.name, len(got), i+1)
		}
		e := got[i]
		if !slices.Equal(e.Headers, tc.want) || string(e.Body) != "ok" {
			t.Errorf("%s: stored headers\n%q\nwant\n%q (body %q)", tc.name, e.Headers, tc.want, e.Body)
		}
	}
}

// TestObsFoldRefused: a header folded onto a second line (obs-fold,
// RFC 9112 §5.2) is refused 400 invalid_header and nothing is stored,
// whether the fold starts with a space or a tab.
func TestObsFoldRefused(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	for _, fold := range []string{" ", "\t", "  \t"} {
		req := "POST /webhooks/demo HTTP/1.1\r\nHost: h\r\nX-Folded: one\r\n" + fold + "two\r\nContent-Length: 2\r\n\r\nok"
		r := roundTrip(t, n.addr, exchange{req: []byte(req)})
		wantAnswer(t, "obs-fold "+strings.ReplaceAll(fold, "\t", `\t`), r, 400, "invalid_header")
	}
	if got := len(n.stored(t)); got != 0 {
		t.Errorf("%d folded hooks stored", got)
	}
}

// TestRemoteAddrStored: the envelope records the sender's address, the
// peer's without the PROXY protocol.
func TestRemoteAddrStored(t *testing.T) {
	n := startNode(t, loadConfig(t, pathConfig))
	c := dialRaw(t, n.addr)
	if _, err := c.conn.Write(post("/webhooks/demo", "hi")); err != nil {
		t.Fatal(err)
	}
	wantAnswer(t, "hook", c.read(t), 201, "")
	got := n.stored(t)
	if len(got) != 1 || got[0].RemoteAddr != c.conn.LocalAddr().String() {
		t.Fatalf("stored %d hooks, remote address %q, want %s", len(got), got[0].RemoteAddr, c.conn.LocalAddr())
	}
}
