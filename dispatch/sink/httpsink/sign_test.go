package httpsink

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// The Standard Webhooks specification's example secret.
const swSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verifyWith checks a request's signature with the Standard Webhooks
// library's verifier and a raw key, ignoring the timestamp's age.
func verifyWith(t *testing.T, key []byte, r received) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	return wh.VerifyIgnoringTimestamp(r.Body, r.Header)
}

func verifySignature(t *testing.T, key []byte, r received, wantOK bool) {
	t.Helper()
	err := verifyWith(t, key, r)
	if wantOK && err != nil {
		t.Fatalf("the Standard Webhooks library refuses the signature: %v", err)
	}
	if !wantOK && !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Fatalf("verification error %v, want ErrNoMatchingSignature", err)
	}
}

func TestStandardWebhooksSignature(t *testing.T) {
	wh, err := standardwebhooks.NewWebhook(swSecret)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{FormatRaw, FormatEnvelope} {
		t.Run(format, func(t *testing.T) {
			rc := newReceiver(t, nil)
			// The real clock: Verify checks the timestamp's age too.
			s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Format: format, Secret: config.Secret{Value: swSecret}, AllowPrivate: true})
			e := testEnvelope()
			if _, err := deliver(s, e); err != nil {
				t.Fatal(err)
			}
			got := rc.last(t)
			if err := wh.Verify(got.Body, got.Header); err != nil {
				t.Fatalf("the Standard Webhooks library refuses the signature: %v", err)
			}
			if id := got.Header.Get("Webhook-Id"); id != e.ID.String() {
				t.Fatalf("webhook-id %q, want the event id %s", id, e.ID)
			}
			tampered := append([]byte(nil), got.Body...)
			tampered[len(tampered)-2] ^= 1
			if err := wh.Verify(tampered, got.Header); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("a tampered body verifies: %v", err)
			}
			other := got.Header.Clone()
			other.Set("Webhook-Id", "evt_other")
			if err := wh.Verify(got.Body, other); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Fatalf("a changed webhook-id verifies: %v", err)
			}
		})
	}
}

// TestSignatureTimestamp: webhook-timestamp is Options.Now in unix
// seconds, and the library's signer agrees with the sink's signature.
func TestSignatureTimestamp(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: swSecret}, AllowPrivate: true}, withNow(testNow))
	e := testEnvelope()
	if _, err := deliver(s, e); err != nil {
		t.Fatal(err)
	}
	got := rc.last(t)
	if ts := got.Header.Get("Webhook-Timestamp"); ts != strconv.FormatInt(testNow.Unix(), 10) {
		t.Fatalf("webhook-timestamp %q, want %d", ts, testNow.Unix())
	}
	wh, _ := standardwebhooks.NewWebhook(swSecret)
	want, err := wh.Sign(e.ID.String(), testNow, got.Body)
	if err != nil {
		t.Fatal(err)
	}
	if sig := got.Header.Get("Webhook-Signature"); sig != want {
		t.Fatalf("webhook-signature %q, the library signs %q", sig, want)
	}
	// The library refuses it as too old: its clock is the real one.
	if err := wh.Verify(got.Body, got.Header); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Fatalf("Verify with a 2025 timestamp: %v, want ErrMessageTooOld", err)
	}
}

// TestSecretKeys: a whsec_ secret is base64-decoded, any other secret is
// its bytes; a secret that cannot sign is an error that does not show it.
func TestSecretKeys(t *testing.T) {
	rc := newReceiver(t, nil)
	t.Run("raw secret", func(t *testing.T) {
		s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: "not-base64 secret!"}, AllowPrivate: true})
		if _, err := deliver(s, testEnvelope()); err != nil {
			t.Fatal(err)
		}
		verifySignature(t, []byte("not-base64 secret!"), rc.last(t), true)
	})
	t.Run("bad whsec at New", func(t *testing.T) {
		const secret = "whsec_***not base64***"
		_, err := New(Options{Spec: config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: secret}}})
		if err == nil || !strings.HasPrefix(err.Error(), "secret: ") || strings.Contains(err.Error(), "not base64***") {
			t.Fatalf("New: %v, want a secret: error without the secret", err)
		}
	})
	t.Run("bad whsec per hook", func(t *testing.T) {
		s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: "whsec_{params.app_id}!!"}, AllowPrivate: true})
		n := len(rc.requests())
		_, err := deliver(s, testEnvelope())
		de := asError(t, err)
		if !de.Permanent || strings.Contains(err.Error(), "a1!!") || len(rc.requests()) != n {
			t.Fatalf("error %v (permanent %v), requests %d→%d; want a permanent error without the secret and no request", err, de.Permanent, n, len(rc.requests()))
		}
	})
	t.Run("empty expansion", func(t *testing.T) {
		s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: "{params.nope}"}, AllowPrivate: true})
		_, err := deliver(s, testEnvelope())
		if de := asError(t, err); !de.Permanent || !strings.Contains(err.Error(), "expands to nothing") {
			t.Fatalf("error %v, want a permanent empty-secret error", err)
		}
	})
}

// TestSignatureNotInMessages: no error message holds the secret.
func TestSignatureNotInMessages(t *testing.T) {
	const secret = "whsec_c2VjcmV0LWtleS1mb3ItdGVzdHM="
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte("bad signature " + r.Header.Get("Webhook-Signature")))
	})
	s := newSink(t, config.Sink{URL: "http://" + rc.addr() + "/", Secret: config.Secret{Value: secret}, AllowPrivate: true})
	d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Deliver(ctx, d)
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("error %v", err)
	}
}
