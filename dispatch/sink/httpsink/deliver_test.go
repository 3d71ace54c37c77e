package httpsink

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

func TestRawFormat(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/in", AllowPrivate: true})
	e := testEnvelope()
	e.Headers[0].Name = "content-TYPE" // the lookup ignores case
	d := &dispatch.Delivery{Envelope: e, Attempt: 7}
	if err := s.Deliver(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if d.Status != http.StatusNoContent {
		t.Fatalf("d.Status = %d, want 204", d.Status)
	}
	got := rc.last(t)
	if got.Method != http.MethodPost || got.URI != "/in" {
		t.Fatalf("request line %s %s, want POST /in", got.Method, got.URI)
	}
	if !bytes.Equal(got.Body, e.Body) {
		t.Fatalf("body %q, want the hook's %q", got.Body, e.Body)
	}
	want := map[string]string{
		"Content-Type":                  "application/json",
		"X-Ankusa-Event-Id":             e.ID.String(),
		"X-Ankusa-Tenant":               "acme",
		"X-Ankusa-Source":               "stripe",
		"X-Ankusa-Attempt":              "7",
		"Webhook-Signature":             "", // no secret, no signature
		"X-Ankusa-Verification-Flagged": "",
		"Stripe-Signature":              "", // the hook's own headers are not forwarded
	}
	checkHeaders(t, got.Header, want)

	t.Run("no content type", func(t *testing.T) {
		e := testEnvelope()
		e.Headers = e.Headers[1:]
		if _, err := deliver(s, e); err != nil {
			t.Fatal(err)
		}
		checkHeaders(t, rc.last(t).Header, map[string]string{"Content-Type": "application/octet-stream"})
	})
	t.Run("binary body", func(t *testing.T) {
		e := testEnvelope()
		e.Body = []byte{0, 0xff, 0xfe, '\r', '\n'}
		if _, err := deliver(s, e); err != nil {
			t.Fatal(err)
		}
		if got := rc.last(t).Body; !bytes.Equal(got, e.Body) {
			t.Fatalf("body %q, want %q", got, e.Body)
		}
	})
	t.Run("flagged", func(t *testing.T) {
		e := testEnvelope()
		e.Verification.Flagged = true
		if _, err := deliver(s, e); err != nil {
			t.Fatal(err)
		}
		checkHeaders(t, rc.last(t).Header, map[string]string{"X-Ankusa-Verification-Flagged": "true"})
	})
}

func TestEnvelopeFormat(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/in", Format: FormatEnvelope, AllowPrivate: true})
	for _, flagged := range []bool{false, true} {
		t.Run(fmt.Sprint("flagged=", flagged), func(t *testing.T) {
			e := testEnvelope()
			e.Verification.Flagged = flagged
			e.Verification.Verified = !flagged
			if _, err := deliver(s, e); err != nil {
				t.Fatal(err)
			}
			got := rc.last(t)
			if want := e.AppendJSON(nil); !bytes.Equal(got.Body, want) {
				t.Fatalf("body\n%s\nwant envelope.AppendJSON\n%s", got.Body, want)
			}
			if want := fmt.Sprintf(`"flagged":%v}`, flagged); !bytes.Contains(got.Body, []byte(want)) {
				t.Fatalf("body %s lacks %s", got.Body, want)
			}
			flag := ""
			if flagged {
				flag = "true"
			}
			checkHeaders(t, got.Header, map[string]string{"Content-Type": "application/json", "X-Ankusa-Verification-Flagged": flag})
		})
	}
}

func TestTemplates(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{
		URL:          "http://" + rc.addr() + "/t/{tenant_id}/{source_id}/{params.app_id}?event={event_id}&missing={params.nope}",
		Headers:      map[string]string{"X-Tenant-Key": "key-{tenant_id}-{params.app_id}", "Content-Type": "application/vnd.{source_id}+json"},
		Secret:       config.Secret{Value: "s3cr3t-{tenant_id}"},
		AllowPrivate: true,
	})
	for _, tenant := range []string{"acme", "globex"} {
		e := testEnvelope()
		e.TenantID = tenant
		if _, err := deliver(s, e); err != nil {
			t.Fatal(err)
		}
		got := rc.last(t)
		if want := "/t/" + tenant + "/stripe/a1?event=" + e.ID.String() + "&missing="; got.URI != want {
			t.Errorf("uri %s, want %s", got.URI, want)
		}
		checkHeaders(t, got.Header, map[string]string{
			"X-Tenant-Key":    "key-" + tenant + "-a1",
			"Content-Type":    "application/vnd.stripe+json", // the sink's header replaces the hook's
			"X-Ankusa-Tenant": tenant,
		})
		verifySignature(t, []byte("s3cr3t-"+tenant), got, true)
		if err := verifyWith(t, []byte("s3cr3t-other"), got); err == nil {
			t.Errorf("the signature of tenant %s verifies with another tenant's key", tenant)
		}
	}
}

