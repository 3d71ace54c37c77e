package verify_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

// Fuzz targets of the preset families' parsers. Each checks that Verify
// never panics, answers with a sentinel, accepts nothing an independent
// reference (crypto/* and the provider's documented construction) calls
// unsigned, and accepts what the provider would send. "{sig}" in a
// template is the signature the reference computes.

// FuzzHMACListHeader fuzzes a list header with a key=value timestamp and
// several signatures (Stripe's shape, through the hmac family): whatever
// the items, an accepted header holds v1=<the MAC of t.body> next to the
// t= item that was signed.
func FuzzHMACListHeader(f *testing.F) {
	f.Add("t={t},v1={sig}", []byte("body"))
	f.Add("t={t}, v1=00 ,v1={sig},,v0={sig}", []byte(""))
	f.Add("v1={sig},t={t},t=1", []byte("{}"))
	v := mustNew(f, config.Verify{Type: "stripe", Secret: secret(stripeOld)})
	f.Fuzz(func(t *testing.T, tmpl string, body []byte) {
		tn := ts(now)
		sig := hmacHex(sha256.New, stripeOld, tn, ".", string(body))
		hdr := strings.NewReplacer("{t}", tn, "{sig}", sig).Replace(tmpl)
		err := v.Verify(mapHeaders{"Stripe-Signature": []byte(hdr)}, body, now)
		checkSentinel(t, err)
		if err != nil {
			if tmpl == "t={t},v1={sig}" {
				t.Fatalf("the header Stripe sends is refused: %v", err)
			}
			return
		}
		// Accepted: the last t= item is a timestamp whose MAC is listed.
		var tsv string
		for _, it := range strings.Split(hdr, ",") {
			if k, val, ok := strings.Cut(strings.TrimSpace(it), "="); ok && k == "t" {
				tsv = val
			}
		}
		want := "v1=" + hmacHex(sha256.New, stripeOld, tsv, ".", string(body))
		found := false
		for _, it := range strings.Split(hdr, ",") {
			if strings.EqualFold(strings.TrimSpace(it), want) {
				found = true
			}
		}
		if !found {
			t.Fatalf("accepted %q over %q: no v1 item is the MAC of t=%q", hdr, body, tsv)
		}
	})
}

// twilioRef is Twilio's documented construction over a form body.
func twilioRef(token, u string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var kv []string
	for _, k := range keys {
		vs := append([]string(nil), form[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			kv = append(kv, k, v)
		}
	}
	return twilioSig(token, u, kv...)
}

// FuzzTwilioParams fuzzes the form body and the signature header: a
// request is accepted exactly when the header is the reference's
// signature over the URL and the parsed, sorted parameters.
func FuzzTwilioParams(f *testing.F) {
	f.Add("CallSid=CA1&Digits=1234&From=%2B1", "{sig}")
	f.Add("a=1&a=0&b=", "{sig}")
	f.Add("x=%zz", "{sig}")
	f.Add("", "AAAA")
	f.Add(strings.Repeat("a=1&", 513), "{sig}")
	f.Add("a=1;b=2", "{sig}")
	const u = "https://hooks.example.com/in/twilio?x=1"
	v := mustNew(f, config.Verify{Type: "twilio", Secret: secret("tok"), URL: u})
	f.Fuzz(func(t *testing.T, body, tmpl string) {
		form, perr := url.ParseQuery(body)
		sig := tmpl
		if perr == nil {
			sig = strings.ReplaceAll(tmpl, "{sig}", twilioRef("tok", u, form))
		}
		h := mapHeaders{"X-Twilio-Signature": []byte(sig), "Content-Type": []byte("application/x-www-form-urlencoded")}
		err := v.Verify(h, []byte(body), now)
		checkSentinel(t, err)
		pairs := 0
		for _, kv := range strings.Split(body, "&") {
			if kv != "" {
				pairs++
			}
		}
		signed := perr == nil && sig == twilioRef("tok", u, form) && pairs <= 512
		if err == nil && !signed {
			t.Fatalf("accepted body %q sig %q", body, sig)
		}
		if err != nil && signed {
			t.Fatalf("refused (%v) body %q signed as Twilio does", err, body)
		}
	})
}

var fuzzEdPriv = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// FuzzEd25519Signature fuzzes Discord's hex signature and timestamp
// headers: an accepted request verifies under crypto/ed25519.
func FuzzEd25519Signature(f *testing.F) {
	f.Add("{sig}", "{t}", []byte(`{"type":1}`))
	f.Add("{sig}00", "{t}", []byte(""))
	f.Add("zz", "{t}", []byte("x"))
	f.Add("{sig}", "-1", []byte("x"))
	pub := fuzzEdPriv.Public().(ed25519.PublicKey)
	v := mustNew(f, config.Verify{Type: "discord", Secret: secret(hex.EncodeToString(pub))})
	f.Fuzz(func(t *testing.T, sigTmpl, tsTmpl string, body []byte) {
		tsv := strings.ReplaceAll(tsTmpl, "{t}", ts(now))
		good := hex.EncodeToString(ed25519.Sign(fuzzEdPriv, append([]byte(tsv), body...)))
		sig := strings.ReplaceAll(sigTmpl, "{sig}", good)
		err := v.Verify(mapHeaders{"X-Signature-Ed25519": []byte(sig), "X-Signature-Timestamp": []byte(tsv)}, body, now)
		checkSentinel(t, err)
		raw, derr := hex.DecodeString(sig)
		if err == nil && (derr != nil || !ed25519.Verify(pub, append([]byte(tsv), body...), raw)) {
			t.Fatalf("accepted sig %q ts %q body %q", sig, tsv, body)
		}
		if err != nil && sigTmpl == "{sig}" && tsTmpl == "{t}" {
			t.Fatalf("refused (%v) a signature made with the key", err)
		}
	})
}

// FuzzECDSASignature fuzzes SendGrid's base64 DER signature: an accepted
// request verifies under crypto/ecdsa.
func FuzzECDSASignature(f *testing.F) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), fuzzRand{})
	if err != nil {
		f.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("{sig}", []byte(`[{"event":"delivered"}]`))
	f.Add("MAYCAQECAQE=", []byte("x"))
	f.Add("{sig}AA", []byte(""))
	v := mustNew(f, config.Verify{Type: "sendgrid", Secret: secret(base64.StdEncoding.EncodeToString(der))})
	f.Fuzz(func(t *testing.T, sigTmpl string, body []byte) {
		tsv := ts(now)
		sum := sha256.Sum256(append([]byte(tsv), body...))
		good, err := ecdsa.SignASN1(fuzzRand{}, priv, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		sig := strings.ReplaceAll(sigTmpl, "{sig}", base64.StdEncoding.EncodeToString(good))
		verr := v.Verify(mapHeaders{"X-Twilio-Email-Event-Webhook-Signature": []byte(sig), "X-Twilio-Email-Event-Webhook-Timestamp": []byte(tsv)}, body, now)
		checkSentinel(t, verr)
		raw, derr := base64.StdEncoding.DecodeString(sig)
		if verr == nil && (derr != nil || !ecdsa.VerifyASN1(&priv.PublicKey, sum[:], raw)) {
			t.Fatalf("accepted sig %q body %q", sig, body)
		}
		if verr != nil && sigTmpl == "{sig}" {
			t.Fatalf("refused (%v) a signature made with the key", verr)
		}
	})
}

// fuzzRand is a deterministic reader for key generation in fuzz targets.
type fuzzRand struct{}

func (fuzzRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i*7 + 1)
	}
	return len(p), nil
}

