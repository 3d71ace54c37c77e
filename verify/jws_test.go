package verify_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// b64u is unpadded base64url, JWS's encoding.
func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// hsToken is a compact JWS of the given header and claims (JSON text),
// HS256 under key.
func hsToken(key, hdr, claims string) string {
	in := b64u([]byte(hdr)) + "." + b64u([]byte(claims))
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(in))
	return in + "." + b64u(m.Sum(nil))
}

func bodyHash(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

// esToken is a compact JWS, ES256 under k (r||s as JWS writes it).
func esToken(t testing.TB, k *ecdsa.PrivateKey, hdr, claims string) string {
	t.Helper()
	in := b64u([]byte(hdr)) + "." + b64u([]byte(claims))
	sum := sha256.Sum256([]byte(in))
	r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	var raw [64]byte
	r.FillBytes(raw[:32])
	s.FillBytes(raw[32:])
	return in + "." + b64u(raw[:])
}

func pemPublic(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func jwkOf(k *ecdsa.PublicKey, extra string) string {
	x, y := coords(k)
	return fmt.Sprintf(`{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","x":%q,"y":%q%s}`, b64u(x), b64u(y), extra)
}

// coords are a P-256 key's x and y, 32 bytes each (its uncompressed form
// is 0x04 || x || y).
func coords(k *ecdsa.PublicKey) (x, y []byte) {
	b, err := k.Bytes()
	if err != nil || len(b) != 65 {
		panic("BUG: not a P-256 public key")
	}
	return b[1:33], b[33:]
}

// TestJWSKeysRefused: an ES256 preset's secrets are P-256 public keys
// (PEM, base64 DER, a JWK or Plaid's answer holding one); anything else
// is refused at build, naming verify.secret and which secret.
func TestJWSKeysRefused(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	good := jwkOf(&k.PublicKey, "")
	for _, tc := range []struct {
		name, secret string
		words        []string
	}{
		{"not PEM nor JSON", "hello", []string{"verify.secret", "secret 2", "ES256"}},
		{"JSON but not an object", `{"kty":`, []string{"verify.secret", "secret 2", "JSON"}},
		{"P-384 PEM", pemPublic(t, &k384.PublicKey), []string{"verify.secret", "P-256"}},
		{"JWK of another curve", strings.Replace(good, "P-256", "P-384", 1), []string{"verify.secret", "crv"}},
		{"JWK of another alg", strings.Replace(good, `"ES256"`, `"RS256"`, 1), []string{"verify.secret", "alg"}},
		{"private JWK", jwkOf(&k.PublicKey, `,"d":"AAAA"`), []string{"verify.secret", "private"}},
		{"expired JWK", `{"key":` + jwkOf(&k.PublicKey, `,"expired_at":1700000000`) + `,"request_id":"r"}`, []string{"verify.secret", "expired_at"}},
		{"JWK off the curve", strings.Replace(good, b64u(func() []byte { _, y := coords(&k.PublicKey); return y }())[:4], "AAAA", 1), []string{"verify.secret", "P-256"}},
		{"JWK x too short", `{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}`, []string{"verify.secret", "32 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify.New(config.Verify{Type: "plaid", Secret: secret(good), Secrets: secrets(tc.secret)})
			errContains(t, err, tc.words...)
		})
	}
	// The three accepted forms build, and each verifies.
	body := `{"webhook_code":"DEFAULT_UPDATE"}`
	tok := esToken(t, k, `{"alg":"ES256","typ":"JWT"}`, fmt.Sprintf(`{"iat":%d,"request_body_sha256":%q}`, now.Unix(), bodyHash(body)))
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	for _, s := range []string{good, `{"key":` + jwkOf(&k.PublicKey, `,"expired_at":null`) + `}`, pemPublic(t, &k.PublicKey), base64.StdEncoding.EncodeToString(der)} {
		v := mustNew(t, config.Verify{Type: "plaid", Secret: secret(s)})
		if err := v.Verify(mapHeaders{"Plaid-Verification": []byte(tok)}, []byte(body), now); err != nil {
			t.Errorf("key %.30q: %v", s, err)
		}
	}
}

// TestJWSTokens: what the token itself may and may not be.
func TestJWSTokens(t *testing.T) {
	const key = "nl-secret"
	v := mustNew(t, config.Verify{Type: "netlify", Secret: secret("old-secret"), Secrets: secrets(key)})
	body := `{"id":"d1","state":"ready"}`
	hdr := `{"alg":"HS256","typ":"JWT"}`
	claims := func(extra string) string {
		return `{"iss":"netlify","sha256":"` + bodyHash(body) + `"` + extra + `}`
	}
	h := func(tok string) verify.Headers { return mapHeaders{"X-Webhook-Signature": []byte(tok)} }
	big := hsToken(key, hdr, claims(`,"pad":"`+strings.Repeat("x", 3100)+`"`))
	run(t, v, []vcase{
		{name: "second secret (rotation)", h: h(hsToken(key, hdr, claims(""))), body: body},
		{name: "first secret", h: h(hsToken("old-secret", hdr, claims(""))), body: body},
		{name: "upper-case hex", h: h(hsToken(key, hdr, `{"iss":"netlify","sha256":"`+strings.ToUpper(bodyHash(body))+`"}`)), body: body},
		{name: "surrounding space", h: h(" " + hsToken(key, hdr, claims("")) + " "), body: body},
		{name: "over 4 KiB", h: h(big), body: body, want: verify.ErrMalformed},
		{name: "two segments", h: h(b64u([]byte(hdr)) + "." + b64u([]byte(claims("")))), body: body, want: verify.ErrMalformed},
		{name: "empty signature", h: h(b64u([]byte(hdr)) + "." + b64u([]byte(claims(""))) + "."), body: body, want: verify.ErrMalformed},
		{name: "padded segments", h: h(hsToken(key, hdr, claims("")) + "="), body: body, want: verify.ErrMalformed},
		{name: "header not an object", h: h(hsToken(key, `["HS256"]`, claims(""))), body: body, want: verify.ErrMalformed},
		{name: "alg lower case", h: h(hsToken(key, `{"alg":"hs256"}`, claims(""))), body: body, want: verify.ErrMalformed},
		{name: "no alg", h: h(hsToken(key, `{"typ":"JWT"}`, claims(""))), body: body, want: verify.ErrMalformed},
		{name: "claims not JSON", h: h(hsToken(key, hdr, `{"iss":`)), body: body, want: verify.ErrMalformed},
		{name: "hash claim absent", h: h(hsToken(key, hdr, `{"iss":"netlify"}`)), body: body, want: verify.ErrMissing},
		{name: "hash claim a number", h: h(hsToken(key, hdr, `{"iss":"netlify","sha256":1}`)), body: body, want: verify.ErrMalformed},
		{name: "hash claim short", h: h(hsToken(key, hdr, `{"iss":"netlify","sha256":"`+bodyHash(body)[:62]+`"}`)), body: body, want: verify.ErrMalformed},
		{name: "no iss", h: h(hsToken(key, hdr, `{"sha256":"`+bodyHash(body)+`"}`)), body: body, want: verify.ErrMismatch},
		{name: "iss twice", h: h(hsToken(key, hdr, claims(`,"iss":"other"`))), body: body, want: verify.ErrMalformed},
		{name: "too many members", h: h(hsToken(key, hdr, claims(manyMembers(40)))), body: body, want: verify.ErrMalformed},
		{name: "no header", h: mapHeaders{}, body: body, want: verify.ErrMissing},
	})
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `,"k%d":%d`, i, i)
	}
	return b.String()
}

