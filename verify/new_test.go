package verify_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// TestNewErrorsNameTheField checks that every verify section New refuses
// is refused with an error that names the key an operator has to change.
func TestNewErrorsNameTheField(t *testing.T) {
	hmacOK := func(f func(*config.Verify)) config.Verify {
		c := config.Verify{Type: "hmac", Header: "X-Signature", Secret: secret("s")}
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name  string
		c     config.Verify
		field string
		also  []string
	}{
		{"stripe without secret", config.Verify{Type: "stripe"}, "verify.secret", []string{"stripe"}},
		{"github without secret", config.Verify{Type: "github"}, "verify.secret", nil},
		{"shopify without secret", config.Verify{Type: "shopify"}, "verify.secret", nil},
		{"slack without secret", config.Verify{Type: "slack"}, "verify.secret", nil},
		{"standardwebhooks without secret", config.Verify{Type: "standardwebhooks"}, "verify.secret", nil},
		{"hmac without secret", config.Verify{Type: "hmac", Header: "X-Signature"}, "verify.secret", nil},
		{"secret not resolved", config.Verify{Type: "stripe", Secret: config.Secret{Ref: "env:UNSET"}}, "verify.secret", nil},
		{"secrets all empty", config.Verify{Type: "github", Secrets: []config.Secret{{Ref: "env:A"}, {Ref: "env:B"}}}, "verify.secret", nil},

		{"standardwebhooks secret not base64", config.Verify{Type: "standardwebhooks", Secret: secret("whsec_not*base64!")}, "verify.secret", []string{"base64"}},
		{"standardwebhooks secret url-safe base64", config.Verify{Type: "standardwebhooks", Secret: secret("whsec_-_-_")}, "verify.secret", nil},
		{"standardwebhooks secret empty after prefix", config.Verify{Type: "standardwebhooks", Secret: secret("whsec_")}, "verify.secret", nil},
		{"standardwebhooks second secret bad", config.Verify{Type: "standardwebhooks", Secret: secret(swOld), Secrets: secrets("whsec_%%%")}, "verify.secret", []string{"2"}},

		{"hmac unknown algorithm", hmacOK(func(c *config.Verify) { c.Algorithm = "md5" }), "verify.algorithm", []string{"md5"}},
		{"hmac algorithm spelled upper", hmacOK(func(c *config.Verify) { c.Algorithm = "SHA256" }), "verify.algorithm", nil},
		{"hmac unknown encoding", hmacOK(func(c *config.Verify) { c.Encoding = "base32" }), "verify.encoding", []string{"base32"}},
		{"hmac without header", hmacOK(func(c *config.Verify) { c.Header = "" }), "verify.header", nil},
		{"hmac unknown placeholder", hmacOK(func(c *config.Verify) { c.SignedContent = "{ts}.{body}" }), "verify.signed_content", []string{"{ts}.{body}"}},
		{"hmac unterminated placeholder", hmacOK(func(c *config.Verify) { c.SignedContent = "{body" }), "verify.signed_content", nil},
		{"hmac timestamp_header but {timestamp} not signed", hmacOK(func(c *config.Verify) { c.TimestampHeader = "X-Timestamp" }), "verify.signed_content", []string{"{timestamp}"}},
		{"hmac {timestamp} without timestamp_header", hmacOK(func(c *config.Verify) { c.SignedContent = "{timestamp}.{body}" }), "verify.signed_content", []string{"verify.timestamp_header"}},
		{"hmac template too long", hmacOK(func(c *config.Verify) {
			c.TimestampHeader = "X-Timestamp"
			c.SignedContent = "a{body}b{timestamp}c{body}d"
		}), "verify.signed_content", nil},

		{"tolerance under a second", config.Verify{Type: "stripe", Secret: secret("whsec_a"), Tolerance: config.Duration(500 * time.Millisecond)}, "verify.tolerance", []string{"500ms"}},
		{"tolerance of a nanosecond", config.Verify{Type: "slack", Secret: secret("s"), Tolerance: config.Duration(1)}, "verify.tolerance", nil},

		{"unknown type", config.Verify{Type: "acmepay", Secret: secret("s")}, "verify.type", []string{"acmepay"}},
		{"unknown type without secret", config.Verify{Type: "acmepay"}, "verify.type", []string{"acmepay"}},
		{"empty type", config.Verify{Secret: secret("s")}, "verify.type", nil},
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
			for _, s := range sentinels {
				if errors.Is(err, s) {
					t.Fatalf("a config error is a request sentinel: %v", err)
				}
			}
			for _, s := range append([]config.Secret{tc.c.Secret}, tc.c.Secrets...) {
				if len(s.Value) > 8 && strings.Contains(err.Error(), s.Value) {
					t.Fatalf("error %q repeats a secret", err)
				}
			}
		})
	}
}

// TestNewAccepts lists verify sections that must build, including the
// defaults (empty algorithm, encoding and signed_content).
func TestNewAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    config.Verify
	}{
		{"none without secret", config.Verify{Type: "none"}},
		{"none with secret", config.Verify{Type: "none", Secret: secret("ignored")}},
		{"secret only in secrets", config.Verify{Type: "stripe", Secrets: secrets("whsec_a")}},
		{"hmac defaults", config.Verify{Type: "hmac", Header: "X-Sig", Secret: secret("s")}},
		{"hmac six parts", config.Verify{Type: "hmac", Header: "X-Sig", TimestampHeader: "X-T", SignedContent: "a{timestamp}b{body}c{body}", Secret: secret("s")}},
		{"standardwebhooks without prefix", config.Verify{Type: "standardwebhooks", Secret: secret("c2VjcmV0")}},
		{"tolerance", config.Verify{Type: "slack", Secret: secret("s"), Tolerance: config.Duration(time.Hour)}},
		{"tolerance of one second", config.Verify{Type: "slack", Secret: secret("s"), Tolerance: config.Duration(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := verify.New(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if v.Name() != tc.c.Type {
				t.Fatalf("Name() = %q, want %q", v.Name(), tc.c.Type)
			}
		})
	}
}

func TestNone(t *testing.T) {
	v := mustNew(t, config.Verify{Type: "none"})
	run(t, v, []vcase{
		{name: "no headers", h: header(), body: "anything"},
		{name: "a wrong signature", h: header("Stripe-Signature", "t=1,v1=00"), body: ""},
		{name: "nil headers", h: mapHeaders(nil), body: "x", at: time.Unix(0, 0)},
	})
}

// TestRefuse checks the fail-closed verifier of a source whose verify
// section could not be built.
func TestRefuse(t *testing.T) {
	_, cause := verify.New(config.Verify{Type: "stripe"})
	r := verify.Refuse{Type: "stripe", Err: cause}
	if r.Name() != "stripe" {
		t.Fatalf("Name() = %q", r.Name())
	}
	err := r.Verify(header("Stripe-Signature", stripeSigned(stripeOld, now, stripeBody).Header), []byte(stripeBody), now)
	checkErr(t, err, verify.ErrMismatch)
	errContains(t, err, "verify.secret")
}
