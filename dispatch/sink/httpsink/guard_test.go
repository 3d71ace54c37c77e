package httpsink

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

func TestBlockedReason(t *testing.T) {
	for _, tc := range []struct{ ip, want string }{
		// Refused.
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"64:ff9b::7f00:1", "loopback"}, // NAT64 of 127.0.0.1
		{"2002:7f00:1::", "loopback"},   // 6to4 of 127.0.0.1
		{"::127.0.0.1", "loopback"},     // IPv4-compatible
		{"10.1.2.3", "private"},
		{"::ffff:10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS's IPv6 metadata
		{"64:ff9b:1::a01:203", "private"},
		{"169.254.169.254", "cloud metadata"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "site-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"}, // Alibaba's metadata
		{"100.127.255.255", "carrier-grade NAT"},
		{"192.0.0.192", "reserved"}, // Oracle's metadata
		{"198.18.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		// Allowed.
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"172.15.255.255", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"169.253.255.255", ""},
		{"::ffff:93.184.216.34", ""},
		{"64:ff9b::5db8:d822", ""}, // NAT64 of 93.184.216.34
		{"2002:5db8:d822::1", ""},
		{"2606:2800:220:1:248:1893:25c8:1946", ""},
		{"2001:4860:4860::8888", ""},
	} {
		a, err := netip.ParseAddr(tc.ip)
		if err != nil {
			t.Fatal(err)
		}
		if got := blockedReason(a); got != tc.want {
			t.Errorf("blockedReason(%s) = %q, want %q", tc.ip, got, tc.want)
		}
	}
}

func TestBlockedName(t *testing.T) {
	for _, tc := range []struct{ host, want string }{
		{"localhost", "a loopback name"},
		{"LOCALHOST.", "a loopback name"},
		{"api.localhost", "a loopback name"},
		{"metadata.google.internal", "a cloud metadata name"},
		{"Metadata.Google.Internal.", "a cloud metadata name"},
		{"metadata", "a cloud metadata name"},
		{"instance-data.ec2.internal", "a cloud metadata name"},
		{"example.com", ""},
		{"localhost.example.com", ""},
		{"metadata.example.com", ""},
	} {
		if got := blockedName(tc.host); got != tc.want {
			t.Errorf("blockedName(%q) = %q, want %q", tc.host, got, tc.want)
		}
	}
}

