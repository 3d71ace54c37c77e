package httpsink

import (
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

func TestTarget(t *testing.T) {
	e := testEnvelope()
	for _, tc := range []struct{ url, want string }{
		{"http://Example.COM/x", "http://example.com:80"},
		{"HTTPS://example.com", "https://example.com:443"},
		{"https://example.com:8443/x?y=1#z", "https://example.com:8443"},
		{"https://user:pass@example.com/x", "https://example.com:443"},
		{"http://[2001:DB8::1]:8080/", "http://[2001:db8::1]:8080"},
		{"http://[2001:db8::1]/", "http://[2001:db8::1]:80"},
		{"http://10.0.0.1:81", "http://10.0.0.1:81"},
		{"https://{tenant_id}.hooks.example.com/{source_id}", "https://acme.hooks.example.com:443"},
		{"https://hooks.example.com/{tenant_id}", "https://hooks.example.com:443"},
		{"https://{params.app_id}.example.com:9000/", "https://a1.example.com:9000"},
	} {
		s := newSink(t, config.Sink{URL: tc.url})
		if got := s.Target(e); got != tc.want {
			t.Errorf("Target(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
	// One template, one target per tenant.
	s := newSink(t, config.Sink{URL: "https://{tenant_id}.hooks.example.com/in"})
	other := testEnvelope()
	other.TenantID = "globex"
	if a, b := s.Target(e), s.Target(other); a == b {
		t.Fatalf("two tenants share the target %s", a)
	}
}

// TestURLExpansionChecked: a template field cannot change the
// receiver's host, nor make an invalid one.
func TestURLExpansionChecked(t *testing.T) {
	rc := newReceiver(t, nil)
	for _, tc := range []struct{ url, param, want string }{
		{"http://api.example.com{params.app_id}/", "@" + rc.addr(), "holds '@'"},
		{"http://u:{params.app_id}@api.example.com/", "x@" + rc.addr(), "holds '@'"},
		{"http://{params.app_id}.example.com/", "a%b", `host "a%b.example.com" is not a valid host name`},
		{"http://example.com/{params.app_id}", "a b", `the url holds the byte ' ', which cannot be sent`},
		{"http://example.com/{params.app_id}", "a\x00b", `the url holds the byte '\x00', which cannot be sent`},
		{"http://{params.app_id}@example.com/", "us[er", "userinfo holds a byte that must be percent-encoded"},
		{"http://{params.app_id}/", "", `host "" is not a valid host name`},
		{"http://api.example.com:{params.app_id}/", "99999", "invalid port"},
		{"http://{params.app_id}/", `evil.com\@x`, "holds '@'"},
		{"http://[{params.app_id}]/", "::0%0", "names an IPv6 zone"}, // found by FuzzURLCheck
	} {
		s := newSink(t, config.Sink{URL: tc.url, AllowPrivate: true})
		e := testEnvelope()
		e.RouteParams[0].Value = tc.param
		d, err := deliver(s, e)
		de := asError(t, err)
		if !de.Permanent || d.Status != 0 || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cannot build the url for this hook: ") {
			t.Errorf("%s with %q: %v (permanent %v), want a permanent error with %q", tc.url, tc.param, err, de.Permanent, tc.want)
		}
	}
	if n := rc.accepts.Load(); n != 0 {
		t.Fatalf("%d connections reached the receiver", n)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		spec config.Sink
		want string
	}{
		{config.Sink{}, "url: required"},
		{config.Sink{URL: "http://x/{nope}"}, "url: field {nope} at offset 9: unknown field"},
		{config.Sink{URL: "ftp://x/"}, `url: "ftp://x/" must start with http:// or https://`},
		{config.Sink{URL: "x.example.com/"}, "must start with http:// or https://"},
		{config.Sink{URL: "http://a%b/"}, `url: host "a%b" is not a valid host name`},
		{config.Sink{URL: "http://a b/"}, `url: the url holds the byte ' ', which cannot be sent`},
		{config.Sink{URL: "http://x/", Headers: map[string]string{"X-Foo": "{bad"}}, "headers.X-Foo: unclosed '{'"},
		{config.Sink{URL: "http://x/", Headers: map[string]string{"X-Ankusa-Tenant": "t"}}, "headers.X-Ankusa-Tenant: is set by the sink itself"},
		{config.Sink{URL: "http://x/", Headers: map[string]string{"Webhook-Signature": "t"}}, "headers.Webhook-Signature: is set by the sink itself"},
		{config.Sink{URL: "http://x/", Headers: map[string]string{"content-length": "1"}}, "headers.content-length: is set by the sink itself"},
		{config.Sink{URL: "http://x/", Secret: config.Secret{Value: "{tenant}"}}, "secret: field {tenant}"},
		{config.Sink{URL: "http://x/", Secret: config.Secret{Value: "whsec_"}}, "secret: the secret starts with whsec_"},
		{config.Sink{URL: "http://x/", Format: "xml"}, `format: "xml" must be raw or envelope`},
		{config.Sink{URL: "http://x/", Type: "rabbitmq"}, `type: "rabbitmq" is not an http sink`},
		{config.Sink{URL: "http://x/", Concurrency: 5000}, "concurrency: 5000"},
		{config.Sink{URL: "http://x/", Timeout: -1}, "timeout: -1ns must be at least 1ms"},
	} {
		_, err := New(Options{Spec: tc.spec})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// TestDurable: a receiver's 2xx is not durability.
func TestDurable(t *testing.T) {
	if newSink(t, config.Sink{URL: "http://x/"}).Durable() {
		t.Fatal("Durable() = true")
	}
}