// TestJWSIat: Plaid's iat within five minutes either way, a number.
func TestJWSIat(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	v := mustNew(t, config.Verify{Type: "plaid", Secret: secret(pemPublic(t, &k.PublicKey))})
	body := `{}`
	tok := func(iat string) verify.Headers {
		return mapHeaders{"Plaid-Verification": []byte(esToken(t, k, `{"alg":"ES256"}`, `{"iat":`+iat+`,"request_body_sha256":"`+bodyHash(body)+`"}`))}
	}
	run(t, v, []vcase{
		{name: "now", h: tok(ts(now)), body: body},
		{name: "five minutes old", h: tok(ts(now.Add(-5 * time.Minute))), body: body},
		{name: "five minutes and a second old", h: tok(ts(now.Add(-5*time.Minute - time.Second))), body: body, want: verify.ErrExpired},
		{name: "in the future", h: tok(ts(now.Add(6 * time.Minute))), body: body, want: verify.ErrExpired},
		{name: "a string", h: tok(`"` + ts(now) + `"`), body: body, want: verify.ErrMalformed},
		{name: "a fraction", h: tok(ts(now) + ".5"), body: body, want: verify.ErrMalformed},
	})
	// verify.tolerance overrides the preset's.
	v = mustNew(t, config.Verify{Type: "plaid", Secret: secret(pemPublic(t, &k.PublicKey)), Tolerance: config.Duration(time.Hour)})
	if err := v.Verify(tok(ts(now.Add(-30*time.Minute))), []byte(body), now); err != nil {
		t.Fatalf("verify.tolerance 1h, iat 30 min old: %v", err)
	}
}