// FuzzCredentialHeader fuzzes the token and basic families' header: it
// is accepted exactly when it carries a configured credential.
func FuzzCredentialHeader(f *testing.F) {
	f.Add("tok-1", "Basic dTpw")
	f.Add("", "basic   dTpw")
	f.Add("tok-2\x00", "Basic dTpw==")
	tok := mustNew(f, config.Verify{Type: "gitlab", Secret: secret("tok-1"), Secrets: secrets("tok-2")})
	basic := mustNew(f, config.Verify{Type: "postmark", Secret: secret("u:p"), Secrets: secrets("a:b:c")})
	f.Fuzz(func(t *testing.T, token, auth string) {
		err := tok.Verify(mapHeaders{"X-Gitlab-Token": []byte(token)}, nil, now)
		checkSentinel(t, err)
		if ok := token == "tok-1" || token == "tok-2"; (err == nil) != ok {
			t.Fatalf("token %q: %v", token, err)
		}
		err = basic.Verify(mapHeaders{"Authorization": []byte(auth)}, nil, now)
		checkSentinel(t, err)
		ok := false
		if len(auth) >= 6 && strings.EqualFold(auth[:6], "basic ") {
			if raw, derr := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(auth[6:])); derr == nil {
				ok = string(raw) == "u:p" || string(raw) == "a:b:c"
			}
		}
		if (err == nil) != ok {
			t.Fatalf("authorization %q: %v (reference: %v)", auth, err, ok)
		}
	})
}

// FuzzBodyHMACJSON fuzzes a Mailgun body: an accepted body's
// signature.signature is the hex MAC of its timestamp and token as
// encoding/json reads them.
func FuzzBodyHMACJSON(f *testing.F) {
	f.Add(`{"signature":{"timestamp":"{t}","token":"abc","signature":"{sig}"}}`, "abc")
	f.Add(`{"signature":{"timestamp":{t},"token":"ab\u0063","signature":"{sig}"}}`, "abc")
	f.Add(`{"signature":{"timestamp":"{t}","token":"abc","signature":"{sig}","signature":"00"}}`, "abc")
	f.Add(`[1,2`, "")
	v := mustNew(f, config.Verify{Type: "mailgun", Secret: secret("mg-key")})
	f.Fuzz(func(t *testing.T, tmpl, token string) {
		sig := hmacHex(sha256.New, "mg-key", ts(now), token)
		body := strings.NewReplacer("{t}", ts(now), "{sig}", sig).Replace(tmpl)
		err := v.Verify(mapHeaders{}, []byte(body), now)
		checkSentinel(t, err)
		if err != nil {
			return
		}
		var doc struct {
			Signature struct {
				Timestamp json.RawMessage `json:"timestamp"`
				Token     string          `json:"token"`
				Signature string          `json:"signature"`
			} `json:"signature"`
		}
		if jerr := json.Unmarshal([]byte(body), &doc); jerr != nil {
			// fastjson is more lenient than encoding/json; what it
			// accepted must still be the MAC of what it read.
			return
		}
		tsv := strings.Trim(string(doc.Signature.Timestamp), `"`)
		if want := hmacHex(sha256.New, "mg-key", tsv, doc.Signature.Token); !strings.EqualFold(doc.Signature.Signature, want) {
			t.Fatalf("accepted %q: signature is not the MAC of %q%q", body, tsv, doc.Signature.Token)
		}
	})
}