// TestHeaderValueInjection: a route parameter holding CR LF cannot add a
// header line.
func TestHeaderValueInjection(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Headers: map[string]string{"X-App": "{params.app_id}"}, AllowPrivate: true})
	e := testEnvelope()
	e.RouteParams[0].Value = "a1\r\nX-Injected: yes"
	if _, err := deliver(s, e); err != nil {
		t.Fatal(err)
	}
	got := rc.last(t)
	if v := got.Header.Get("X-Injected"); v != "" {
		t.Fatalf("a route parameter added the header X-Injected: %s", v)
	}
	if v := got.Header.Get("X-App"); !strings.HasPrefix(v, "a1") || !strings.Contains(v, "X-Injected: yes") {
		t.Fatalf("X-App = %q, want the value on one line", v)
	}
}

// wireRequest is the request of the package doc, byte for byte.
const wireRequest = "POST /hooks/acme?x=1 HTTP/1.1\r\n" +
	"User-Agent: ankusa\r\n" +
	"Host: receiver.example.com\r\n" +
	"Content-Type: application/json\r\n" +
	"Content-Length: 14\r\n" +
	"Authorization: Bearer a1\r\n" +
	"x-ankusa-event-id: evt_01KB8J27QV000G00000000001A\r\n" +
	"x-ankusa-tenant: acme\r\n" +
	"x-ankusa-source: stripe\r\n" +
	"x-ankusa-attempt: 3\r\n" +
	"x-ankusa-verification-flagged: true\r\n" +
	"webhook-id: evt_01KB8J27QV000G00000000001A\r\n" +
	"webhook-timestamp: 1764445200\r\n" +
	"webhook-signature: v1,YSJlhea+W1A5Xi/bk2fVS9mCDsyTAynFgDWnP8v1pnQ=\r\n" +
	"\r\n" +
	`{"id":"evt_1"}`

// TestWireFormat pins the bytes of a request (the package doc shows
// them): a raw TCP receiver reads exactly what the sink writes.
func TestWireFormat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		got <- readRawRequest(c)
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
	}()
	dns := &fakeDNS{}
	dns.set("93.184.216.34")
	s := newSink(t, config.Sink{
		URL:     "http://receiver.example.com/hooks/{tenant_id}?x=1",
		Headers: map[string]string{"Authorization": "Bearer {params.app}"},
		Secret:  config.Secret{Value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}, withNow(testNow), withDNS(dns))
	s.dialContext = redirectDial(t, ln.Addr().String(), nil)
	e := &envelope.Envelope{
		ID:           envelope.MakeID(uint64(testNow.UnixMilli())+123, 1, 42),
		TenantID:     "acme",
		SourceID:     "stripe",
		RouteParams:  []envelope.Param{{Key: "app", Value: "a1"}},
		Headers:      []envelope.Header{{Name: "Content-Type", Value: "application/json"}},
		Body:         []byte(`{"id":"evt_1"}`),
		Verification: envelope.Verification{Flagged: true},
	}
	d := &dispatch.Delivery{Envelope: e, Attempt: 3}
	if err := s.Deliver(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != wireRequest {
		t.Fatalf("the sink wrote\n%q\nwant\n%q", b, wireRequest)
	}
}

// readRawRequest reads one request's bytes: the header, then
// Content-Length bytes of body.
func readRawRequest(c net.Conn) []byte {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	var raw []byte
	n := 0
	for {
		line, err := br.ReadString('\n')
		raw = append(raw, line...)
		if err != nil {
			return raw
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			fmt.Sscan(v, &n)
		}
		if line == "\r\n" {
			break
		}
	}
	body := make([]byte, n)
	io.ReadFull(br, body)
	return append(raw, body...)
}

// redirectDial is a dialContext that records the address the sink asked
// for and connects to to instead.
func redirectDial(t *testing.T, to string, asked chan<- string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if asked != nil {
			asked <- addr
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
}

// checkHeaders checks header values; "" means absent.
func checkHeaders(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := h.Get(name); got != v {
			t.Errorf("header %s = %q, want %q", name, got, v)
		}
	}
}
