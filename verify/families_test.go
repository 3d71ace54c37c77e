package verify_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// TestStandardWebhooksV1a checks the asymmetric variant: a whpk_ public
// key verifies "v1a,<base64 Ed25519>" over id.timestamp.body, next to a
// whsec_ secret (rotation from one to the other).
func TestStandardWebhooksV1a(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	body, tn := `{"type":"x"}`, ts(now)
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(swID+"."+tn+"."+body)))
	v := mustNew(t, config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets("whpk_" + base64.StdEncoding.EncodeToString(pub))})
	h := func(s string) verify.Headers { return swHdr(swID, tn, s) }
	run(t, v, []vcase{
		{name: "v1a", h: h("v1a," + sig), body: body},
		{name: "v1a after a v1", h: h("v1,AAAA v1a," + sig), body: body},
		{name: "v1a signature as v1", h: h("v1," + sig), body: body, want: verify.ErrMismatch},
		{name: "v1a over another body", h: h("v1a," + sig), body: body + " ", want: verify.ErrMismatch},
		{name: "v1a truncated", h: h("v1a," + sig[:20]), body: body, want: verify.ErrMismatch},
	})
	if _, err := verify.New(config.Verify{Type: "standardwebhooks", Secret: secret("whpk_AAAA")}); err == nil || !strings.HasPrefix(err.Error(), "verify.secret:") {
		t.Fatalf("a short whpk_ key: %v", err)
	}
}

// twilioSig signs as Twilio's documentation describes: the URL, then
// each parameter's name and value sorted by name.
func twilioSig(token, url string, kv ...string) string {
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte(url))
	for _, s := range kv {
		m.Write([]byte(s))
	}
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestTwilioBodySHA256 checks the JSON variant: the URL carries
// bodySHA256, the signature covers the URL alone, the body its hash.
func TestTwilioBodySHA256(t *testing.T) {
	body := `{"CallSid":"CA1"}`
	sum := sha256.Sum256([]byte(body))
	u := "https://hooks.example.com/in/twilio?bodySHA256=" + hex.EncodeToString(sum[:])
	v := mustNew(t, config.Verify{Type: "twilio", Secret: secret("old-token"), Secrets: secrets("tok"), URL: u})
	sig := twilioSig("tok", u)
	run(t, v, []vcase{
		{name: "signed", h: header("X-Twilio-Signature", sig, "Content-Type", "application/json"), body: body},
		{name: "body changed", h: header("X-Twilio-Signature", sig, "Content-Type", "application/json"), body: body + " ", want: verify.ErrMismatch},
		{name: "map headers, verify.url set", h: mapHeaders{"X-Twilio-Signature": []byte(sig)}, body: body},
		{name: "no signature", h: header("Content-Type", "application/json"), body: body, want: verify.ErrMissing},
	})
	bad := "https://hooks.example.com/in/twilio?bodySHA256=zz"
	v = mustNew(t, config.Verify{Type: "twilio", Secret: secret("tok"), URL: bad})
	run(t, v, []vcase{{name: "bodySHA256 not hex", h: header("X-Twilio-Signature", twilioSig("tok", bad)), body: body, want: verify.ErrMalformed}})
}

// TestURLNeedsRequest: a template with {url} and no verify.url reads
// Host and URI from the request; headers that are not one cannot give
// them, which is ErrMissing, never a guess.
func TestURLNeedsRequest(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "square", Secret: secret("k")})
	err := v.Verify(mapHeaders{"X-Square-Hmacsha256-Signature": []byte("AAAA")}, []byte("{}"), now)
	checkErr(t, err, verify.ErrMissing)
}

// TestCredentialRotation: token and basic accept any configured secret.
func TestCredentialRotation(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "gitlab", Secret: secret("old"), Secrets: secrets("new")})
	run(t, v, []vcase{
		{name: "old", h: header("X-Gitlab-Token", "old"), body: "{}"},
		{name: "new", h: header("X-Gitlab-Token", "new"), body: "{}"},
		{name: "neither", h: header("X-Gitlab-Token", "ne"), body: "{}", want: verify.ErrMismatch},
	})
	b := mustNew(t, config.Verify{Type: "postmark", Secret: secret("u:old"), Secrets: secrets("u:new")})
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	run(t, b, []vcase{
		{name: "old", h: header("Authorization", basic("u:old")), body: "{}"},
		{name: "new, scheme lower case", h: header("Authorization", strings.ToLower("BASIC ")+base64.StdEncoding.EncodeToString([]byte("u:new"))), body: "{}"},
		{name: "no colon", h: header("Authorization", basic("unew")), body: "{}", want: verify.ErrMalformed},
		{name: "not base64", h: header("Authorization", "Basic ***"), body: "{}", want: verify.ErrMalformed},
	})
}

