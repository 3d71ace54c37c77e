package httpsink

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// testNow is the fixed clock of tests that pin signatures and dates.
var testNow = time.Unix(1764445200, 0)

// testEnvelope is a hook of tenant acme, source stripe.
func testEnvelope() *envelope.Envelope {
	return &envelope.Envelope{
		Seq:         42,
		ID:          envelope.MakeID(uint64(testNow.UnixMilli())+123, 1, 42),
		TenantID:    "acme",
		SourceID:    "stripe",
		ReceivedAt:  testNow.UnixNano() + 123456789,
		RouteParams: []envelope.Param{{Key: "app_id", Value: "a1"}},
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json"},
			{Name: "Stripe-Signature", Value: "t=1,v1=abc"},
		},
		Body:         []byte(`{"id":"evt_1","amount":100}`),
		Verification: envelope.Verification{Verifier: "stripe", Verified: true},
		DedupeKey:    "evt_1",
	}
}

// received is one request a receiver got.
type received struct {
	Method, URI string
	Header      http.Header
	Body        []byte
}

// receiver is a net/http server on 127.0.0.1 that records what it gets,
// counts the connections it accepts, and answers with its handler
// (204 when nil).
type receiver struct {
	srv     *httptest.Server
	accepts atomic.Int64
	handler atomic.Pointer[http.HandlerFunc]
	// stop is closed at cleanup, before the server closes, so handlers
	// that wait can return.
	stop chan struct{}

	mu  sync.Mutex
	got []received
}

func newReceiver(t *testing.T, h http.HandlerFunc) *receiver {
	t.Helper()
	rc := &receiver{stop: make(chan struct{})}
	if h != nil {
		rc.handler.Store(&h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.srv.Listener = &countingListener{Listener: ln, n: &rc.accepts}
	rc.srv.Start()
	t.Cleanup(func() {
		close(rc.stop)
		rc.srv.Close()
	})
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, received{Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone(), Body: body})
	rc.mu.Unlock()
	if h := rc.handler.Load(); h != nil {
		(*h)(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) setHandler(h http.HandlerFunc) { rc.handler.Store(&h) }

// addr is host:port.
func (rc *receiver) addr() string { return rc.srv.Listener.Addr().String() }

// port is the receiver's port.
func (rc *receiver) port() string {
	_, p, _ := net.SplitHostPort(rc.addr())
	return p
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// last is the last request; the test fails when there was none.
func (rc *receiver) last(t *testing.T) received {
	t.Helper()
	got := rc.requests()
	if len(got) == 0 {
		t.Fatal("the receiver got no request")
	}
	return got[len(got)-1]
}

// wait holds a handler until the client goes away or the test ends.
func (rc *receiver) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-rc.stop:
	case <-time.After(10 * time.Second):
	}
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// newSink returns a sink for spec that is closed at cleanup. Tests that
// talk to a receiver on 127.0.0.1 set AllowPrivate.
func newSink(t *testing.T, spec config.Sink, opt ...func(*Options)) *Sink {
	t.Helper()
	o := Options{Spec: spec, Source: "stripe"}
	for _, f := range opt {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func withNow(now time.Time) func(*Options) {
	return func(o *Options) { o.Now = func() time.Time { return now } }
}

// fakeDNS answers every name with ips and counts the lookups.
type fakeDNS struct {
	mu      sync.Mutex
	answer  []net.IP
	lookups []string
}

func (f *fakeDNS) set(ips ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = f.answer[:0]
	for _, s := range ips {
		f.answer = append(f.answer, net.ParseIP(s))
	}
}

func (f *fakeDNS) lookup(_ context.Context, host string) ([]net.IP, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, host)
	return append([]net.IP(nil), f.answer...), nil
}

func (f *fakeDNS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lookups)
}

func withDNS(f *fakeDNS) func(*Options) {
	return func(o *Options) { o.LookupIP = f.lookup }
}

// deliver makes one attempt of e (attempt 1) with a background context.
func deliver(s *Sink, e *envelope.Envelope) (*dispatch.Delivery, error) {
	d := &dispatch.Delivery{Envelope: e, Attempt: 1, SinkID: "http-test"}
	return d, s.Deliver(context.Background(), d)
}

// asError is err as a *dispatch.Error; the test fails when it is not one.
func asError(t *testing.T, err error) *dispatch.Error {
	t.Helper()
	var de *dispatch.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *dispatch.Error", err, err)
	}
	return de
}
