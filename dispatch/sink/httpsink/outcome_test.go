package httpsink

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

func TestStatusMapping(t *testing.T) {
	const secret = "whsec_c2VjcmV0LWtleS1mb3ItdGVzdHM="
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: secret}, AllowPrivate: true}, withNow(testNow))
	long := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		status     int
		header     map[string]string
		body       string
		ok         bool
		permanent  bool
		retryAfter time.Duration
		msg        string // the message holds it
	}{
		{status: 200, body: "thanks", ok: true},
		{status: 201, ok: true},
		{status: 202, body: long, ok: true},
		{status: 204, ok: true},
		{status: 410, body: "endpoint deleted", permanent: true, msg: `status 410: the receiver says the endpoint is gone; the hook is not retried; body: "endpoint deleted"`},
		{status: 408, msg: "status 408: the receiver timed out reading the request"},
		{status: 429, header: map[string]string{"Retry-After": "120"}, retryAfter: 2 * time.Minute, msg: "status 429: the receiver is rate limiting (Retry-After: 2m0s)"},
		{status: 503, header: map[string]string{"Retry-After": testNow.Add(90 * time.Second).UTC().Format(http.TimeFormat)}, retryAfter: 90 * time.Second},
		{status: 503, header: map[string]string{"Retry-After": "soon"}, msg: "status 503: the receiver failed"},
		{status: 503, header: map[string]string{"Retry-After": "99999999999999999999"}, retryAfter: 24 * time.Hour},
		{status: 500, body: "  database down\n", msg: `status 500: the receiver failed; body: "database down"`},
		{status: 502, body: long, msg: `body: "` + strings.Repeat("x", headMax) + `"...`},
		{status: 599},
		{status: 301, header: map[string]string{"Location": "https://elsewhere.example.com/in"}, permanent: true, msg: `status 301: the receiver redirected to "https://elsewhere.example.com/in"; redirects are not followed`},
		{status: 307, permanent: true, msg: "redirects are not followed"},
		{status: 400, body: "bad json", permanent: true, msg: `status 400: the receiver refused the hook; body: "bad json"`},
		{status: 401, permanent: true, msg: "status 401: the receiver refused the hook"},
		{status: 404, body: "<html>\x00\x01</html>", permanent: true, msg: `body: "<html>\x00\x01</html>"`},
		{status: 422, permanent: true},
	} {
		rc.setHandler(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		})
		d, err := deliver(s, testEnvelope())
		if d.Status != tc.status {
			t.Errorf("%d: d.Status = %d", tc.status, d.Status)
		}
		if tc.ok {
			if err != nil {
				t.Errorf("%d: %v, want nil", tc.status, err)
			}
			continue
		}
		de := asError(t, err)
		if de.Status != tc.status || de.Permanent != tc.permanent || de.RetryAfter != tc.retryAfter {
			t.Errorf("%d: got status %d permanent %v retry after %v, want %d %v %v (%v)",
				tc.status, de.Status, de.Permanent, de.RetryAfter, tc.status, tc.permanent, tc.retryAfter, err)
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%d: message %q lacks %q", tc.status, err, tc.msg)
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%d: message %q holds the secret", tc.status, err)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := testNow
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"30", 30 * time.Second},
		{" 30 ", 30 * time.Second},
		{"86400", 24 * time.Hour},
		{"86401", 24 * time.Hour},
		{"18446744073709551616", 24 * time.Hour},
		{"-1", 0},
		{"1.5", 0},
		{"30s", 0},
		{"abc", 0},
		{now.Add(time.Hour).UTC().Format(http.TimeFormat), time.Hour},           // IMF-fixdate
		{now.Add(time.Hour).UTC().Format(time.RFC850), time.Hour},               // obsolete RFC 850
		{now.Add(time.Hour).UTC().Format(time.ANSIC), time.Hour},                // asctime
		{now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0},                  // past
		{now.Add(48 * time.Hour).UTC().Format(http.TimeFormat), 24 * time.Hour}, // capped
		{"Sun, 06 Nov 1994 08:49:37", 0},                                        // no zone
	} {
		if got := parseRetryAfter([]byte(tc.v), now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestTimeout(t *testing.T) {
	rc := newReceiver(t, nil)
	rc.setHandler(func(w http.ResponseWriter, r *http.Request) { rc.wait(r) })
	const timeout = 200 * time.Millisecond
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Timeout: config.Duration(timeout), AllowPrivate: true})

	t.Run("sink timeout", func(t *testing.T) {
		start := time.Now()
		d, err := deliver(s, testEnvelope())
		checkNoAnswer(t, d, err, time.Since(start), 2*timeout, "timeout after 200ms waiting for "+rc.addr()+" (the sink's timeout)")
	})
	t.Run("ctx deadline first", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout/2)
		defer cancel()
		d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}
		start := time.Now()
		err := s.Deliver(ctx, d)
		checkNoAnswer(t, d, err, time.Since(start), timeout, "the dispatcher's deadline")
	})
	t.Run("ctx cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(timeout/4, cancel)
		d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}
		start := time.Now()
		err := s.Deliver(ctx, d)
		checkNoAnswer(t, d, err, time.Since(start), timeout/2, "the attempt was cancelled: context canceled")
	})
	t.Run("ctx done before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		n := len(rc.requests())
		d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}
		err := s.Deliver(ctx, d)
		checkNoAnswer(t, d, err, 0, time.Second, "context canceled")
		if len(rc.requests()) != n {
			t.Fatal("a request was sent with ctx done")
		}
	})
}

