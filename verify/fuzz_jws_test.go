package verify_test

import (
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

// FuzzJWSHeader fuzzes Netlify's token: its JOSE header and claims (JSON
// text, signed with the right key when sign is set) and the body; and the
// same bytes as a raw token. An accepted token is one encoding/json reads
// as alg HS256 without crit, iss netlify and the body's hex SHA-256,
// whose signature is the HMAC of its first two segments.
func FuzzJWSHeader(f *testing.F) {
	f.Add(`{"alg":"HS256","typ":"JWT"}`, `{"iss":"netlify","sha256":"{hash}"}`, true, []byte("body"))
	f.Add(`{"alg":"none"}`, `{"iss":"netlify","sha256":"{hash}"}`, true, []byte(""))
	f.Add(`{"alg":"HS256","alg":"none"}`, `{"iss":"netlify","sha256":"{hash}","sha256":"00"}`, true, []byte("{}"))
	f.Add(`{"alg":"HS256","crit":["b64"],"b64":false}`, `{"iss":"netlify","sha256":"{HASH}"}`, true, []byte("x"))
	f.Add(`{"alg":"ES256"}`, `{"iss":"netlify"}`, false, []byte("x"))
	f.Add(`eyJhbGciOiJIUzI1NiJ9.e30.`, ``, false, []byte(""))
	const key = "fuzz-secret"
	v := mustNew(f, config.Verify{Type: "netlify", Secret: secret(key)})
	f.Fuzz(func(t *testing.T, hdr, claims string, sign bool, body []byte) {
		sum := sha256.Sum256(body)
		hash := fmt.Sprintf("%x", sum)
		claims = strings.NewReplacer("{hash}", hash, "{HASH}", strings.ToUpper(hash)).Replace(claims)
		in := b64u([]byte(hdr)) + "." + b64u([]byte(claims))
		sig := "AAAA"
		if sign {
			m := hmac.New(sha256.New, []byte(key))
			m.Write([]byte(in))
			sig = b64u(m.Sum(nil))
		}
		for _, tok := range []string{in + "." + sig, hdr} {
			err := v.Verify(mapHeaders{"X-Webhook-Signature": []byte(tok)}, body, now)
			checkSentinel(t, err)
			if err != nil {
				continue
			}
			parts := strings.Split(strings.TrimSpace(tok), ".")
			if len(parts) != 3 {
				t.Fatalf("accepted %q: not three segments", tok)
			}
			m := hmac.New(sha256.New, []byte(key))
			m.Write([]byte(parts[0] + "." + parts[1]))
			if got, _ := base64.RawURLEncoding.DecodeString(parts[2]); !hmac.Equal(got, m.Sum(nil)) {
				t.Fatalf("accepted %q: its signature is not the HMAC of its segments", tok)
			}
			hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
			cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var h map[string]any
			var c map[string]any
			if json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil {
				// fastjson is more lenient than encoding/json; what it
				// accepted was still signed, which is checked above.
				continue
			}
			if h["alg"] != "HS256" || h["crit"] != nil {
				t.Fatalf("accepted header %s", hb)
			}
			if c["iss"] != "netlify" || !strings.EqualFold(fmt.Sprint(c["sha256"]), hash) {
				t.Fatalf("accepted claims %s for a body hashing to %s", cb, hash)
			}
		}
	})
}

// FuzzRSASignature fuzzes PayPal's signature, transmission id and time and
// the body: an accepted delivery is one crypto/rsa verifies over
// "<id>|<time>|<webhook id>|<crc32 of the body>".
func FuzzRSASignature(f *testing.F) {
	tm := now.UTC().Format(time.RFC3339)
	f.Add("{sig}", "69cd13f0-d67a-11e5-baa3-778b53f4ae55", tm, []byte(`{"id":"WH-1"}`))
	f.Add("{sig}==", "t", tm, []byte(""))
	f.Add("***", "t", "2023-11-14T22:13:20+00:00", []byte("x"))
	f.Add("", "", "", []byte(nil))
	rk := testRSA(f)
	const wid = "WH1FUZZ"
	v := mustNew(f, config.Verify{Type: "paypal", Secret: secret(rk.pub), WebhookID: wid})
	f.Fuzz(func(t *testing.T, sigTmpl, tid, tmv string, body []byte) {
		good := paypalSig(t, rk.k, tid, tmv, wid, string(body))
		sigHdr := strings.ReplaceAll(sigTmpl, "{sig}", good)
		h := mapHeaders{"Paypal-Transmission-Id": []byte(tid), "Paypal-Transmission-Time": []byte(tmv),
			"Paypal-Auth-Algo": []byte("SHA256withRSA"), "Paypal-Transmission-Sig": []byte(sigHdr)}
		err := v.Verify(h, body, now)
		checkSentinel(t, err)
		if err != nil {
			if sigTmpl == "{sig}" && tid != "" {
				if _, perr := time.Parse(time.RFC3339, tmv); perr == nil && len(tmv) <= 40 {
					t.Fatalf("PayPal's own signature is refused: %v", err)
				}
			}
			return
		}
		sig, derr := base64.StdEncoding.DecodeString(sigHdr)
		if derr != nil {
			t.Fatalf("accepted a signature that is not base64: %q", sigHdr)
		}
		msg := fmt.Sprintf("%s|%s|%s|%d", tid, tmv, wid, crc32.ChecksumIEEE(body))
		sum := sha256.Sum256([]byte(msg))
		if rsa.VerifyPKCS1v15(&rk.k.PublicKey, crypto.SHA256, sum[:], sig) != nil {
			t.Fatalf("accepted a signature crypto/rsa refuses over %q", msg)
		}
	})
}