// TestBodyHMACRefusals: a body-hmac preset's body must be JSON and carry
// the signature.
func TestBodyHMACRefusals(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "mailgun", Secret: secret("k")})
	run(t, v, []vcase{
		{name: "not JSON", h: header(), body: "signature=x", want: verify.ErrMalformed},
		{name: "no signature", h: header(), body: `{"signature":{"timestamp":"1700000000","token":"t"}}`, want: verify.ErrMissing},
		{name: "signature not hex", h: header(), body: `{"signature":{"timestamp":"1700000000","token":"t","signature":"zz"}}`, want: verify.ErrMalformed},
		{name: "old timestamp", h: header(), body: `{"signature":{"timestamp":"1600000000","token":"t","signature":"00"}}`, want: verify.ErrExpired},
	})
}

// TestPresetNewErrors: what New refuses for a preset, by the key at fault.
func TestPresetNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     config.Verify
		field string
		also  []string
	}{
		{"unknown type has a hint", config.Verify{Type: "stripey", Secret: secret("s")}, "verify.type", []string{"stripey", "ankusa presets"}},
		{"url on a preset that does not sign it", config.Verify{Type: "github", Secret: secret("s"), URL: "https://x.example/h"}, "verify.url", []string{"github"}},
		{"url on hmac", config.Verify{Type: "hmac", Header: "X-S", Secret: secret("s"), URL: "https://x.example/h"}, "verify.url", nil},
		{"hmac key on a preset", config.Verify{Type: "stripe", Secret: secret("s"), Header: "X-Sig"}, "verify.header", []string{"stripe", "type hmac"}},
		{"signed_content on a preset", config.Verify{Type: "slack", Secret: secret("s"), SignedContent: "{body}"}, "verify.signed_content", nil},
		{"allow_sha1 off github", config.Verify{Type: "stripe", Secret: secret("s"), AllowSHA1: true}, "verify.allow_sha1", nil},
		{"ed25519 key not a key", config.Verify{Type: "discord", Secret: secret("abcd")}, "verify.secret", []string{"public key"}},
		{"ecdsa key not a key", config.Verify{Type: "sendgrid", Secret: secret("AAAA")}, "verify.secret", []string{"P-256"}},
		{"basic secret without colon", config.Verify{Type: "postmark", Secret: secret("userpass")}, "verify.secret", []string{"user:password"}},
		{"adyen key not hex", config.Verify{Type: "adyen", Secret: secret("not hex")}, "verify.secret", []string{"hex"}},
		{"svix secret not base64", config.Verify{Type: "svix", Secret: secret("whsec_***")}, "verify.secret", nil},
		{"tolerance on a preset without a timestamp", config.Verify{Type: "github", Secret: secret("s"), Tolerance: config.Duration(10 * time.Minute)}, "verify.tolerance", []string{"github"}},
		{"tolerance on a token preset", config.Verify{Type: "gitlab", Secret: secret("s"), Tolerance: config.Duration(time.Minute)}, "verify.tolerance", nil},
		{"tolerance on none", config.Verify{Type: "none", Tolerance: config.Duration(time.Minute)}, "verify.tolerance", nil},
		{"tolerance on hmac without timestamp_header", config.Verify{Type: "hmac", Header: "X-S", Secret: secret("s"), Tolerance: config.Duration(time.Minute)}, "verify.tolerance", []string{"timestamp_header"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := verify.New(tc.c)
			if err == nil {
				t.Fatalf("New accepted it: %s", v.Name())
			}
			if !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Fatalf("error %q does not start with %q", err, tc.field+":")
			}
			errContains(t, err, tc.also...)
		})
	}
}

// TestAutoDedupeKey: auto is the preset's id.
func TestAutoDedupeKey(t *testing.T) {
	for typ, want := range map[string]string{
		"stripe": "json:id", "github": "header:X-GitHub-Delivery", "shopify": "header:X-Shopify-Webhook-Id",
		"standardwebhooks": "header:webhook-id", "svix": "header:svix-id",
	} {
		if got, ok := verify.AutoDedupeKey(typ); !ok || got != want {
			t.Errorf("AutoDedupeKey(%q) = %q, %v; want %q", typ, got, ok, want)
		}
	}
	for _, typ := range []string{"none", "hmac", "postmark", "nope"} {
		if got, ok := verify.AutoDedupeKey(typ); ok {
			t.Errorf("AutoDedupeKey(%q) = %q; want none", typ, got)
		}
	}
}