// TestSSRFRefused: urls whose host is or resolves to a blocked address
// are refused, permanently, with the message the operator needs, and no
// connection reaches the receiver.
func TestSSRFRefused(t *testing.T) {
	rc := newReceiver(t, nil)
	port := rc.port()
	const hint = "; set allow_private: true on this sink to allow private targets"
	for _, tc := range []struct {
		url  string
		dns  []string // the fake DNS's answer
		want string
	}{
		{"http://hooks.example.test:" + port + "/", []string{"127.0.0.1"}, `host "hooks.example.test" resolves to 127.0.0.1 (loopback)`},
		{"http://hooks.example.test:" + port + "/", []string{"10.1.2.3"}, `host "hooks.example.test" resolves to 10.1.2.3 (private)`},
		{"http://hooks.example.test:" + port + "/", []string{"169.254.169.254"}, `host "hooks.example.test" resolves to 169.254.169.254 (cloud metadata)`},
		{"http://hooks.example.test:" + port + "/", []string{"::1"}, `host "hooks.example.test" resolves to ::1 (loopback)`},
		{"http://hooks.example.test:" + port + "/", []string{"::ffff:127.0.0.1"}, `host "hooks.example.test" resolves to 127.0.0.1 (loopback)`},
		{"http://hooks.example.test:" + port + "/", []string{"93.184.216.34", "10.0.0.1"}, `host "hooks.example.test" resolves to 10.0.0.1 (private)`},
		{"https://hooks.example.test:" + port + "/", []string{"127.0.0.1"}, `host "hooks.example.test" resolves to 127.0.0.1 (loopback)`},
		{"http://127.0.0.1:" + port + "/", nil, "the url's host is 127.0.0.1 (loopback)"},
		{"http://[::1]:" + port + "/", nil, "the url's host is ::1 (loopback)"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", nil, "the url's host is 127.0.0.1 (loopback)"},
		{"http://0.0.0.0:" + port + "/", nil, "the url's host is 0.0.0.0 (unspecified)"},
		{"http://localhost:" + port + "/", nil, `host "localhost" is a loopback name`},
		{"http://metadata.google.internal/computeMetadata/v1/", nil, `host "metadata.google.internal" is a cloud metadata name`},
	} {
		dns := &fakeDNS{}
		dns.set(tc.dns...)
		s := newSink(t, config.Sink{URL: tc.url}, withDNS(dns))
		dialed := false
		s.dialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = true
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		d, err := deliver(s, testEnvelope())
		de := asError(t, err)
		want := "refused by the SSRF guard: " + tc.want + hint
		if !de.Permanent || de.Status != 0 || d.Status != 0 || !errors.Is(err, ErrPrivateTarget) || err.Error() != want {
			t.Errorf("%s (dns %v): error %q (permanent %v, status %d)\nwant permanent %q", tc.url, tc.dns, err, de.Permanent, de.Status, want)
		}
		if dialed {
			t.Errorf("%s (dns %v): the sink dialed a refused address", tc.url, tc.dns)
		}
		if tc.dns == nil && dns.count() != 0 {
			t.Errorf("%s: %d DNS lookups for a refused literal or name", tc.url, dns.count())
		}
	}
	if n := rc.accepts.Load(); n != 0 {
		t.Fatalf("%d connections reached the receiver", n)
	}
}

// TestSSRFErrorThroughFasthttp: the guard's refusal comes out of
// fasthttp's Do as the *dispatch.Error the dial returned, over http and
// https.
func TestSSRFErrorThroughFasthttp(t *testing.T) {
	for _, url := range []string{"http://127.0.0.1:9/", "https://127.0.0.1:9/", "https://localhost/"} {
		s := newSink(t, config.Sink{URL: url})
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI(url)
		req.Header.SetMethod(fasthttp.MethodPost)
		err := s.client.DoTimeout(req, resp, time.Second)
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
		var de *dispatch.Error
		if !errors.As(err, &de) || !de.Permanent || !errors.Is(err, ErrPrivateTarget) {
			t.Errorf("%s: fasthttp returned %v (%T), want the guard's permanent *dispatch.Error", url, err, err)
		}
	}
}

func TestSSRFAllowPrivate(t *testing.T) {
	rc := newReceiver(t, nil)
	dns := &fakeDNS{}
	dns.set("127.0.0.1")
	for _, url := range []string{"http://hooks.example.test:" + rc.port() + "/", "http://127.0.0.1:" + rc.port() + "/"} {
		s := newSink(t, config.Sink{URL: url, AllowPrivate: true}, withDNS(dns))
		if _, err := deliver(s, testEnvelope()); err != nil {
			t.Fatalf("%s with allow_private: %v", url, err)
		}
	}
	if n := rc.accepts.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestSSRFPublicPasses: a public address passes the guard and is the
// address dialed; the name is resolved once per connection, and a later
// connection is checked again (a rebinding answer is refused then).
func TestSSRFPublicPasses(t *testing.T) {
	rc := newReceiver(t, nil)
	dns := &fakeDNS{}
	dns.set("93.184.216.34")
	s := newSink(t, config.Sink{URL: "http://hooks.example.test:8080/in"}, withDNS(dns))
	asked := make(chan string, 10)
	s.dialContext = redirectDial(t, rc.addr(), asked)
	for i := 0; i < 3; i++ {
		if _, err := deliver(s, testEnvelope()); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-asked; got != "93.184.216.34:8080" {
		t.Fatalf("dialed %s, want the checked address 93.184.216.34:8080", got)
	}
	if dns.count() != 1 || len(asked) != 0 {
		t.Fatalf("%d lookups and %d more dials for 3 deliveries on one connection, want 1 and 0", dns.count(), len(asked))
	}
	if got := rc.last(t); got.URI != "/in" {
		t.Fatalf("uri %s", got.URI)
	}

	dns.set("127.0.0.1") // the name now rebinds to loopback
	s.client.CloseIdleConnections()
	_, err := deliver(s, testEnvelope())
	if de := asError(t, err); !de.Permanent || !strings.Contains(err.Error(), "resolves to 127.0.0.1 (loopback)") {
		t.Fatalf("after rebinding: %v, want the guard's refusal", err)
	}
	if len(asked) != 0 {
		t.Fatal("the sink dialed after the rebinding answer")
	}
}

func TestDNSFailure(t *testing.T) {
	s := newSink(t, config.Sink{URL: "http://nx.example.test/"}, func(o *Options) {
		o.LookupIP = func(context.Context, string) ([]net.IP, error) {
			return nil, &net.DNSError{Err: "no such host", Name: "nx.example.test", IsNotFound: true}
		}
	})
	d, err := deliver(s, testEnvelope())
	checkNoAnswer(t, d, err, 0, time.Second, `cannot resolve host "nx.example.test": lookup nx.example.test: no such host`)
}