// TestWebhookIDKey: verify.webhook_id is required by the presets that
// sign it and refused, naming it, by every other verifier.
func TestWebhookIDKey(t *testing.T) {
	_, err := verify.New(config.Verify{Type: "paypal", Secret: secret(testRSA(t).pub)})
	errContains(t, err, "verify.webhook_id", "required", "paypal")
	for _, c := range []config.Verify{
		{Type: "none", WebhookID: "W1"},
		{Type: "hmac", Secret: secret("s"), WebhookID: "W1"},
		{Type: "stripe", Secret: secret("whsec_x"), WebhookID: "W1"},
		{Type: "netlify", Secret: secret("s"), WebhookID: "W1"},
	} {
		_, err := verify.New(c)
		errContains(t, err, "verify.webhook_id", c.Type)
	}
}

// rsaKey is a test RSA key, generated once per test binary.
type rsaKey struct {
	k   *rsa.PrivateKey
	pub string // PEM PUBLIC KEY
}

var testRSA = func() func(testing.TB) rsaKey {
	var once sync.Once
	var rk rsaKey
	return func(t testing.TB) rsaKey {
		once.Do(func() {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			rk = rsaKey{k: k, pub: pemPublic(t, &k.PublicKey)}
		})
		return rk
	}
}()

// paypalSig is PayPal's signature of a delivery.
func paypalSig(t testing.TB, k *rsa.PrivateKey, tid, tm, wid, body string) string {
	t.Helper()
	msg := fmt.Sprintf("%s|%s|%s|%d", tid, tm, wid, crc32.ChecksumIEEE([]byte(body)))
	sum := sha256.Sum256([]byte(msg))
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// TestRSAKeysRefused: an rsa verifier's secrets are PEM certificates or
// RSA public keys of 2048 to 4096 bits.
func TestRSAKeysRefused(t *testing.T) {
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	for _, tc := range []struct {
		name, secret string
		words        []string
	}{
		{"not PEM", "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", []string{"verify.secret", "secret 1", "not PEM"}},
		{"a private key", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})), []string{"verify.secret", "PRIVATE KEY"}},
		{"a broken certificate", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})), []string{"verify.secret", "certificate"}},
		{"an EC key", pemPublic(t, &ek.PublicKey), []string{"verify.secret", "not an RSA key"}},
		{"1024 bits", pemPublic(t, &small.PublicKey), []string{"verify.secret", "1024 bits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify.New(config.Verify{Type: "paypal", Secret: secret(tc.secret), WebhookID: "W1"})
			errContains(t, err, tc.words...)
		})
	}
}

