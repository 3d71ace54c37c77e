package verify_test

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/ankusa/ankusa/config"
)

// The fuzz targets take header templates: "{t}" becomes the current
// timestamp and "{sig}" / "{sig2}" a signature the reference library made
// over the fuzzed body with the first / second secret, so the fuzzer can
// wrap valid signatures in arbitrary bytes as well as try arbitrary ones.
// Seeds live in testdata/fuzz/<target>/.

// FuzzStripeHeader checks that Verify never panics, answers with one of the
// sentinels, accepts only what the reference computation (stripe-go's
// ComputeSignature) calls valid, and accepts what stripe-go accepts.
func FuzzStripeHeader(f *testing.F) {
	f.Add("t={t},v1={sig}", []byte(stripeBody))
	f.Add("t={t},v1={sig2},v0={sig}", []byte(""))
	v := mustNew(f, config.Verify{Type: "stripe", Secret: secret(stripeOld), Secrets: secrets(stripeNew)})
	f.Fuzz(func(t *testing.T, tmpl string, body []byte) {
		hdr := strings.NewReplacer(
			"{t}", ts(now),
			"{sig}", hex.EncodeToString(webhook.ComputeSignature(now, body, stripeOld)),
			"{sig2}", hex.EncodeToString(webhook.ComputeSignature(now, body, stripeNew)),
		).Replace(tmpl)
		err := v.Verify(mapHeaders{"Stripe-Signature": []byte(hdr)}, body, now)
		checkSentinel(t, err)
		ref := stripeRef(hdr, body)
		if err == nil && !ref {
			t.Fatalf("accepted %q over %q; the reference computation says it is not signed", hdr, body)
		}
		if err != nil && stripeGoAccepts(hdr, body) {
			t.Fatalf("rejected %q over %q (%v); stripe-go accepts it", hdr, body, err)
		}
	})
}

// stripeRef is Stripe's documented scheme, written out independently:
// comma-separated k=v items, the t item's value in unix seconds within the
// tolerance, and a v1 item whose hex is ComputeSignature(t, body, secret).
func stripeRef(hdr string, body []byte) bool {
	var t string
	var sigs [][]byte
	for _, item := range strings.Split(hdr, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			t = val
		case "v1":
			if s, err := hex.DecodeString(val); err == nil {
				sigs = append(sigs, s)
			}
		}
	}
	at, ok := canonicalUnix(t)
	if !ok || !within(at) {
		return false
	}
	for _, s := range sigs {
		for _, secret := range []string{stripeOld, stripeNew} {
			if hmac.Equal(s, webhook.ComputeSignature(at, body, secret)) {
				return true
			}
		}
	}
	return false
}

// stripeGoAccepts is stripe-go's own verdict, restricted to headers as
// Stripe writes them (no whitespace, a canonical t within the tolerance
// both ways): outside that the two parsers may differ harmlessly.
func stripeGoAccepts(hdr string, body []byte) bool {
	if strings.ContainsFunc(hdr, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return false
	}
	var t string
	for _, item := range strings.Split(hdr, ",") {
		if k, val, _ := strings.Cut(item, "="); k == "t" {
			t = val
		}
	}
	if at, ok := canonicalUnix(t); !ok || !within(at) {
		return false
	}
	for _, secret := range []string{stripeOld, stripeNew} {
		if webhook.ValidatePayloadIgnoringTolerance(body, hdr, secret) == nil {
			return true
		}
	}
	return false
}

// FuzzStandardWebhooksHeader is FuzzStripeHeader for Standard Webhooks: the
// id, the timestamp and the signature header are all fuzzed.
func FuzzStandardWebhooksHeader(f *testing.F) {
	f.Add(swID, "{t}", "v1,{sig}", []byte(swBody))
	f.Add("msg_1", "{t}", "v1a,{sig} v1,{sig2}", []byte(""))
	v := mustNew(f, config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets(swNew)})
	old, err := standardwebhooks.NewWebhook(swOld)
	if err != nil {
		f.Fatal(err)
	}
	neu, err := standardwebhooks.NewWebhook(swNew)
	if err != nil {
		f.Fatal(err)
	}
	libs := []*standardwebhooks.Webhook{old, neu}
	f.Fuzz(func(t *testing.T, id, tsTmpl, sigTmpl string, body []byte) {
		sign := func(wh *standardwebhooks.Webhook) string {
			s, err := wh.Sign(id, now, body)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimPrefix(s, "v1,")
		}
		tsv := strings.ReplaceAll(tsTmpl, "{t}", ts(now))
		sig := strings.NewReplacer("{sig}", sign(old), "{sig2}", sign(neu)).Replace(sigTmpl)
		h := mapHeaders{"Webhook-Id": []byte(id), "Webhook-Timestamp": []byte(tsv), "Webhook-Signature": []byte(sig)}
		err := v.Verify(h, body, now)
		checkSentinel(t, err)
		if err == nil && !swRef(libs, id, tsv, sig, body) {
			t.Fatalf("accepted id %q ts %q sig %q over %q; the reference computation says it is not signed", id, tsv, sig, body)
		}
		if err != nil && swLibAccepts(libs, id, tsv, sig, body) {
			t.Fatalf("rejected id %q ts %q sig %q over %q (%v); the library accepts it", id, tsv, sig, body, err)
		}
	})
}

// swRef is the Standard Webhooks scheme: a canonical timestamp within the
// tolerance and a space-separated "v1,<base64>" entry whose bytes are the
// MAC the library's Sign computes.
func swRef(libs []*standardwebhooks.Webhook, id, tsv, sig string, body []byte) bool {
	at, ok := canonicalUnix(tsv)
	if id == "" || !ok || !within(at) {
		return false
	}
	for _, e := range strings.Split(sig, " ") {
		b64, ok := strings.CutPrefix(e, "v1,")
		if !ok {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		for _, wh := range libs {
			s, _ := wh.Sign(id, at, body)
			want, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "v1,"))
			if bytes.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// swLibAccepts is the library's own verdict, restricted to headers as the
// specification writes them: a canonical timestamp within the tolerance
// both ways, and entries of exactly "version,signature".
func swLibAccepts(libs []*standardwebhooks.Webhook, id, tsv, sig string, body []byte) bool {
	at, ok := canonicalUnix(tsv)
	if !ok || !within(at) {
		return false
	}
	for _, e := range strings.Split(sig, " ") {
		if strings.Count(e, ",") > 1 {
			return false
		}
	}
	hh := http.Header{}
	hh.Set("webhook-id", id)
	hh.Set("webhook-timestamp", tsv)
	hh.Set("webhook-signature", sig)
	for _, wh := range libs {
		if wh.VerifyIgnoringTimestamp(body, hh) == nil {
			return true
		}
	}
	return false
}

// canonicalUnix parses decimal unix seconds written the way a signer
// writes them (no sign, no leading zeros).
func canonicalUnix(s string) (time.Time, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

func within(at time.Time) bool {
	d := now.Sub(at)
	return d <= tol && d >= -tol
}

// checkSentinel asserts that a rejection is one of the four sentinels.
func checkSentinel(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("Verify returned %v, which is none of the sentinels", err)
}
