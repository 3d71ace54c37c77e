package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// proxyFairYAML: the PROXY protocol from 127.0.0.1 only, 1,200
// connections, fewer than the slow senders would take, the per-client
// share left at its default (half: 600).
const proxyFairYAML = `node: {name: proxy-fair, data_dir: %s}
listen: %s
listen_proxy_protocol: {trusted: [127.0.0.1/32]}
admin:
  listen: %s
  tokens:
    - {name: ops, sha256: %s, scopes: ["tenant:*"]}
limits: {max_body_bytes: 64KiB, max_header_bytes: 16KiB, max_connections: 1200, read_timeout: 5s}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000}
wal: {type: disk, max_file_bytes: 4MiB}
log: {level: warn, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
`

func proxyV1(src string, port int) string {
	return fmt.Sprintf("PROXY TCP4 %s 127.0.0.1 %d 443\r\n", src, port)
}

// slowSender holds a connection claiming src: a PROXY header, then a
// request whose header never ends, a field every 500ms; it reconnects
// when the node closes it, until ctx ends.
func slowSender(ctx context.Context, listen, src string, port int) {
	for ctx.Err() == nil {
		conn, err := net.DialTimeout("tcp", listen, 2*time.Second)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go func() { <-ctx.Done(); conn.Close() }()
		_, err = io.WriteString(conn, proxyV1(src, port)+"POST /webhooks/slow/open HTTP/1.1\r\nHost: x\r\n")
		for err == nil && ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			_, err = io.WriteString(conn, "X-Slow: 1\r\n")
		}
		conn.Close()
		time.Sleep(100 * time.Millisecond)
	}
}

// fairClient sends hooks claiming src over keep-alive connections, each
// opened with a PROXY header; a hook whose answer is not 201 is not
// retried (a closed connection is replaced). It returns the 201s.
func fairClient(listen, src string, hooks, workers int) (created int64, ids []string) {
	var ok atomic.Int64
	var mu sync.Mutex
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn net.Conn
			var br *bufio.Reader
			for next.Add(1) <= int64(hooks) {
				if conn == nil {
					c, err := net.DialTimeout("tcp", listen, 5*time.Second)
					if err != nil {
						continue
					}
					conn, br = c, bufio.NewReader(c)
					_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
					if _, err := io.WriteString(conn, proxyV1(src, 40000+w)); err != nil {
						conn.Close()
						conn = nil
						continue
					}
				}
				body := `{"n":1}`
				_, err := fmt.Fprintf(conn, "POST /webhooks/fair/open HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(br, nil)
				}
				if err != nil {
					conn.Close()
					conn = nil
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					ok.Add(1)
					var v struct{ ID string }
					if json.Unmarshal(b, &v) == nil {
						mu.Lock()
						ids = append(ids, v.ID)
						mu.Unlock()
					}
				}
				if resp.Close {
					conn.Close()
					conn = nil
				}
			}
			if conn != nil {
				conn.Close()
			}
		}()
	}
	wg.Wait()
	return ok.Load(), ids
}