// TestRSARotation: PayPal's deliveries verify under either of two
// configured keys, PKCS#1 RSA PUBLIC KEY included; a key not configured
// fails.
func TestRSARotation(t *testing.T) {
	rk := testRSA(t)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&other.PublicKey)}))
	v := mustNew(t, config.Verify{Type: "paypal", Secret: secret(pkcs1), Secrets: secrets(rk.pub), WebhookID: "WH1"})
	tm := now.UTC().Format(time.RFC3339)
	body := `{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED"}`
	h := func(k *rsa.PrivateKey, wid string) verify.Headers {
		return mapHeaders{"Paypal-Transmission-Id": []byte("t-1"), "Paypal-Transmission-Time": []byte(tm),
			"Paypal-Auth-Algo": []byte("SHA256withRSA"), "Paypal-Transmission-Sig": []byte(paypalSig(t, k, "t-1", tm, wid, body))}
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	run(t, v, []vcase{
		{name: "the first key", h: h(other, "WH1"), body: body},
		{name: "the second key", h: h(rk.k, "WH1"), body: body},
		{name: "a key not configured", h: h(stranger, "WH1"), body: body, want: verify.ErrMismatch},
		{name: "another webhook id", h: h(rk.k, "WH2"), body: body, want: verify.ErrMismatch},
	})
	// No transmission-time tolerance unless verify.tolerance sets one.
	if err := v.Verify(h(rk.k, "WH1"), []byte(body), now.Add(72*time.Hour)); err != nil {
		t.Fatalf("three days later, no tolerance: %v", err)
	}
	vt := mustNew(t, config.Verify{Type: "paypal", Secret: secret(rk.pub), WebhookID: "WH1", Tolerance: config.Duration(10 * time.Minute)})
	if err := vt.Verify(h(rk.k, "WH1"), []byte(body), now.Add(11*time.Minute)); !errors.Is(err, verify.ErrExpired) {
		t.Fatalf("verify.tolerance 10m, 11 min later: %v, want ErrExpired", err)
	}
}

// TestPlaidRealToken: a token Plaid's sandbox sent, with the key
// /webhook_verification_key/get returned for its kid and the body it
// signed (two-space-indented JSON), as quoted in a question about Plaid's
// verification (https://coderapp.vercel.app/answer/62143991). It checks
// the preset against what Plaid really sends, r||s encoding included.
func TestPlaidRealToken(t *testing.T) {
	const answer = `{"key":{"alg":"ES256","created_at":1560466143,"crv":"P-256","expired_at":null,` +
		`"kid":"6c5516e1-92dc-479e-a8ff-5a51992e0001","kty":"EC","use":"sig",` +
		`"x":"35lvC8uz2QrWpQJ3TUH8t9o9DURMp7ydU518RKDl20k","y":"I8BuXB2bvxelzJAd7OKhd-ZwjCst05Fx47Mb_0ugros"},"request_id":"HvfCtrDLG1ihcp7"}`
	const tok = "eyJhbGciOiJFUzI1NiIsImtpZCI6IjZjNTUxNmUxLTkyZGMtNDc5ZS1hOGZmLTVhNTE5OTJlMDAwMSIsInR5cCI6IkpXVCJ9." +
		"eyJpYXQiOjE1OTA4ODcwMDEsInJlcXVlc3RfYm9keV9zaGEyNTYiOiJiNjNhMDdiNTQ3YjAwZjk5MjU0N2Y2YmJjOGQ5YWNjNjFhOGNjZWUxMzhiYzgyZjQ0YTZiYWEwOTY4M2E1ZDBmIn0." +
		"OOKvIihgqCj7Qrb2bmz7T3t7uK-0JyjiEqL2s1kWeJBM4MMmjaHKK8GmU_z91QolBWMzvPgs718EElY-rE3cwQ"
	const body = "{\n  \"error\": null,\n  \"item_id\": \"yxQbxDjnD8hr69pKbQpbcKeVn3GL9QuyA7NV3\",\n  \"new_transactions\": 390,\n" +
		"  \"webhook_code\": \"HISTORICAL_UPDATE\",\n  \"webhook_type\": \"TRANSACTIONS\"\n}"
	v := mustNew(t, config.Verify{Type: "plaid", Secret: secret(answer)})
	iat := time.Unix(1590887001, 0)
	h := mapHeaders{"Plaid-Verification": []byte(tok)}
	run(t, v, []vcase{
		{name: "as sent", h: h, body: body, at: iat.Add(3 * time.Second)},
		{name: "body re-serialised compactly", h: h, body: strings.NewReplacer("\n", "", "  ", "", ": ", ":").Replace(body), at: iat.Add(3 * time.Second), want: verify.ErrMismatch},
		{name: "an hour later", h: h, body: body, at: iat.Add(time.Hour), want: verify.ErrExpired},
	})
	if et, ok := v.(verify.EventTyper); !ok || string(et.AppendEventType(nil, h, []byte(body))) != "HISTORICAL_UPDATE" {
		t.Errorf("event type: not webhook_code")
	}
}