// TestTwilioUnsignedBody: Twilio signs a body only as form parameters or
// through bodySHA256. A body of another type next to a signature over the
// URL alone is refused, and the form's parameters moved into the query
// (the signature has no boundary between URL and parameters) do not sign
// a JSON body.
func TestTwilioUnsignedBody(t *testing.T) {
	req := func(uri, sig, ctype string) *fasthttp.RequestHeader {
		h := header("X-Twilio-Signature", sig, "Content-Type", ctype)
		h.SetHost("mycompany.com")
		h.SetRequestURI(uri)
		return h
	}
	v := mustNew(t, config.Verify{Type: "twilio", Secret: secret("12345")})
	bare := "/myapp.php?foo=1&bar=2"
	sig := twilioSig("12345", "https://mycompany.com"+bare)
	moved := bare + "CallSidCA1234567890ABCDECaller+14158675310Digits1234From+14158675310To+18005551212"
	published := twilioSig("12345", "https://mycompany.com"+bare,
		"CallSid", "CA1234567890ABCDE", "Caller", "+14158675310", "Digits", "1234", "From", "+14158675310", "To", "+18005551212")
	run(t, v, []vcase{
		{name: "no body, URL signed", h: req(bare, sig, "text/plain"), body: ""},
		{name: "text body, URL signed", h: req(bare, sig, "text/plain"), body: "anything", want: verify.ErrMismatch},
		{name: "json body, URL signed", h: req(bare, sig, "application/json"), body: `{"a":1}`, want: verify.ErrMismatch},
		{name: "form parameters moved into the query", h: req(moved, published, "application/json"), body: `{"anything":"attacker"}`, want: verify.ErrMismatch},
	})
}

// TestTwilioURLWithRequestQuery: behind a balancer verify.url gives the
// address Twilio was given, and the request's own query (bodySHA256 on a
// JSON request) is what Twilio signed after it.
func TestTwilioURLWithRequestQuery(t *testing.T) {
	body := `{"CallSid":"CA1"}`
	sum := sha256.Sum256([]byte(body))
	q := "bodySHA256=" + hex.EncodeToString(sum[:])
	base := "https://hooks.example.com/in/twilio"
	v := mustNew(t, config.Verify{Type: "twilio", Secret: secret("tok"), URL: base})
	h := header("X-Twilio-Signature", twilioSig("tok", base+"?"+q), "Content-Type", "application/json")
	h.SetHost("10.0.0.7:8080")
	h.SetRequestURI("/in/twilio?" + q)
	run(t, v, []vcase{
		{name: "signed", h: h, body: body},
		{name: "body changed", h: h, body: body + " ", want: verify.ErrMismatch},
	})
}

// TestTwilioFormOrder: the form is signed sorted by name, then value,
// whatever order it is posted in; the parser reads an ordered form in one
// pass and sorts only a form it finds out of order, so each case below
// leaves that order at another place (first pair, last pair, equal names
// with values out of order, an escaped name that sorts differently
// decoded), and each is accepted signed by the reference and refused
// with its last byte changed.
func TestTwilioFormOrder(t *testing.T) {
	const u = "https://hooks.example.com/in/twilio"
	v := mustNew(t, config.Verify{Type: "twilio", Secret: secret("tok"), URL: u})
	for _, body := range []string{
		"AccountSid=AC1&CallSid=CA1&From=%2B15550001&To=%2B15550002",
		"To=%2B15550002&AccountSid=AC1&CallSid=CA1&From=%2B15550001",
		"AccountSid=AC1&CallSid=CA1&To=%2B15550002&From=%2B15550001",
		"a=2&a=1&b=0",
		"a=1&a=2&a=10",
		"%41b=1&Ab=2&B=3", // "Ab" twice, then "B" ('B' < 'b'): out of order only once decoded
		"b=1&&a=2&",       // empty pairs are skipped, as ParseQuery skips them
		"x=a%3Db&x=a=c",   // a value may hold '='
	} {
		form, err := url.ParseQuery(body)
		if err != nil {
			t.Fatal(err)
		}
		h := header("X-Twilio-Signature", twilioRef("tok", u, form), "Content-Type", "application/x-www-form-urlencoded")
		changed := body[:len(body)-1] + "Z" // the last value, or a pair added
		run(t, v, []vcase{
			{name: body, h: h, body: body},
			{name: body + " changed", h: h, body: changed, want: verify.ErrMismatch},
		})
	}
}
