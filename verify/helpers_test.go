package verify_test

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

// now is the clock every table test verifies at.
var now = time.Unix(1_700_000_000, 0)

// tol is the default tolerance, spelled out so that the boundary cases
// below do not depend on verify.DefaultTolerance staying 5m.
const tol = 5 * time.Minute

// ts formats a unix timestamp as a header value.
func ts(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// secret is a config secret with its value resolved, as config.Load leaves
// it.
func secret(v string) config.Secret { return config.Secret{Ref: "env:TEST", Value: v} }

// secrets is a list of resolved config secrets.
func secrets(vs ...string) []config.Secret {
	out := make([]config.Secret, len(vs))
	for i, v := range vs {
		out[i] = secret(v)
	}
	return out
}

// mustNew builds a verifier or fails the test.
func mustNew(t testing.TB, c config.Verify) verify.Verifier {
	t.Helper()
	v, err := verify.New(c)
	if err != nil {
		t.Fatalf("verify.New(%+v): %v", c, err)
	}
	return v
}

// header builds a fasthttp request header from key, value pairs, the way
// the edge hands headers to Verify. Keys are normalised by fasthttp, so a
// verifier that peeks "Webhook-Id" sees "webhook-id" too.
func header(kv ...string) *fasthttp.RequestHeader {
	if len(kv)%2 != 0 {
		panic("BUG: header wants key, value pairs")
	}
	h := &fasthttp.RequestHeader{}
	h.SetMethod(fasthttp.MethodPost)
	h.SetRequestURI("/webhooks/test")
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// mapHeaders is a Headers whose Peek does not allocate: the map is built
// before anything is measured.
type mapHeaders map[string][]byte

func (m mapHeaders) Peek(k string) []byte { return m[k] }

// hmacHex and hmacB64 sign content with crypto/hmac directly, the way a
// provider's documentation describes, not through package verify.
func hmacSum(newHash func() hash.Hash, key string, content ...string) []byte {
	m := hmac.New(newHash, []byte(key))
	for _, c := range content {
		m.Write([]byte(c))
	}
	return m.Sum(nil)
}

func hmacHex(newHash func() hash.Hash, key string, content ...string) string {
	return hex.EncodeToString(hmacSum(newHash, key, content...))
}

func hmacB64(newHash func() hash.Hash, key string, content ...string) string {
	return base64.StdEncoding.EncodeToString(hmacSum(newHash, key, content...))
}

// vcase is one row of a verifier table: a request and what Verify must say.
type vcase struct {
	name string
	h    verify.Headers
	body string
	at   time.Time // zero: now
	want error     // nil: accepted
}

// run checks every row against v.
func run(t *testing.T, v verify.Verifier, cases []vcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := c.at
			if at.IsZero() {
				at = now
			}
			err := v.Verify(c.h, []byte(c.body), at)
			checkErr(t, err, c.want)
		})
	}
}

// checkErr asserts that err is nil when want is, and otherwise wraps want
// and none of the other sentinels.
func checkErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("rejected a valid request: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted; want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v; want errors.Is(err, %v)", err, want)
	}
	for _, other := range sentinels {
		if other != want && errors.Is(err, other) {
			t.Fatalf("err = %v is also %v", err, other)
		}
	}
}

var sentinels = []error{verify.ErrMissing, verify.ErrMalformed, verify.ErrMismatch, verify.ErrExpired}

// flipHex changes the last hex digit of s, keeping it valid hex.
func flipHex(s string) string {
	last := s[len(s)-1]
	r := byte('0')
	if last == '0' {
		r = '1'
	}
	return s[:len(s)-1] + string(r)
}

// flipB64 changes the first character of a base64 string, keeping it valid
// base64 of the same length.
func flipB64(s string) string {
	r := "A"
	if s[0] == 'A' {
		r = "B"
	}
	return r + s[1:]
}

// errContains asserts that err is non-nil and mentions every word.
func errContains(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one naming %q", words)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
}