// checkNoAnswer checks a retryable attempt without an answer, that took
// less than within, whose message holds msg.
func checkNoAnswer(t *testing.T, d *dispatch.Delivery, err error, took, within time.Duration, msg string) {
	t.Helper()
	de := asError(t, err)
	if de.Permanent || de.Status != 0 || d.Status != 0 {
		t.Errorf("error %v: permanent %v, status %d, d.Status %d; want a retryable error without status", err, de.Permanent, de.Status, d.Status)
	}
	if took > within {
		t.Errorf("the attempt took %v, want under %v", took, within)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("message %q lacks %q", err, msg)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSink(t, config.Sink{URL: "http://" + addr + "/", AllowPrivate: true})
	start := time.Now()
	d, err := deliver(s, testEnvelope())
	checkNoAnswer(t, d, err, time.Since(start), time.Second, "connection refused by "+addr)
}

func TestConnectTimeout(t *testing.T) {
	dns := &fakeDNS{}
	dns.set("93.184.216.34")
	s := newSink(t, config.Sink{URL: "http://receiver.example.com:8080/", ConnectTimeout: config.Duration(100 * time.Millisecond)}, withDNS(dns))
	s.dialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done() // a receiver that never answers the SYN
		return nil, ctx.Err()
	}
	start := time.Now()
	d, err := deliver(s, testEnvelope())
	checkNoAnswer(t, d, err, time.Since(start), time.Second, "cannot connect to receiver.example.com:8080 within 100ms (connect_timeout)")
}

func TestConnectionPooling(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Concurrency: 4, AllowPrivate: true})
	t.Run("sequential", func(t *testing.T) {
		for i := 0; i < 50; i++ {
			if _, err := deliver(s, testEnvelope()); err != nil {
				t.Fatal(err)
			}
		}
		if n := rc.accepts.Load(); n != 1 {
			t.Fatalf("50 sequential deliveries used %d connections, want 1", n)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		rc.setHandler(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(5 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
		})
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := 0; i < 32; i++ {
			wg.Go(func() {
				_, err := deliver(s, testEnvelope())
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := rc.accepts.Load(); n > 4 {
			t.Fatalf("32 concurrent deliveries with concurrency 4 used %d connections", n)
		}
	})
}

// TestStaleConnection: a receiver that closes each connection after its
// answer (without Connection: close) costs no attempt: the request that
// finds its pooled connection closed is made again on a new one.
func TestStaleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err == nil {
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			c.Close()
		}
	}()
	s := newSink(t, config.Sink{URL: "http://" + ln.Addr().String() + "/", AllowPrivate: true})
	for i := 0; i < 5; i++ {
		if _, err := deliver(s, testEnvelope()); err != nil {
			t.Fatalf("delivery %d: %v", i+1, err)
		}
		time.Sleep(5 * time.Millisecond) // let the close reach the client
	}
}

// TestLargeAnswer: a 1 MiB answer body is not read whole; its connection
// is closed and the next attempt gets a new one.
func TestLargeAnswer(t *testing.T) {
	big := strings.Repeat("y", 1<<20)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", AllowPrivate: true})
	for i := 0; i < 2; i++ {
		d, err := deliver(s, testEnvelope())
		if err != nil || d.Status != 200 {
			t.Fatalf("delivery %d: %v, status %d", i+1, err, d.Status)
		}
	}
	if n := rc.accepts.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: an answer past %d bytes closes its connection", n, drainMax)
	}
}

func TestClose(t *testing.T) {
	rc := newReceiver(t, nil)
	rc.setHandler(func(w http.ResponseWriter, r *http.Request) { rc.wait(r) })
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Timeout: config.Duration(10 * time.Second), AllowPrivate: true})
	time.AfterFunc(50*time.Millisecond, func() { s.Close() })
	start := time.Now()
	d, err := deliver(s, testEnvelope())
	checkNoAnswer(t, d, err, time.Since(start), 2*time.Second, "")
	_, err = deliver(s, testEnvelope())
	if de := asError(t, err); de.Permanent || !errors.Is(err, ErrClosed) {
		t.Fatalf("Deliver after Close: %v, want a retryable ErrClosed", err)
	}
}