// TestProxyProtocolFairShare: behind a PROXY-protocol sender (the test,
// from 127.0.0.1, trusted), 1,500 slow connections claiming one client
// address (more than the node's 1,200) leave a second address at least
// 99% of its 2,000 hooks answered 201, the slow client holding no more
// than its share; a PROXY
// header from an untrusted address (127.0.0.2) is refused, while a plain
// request from it is served with its own address recorded.
func TestProxyProtocolFairShare(t *testing.T) {
	// The test holds 1,500+ connections, and so does the node it starts
	// (which inherits the limit): raise the soft fd limit to the hard one.
	needFDs(t, 4096)
	n := newConfiguredNode(t, func(n *testNode) string {
		return fmt.Sprintf(proxyFairYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken))
	})
	p := n.serve(t)
	defer p.stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range 1500 {
		wg.Add(1)
		go func() { defer wg.Done(); slowSender(ctx, n.listen, "198.51.100.1", 10000+i) }()
	}
	// The slow senders take every slot their share allows, and the rest
	// of them are refused.
	c := newAdminClient(t, n.admin)
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := string(c.get("/metrics", "").body)
		open := metricValue(m, "ankusa_edge_connections_open")
		refused := metricValue(m, `ankusa_edge_connections_refused_by_reason_total{reason="max_connections_per_client"}`)
		if open >= 600 && refused >= 900 {
			t.Logf("slow client: %v connections open, %v refused past its share", open, refused)
			if open > 600+64 { // 600, and refused senders between accept and their PROXY header
				t.Errorf("%v connections open: the slow client holds more than its share of 600", open)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow senders did not fill their share: %v open, %v refused", open, refused)
		}
		time.Sleep(100 * time.Millisecond)
	}
	const hooks = 2000
	start := time.Now()
	created, ids := fairClient(n.listen, "198.51.100.2", hooks, 16)
	elapsed := time.Since(start)
	share := float64(created) / hooks
	t.Logf("second client: %d of %d hooks answered 201 (%.2f%%) in %v, beside 1,500 slow connections",
		created, hooks, 100*share, elapsed.Round(time.Millisecond))
	if share < 0.99 {
		t.Errorf("second client: %d of %d hooks answered 201, want at least 99%%", created, hooks)
	}
	if len(ids) > 0 {
		var h struct {
			RemoteAddr string `json:"remote_addr"`
		}
		a := c.get(hookPath("fair", ids[0]), opsToken)
		if err := json.Unmarshal(a.body, &h); err != nil || !strings.HasPrefix(h.RemoteAddr, "198.51.100.2:") {
			t.Errorf("hook %s: remote_addr %q, want the PROXY header's sender (%v %s)", ids[0], h.RemoteAddr, err, a.body)
		}
	}
	cancel()
	wg.Wait()
	checkUntrusted(t, n, c)
}

// checkUntrusted: from 127.0.0.2 (not trusted) a PROXY header is
// refused, closed unanswered and counted; a plain request is served.
func checkUntrusted(t *testing.T, n *testNode, c *adminClient) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", n.listen)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, proxyV1("203.0.113.9", 1234)+"POST /webhooks/acme/open HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	got, err := io.ReadAll(conn)
	conn.Close()
	if len(got) != 0 || err != nil && !strings.Contains(err.Error(), "reset") {
		t.Errorf("a PROXY header from an untrusted address: got %q, %v; want the connection closed unanswered", got, err)
	}
	metrics := string(c.get("/metrics", "").body)
	if v := metricValue(metrics, `ankusa_edge_proxy_refused_total{reason="untrusted"}`); v != 1 {
		t.Errorf("untrusted PROXY refusals: %v, want 1", v)
	}
	conn, err = d.Dial("tcp", n.listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(conn, "POST /webhooks/acme/open HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("a plain request from an untrusted address: %v %v, want 201", resp, err)
	}
	var v struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&v)
	var h struct {
		RemoteAddr string `json:"remote_addr"`
	}
	a := c.get(hookPath("acme", v.ID), opsToken)
	if err := json.Unmarshal(a.body, &h); err != nil || h.RemoteAddr != conn.LocalAddr().String() {
		t.Errorf("remote_addr %q, want the peer %s (%s)", h.RemoteAddr, conn.LocalAddr(), a.body)
	}
}

// metricValue reads one sample of a Prometheus text page (-1: absent).
func metricValue(page, series string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(page)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// needFDs raises the soft limit of open files to the hard one and fails
// the test if that is below n.
func needFDs(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < n {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatalf("cannot raise the open-files limit: %v", err)
		}
	}
	if lim.Cur < n {
		t.Fatalf("the open-files limit is %d (ulimit -n), this test needs %d", lim.Cur, n)
	}
}
