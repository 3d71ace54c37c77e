package verify

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

type hdrMap map[string]string

func (m hdrMap) Peek(k string) []byte { return []byte(m[k]) }

func sum256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// TestHMACFamilyShapes covers the preset fields no catalogue entry uses
// yet: ts_first lists, rfc3339 and ms timestamps, base64url, the key
// modes and {header:NAME}.
func TestHMACFamilyShapes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := `{"a":1}`
	rfc := now.UTC().Format(time.RFC3339)
	sha1Key := sha1.Sum([]byte("merchant"))
	for _, tc := range []struct {
		name   string
		p      Preset
		secret string
		h      hdrMap
		want   error
	}{
		{"ts_first list, bare values", Preset{Header: "X-Sig", List: &List{Sep: ",", TSFirst: true}, Signed: "{timestamp}.{body}", Timestamp: &Timestamp{From: "list"}},
			"k", hdrMap{"X-Sig": "1700000000,00," + hex.EncodeToString(sum256([]byte("k"), "1700000000."+body))}, nil},
		{"rfc3339 header timestamp", Preset{Header: "X-Sig", Signed: "{timestamp}{body}", Timestamp: &Timestamp{From: "header:X-Date", Unit: "rfc3339"}},
			"k", hdrMap{"X-Sig": hex.EncodeToString(sum256([]byte("k"), rfc+body)), "X-Date": rfc}, nil},
		{"rfc3339 too old", Preset{Header: "X-Sig", Signed: "{timestamp}{body}", Timestamp: &Timestamp{From: "header:X-Date", Unit: "rfc3339", Tolerance: "1m"}},
			"k", hdrMap{"X-Sig": "00", "X-Date": now.Add(-2 * time.Minute).UTC().Format(time.RFC3339)}, ErrExpired},
		{"tolerance none", Preset{Header: "X-Sig", Signed: "{timestamp}{body}", Timestamp: &Timestamp{From: "header:X-T", Tolerance: "none"}},
			"k", hdrMap{"X-Sig": hex.EncodeToString(sum256([]byte("k"), "1"+body)), "X-T": "1"}, nil},
		{"base64url, key base64", Preset{Header: "X-Sig", Encoding: "base64url", Key: "base64"},
			base64.StdEncoding.EncodeToString([]byte("raw-key")), hdrMap{"X-Sig": base64.RawURLEncoding.EncodeToString(sum256([]byte("raw-key"), body))}, nil},
		{"key sha1 (Braintree)", Preset{Header: "X-Sig", Key: "sha1"},
			"merchant", hdrMap{"X-Sig": hex.EncodeToString(sum256(sha1Key[:], body))}, nil},
		{"key hex", Preset{Header: "X-Sig", Key: "hex"},
			"6b6579", hdrMap{"X-Sig": hex.EncodeToString(sum256([]byte("key"), body))}, nil},
		{"{header:NAME} and {json:PATH}", Preset{Header: "X-Sig", Signed: "{header:X-Account}|{json:a}|{body}"},
			"k", hdrMap{"X-Sig": hex.EncodeToString(sum256([]byte("k"), "acc|1|"+body)), "X-Account": "acc"}, nil},
		{"too many signatures is fine, none matching", Preset{Header: "X-Sig", List: &List{Sep: " "}},
			"k", hdrMap{"X-Sig": strings.Repeat("00 ", 100)}, ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.Name, p.Family = "t", "hmac"
			v, err := newHMACFamily(&p, config.Verify{}, []string{tc.secret}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Verify(tc.h, []byte(body), now); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestHMACFamilyRefuses: a preset the hmac family cannot build says which
// field is wrong.
func TestHMACFamilyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Preset
		want string
	}{
		{"no header", Preset{}, "header:"},
		{"md5", Preset{Header: "X", Algorithm: "md5"}, "algorithm:"},
		{"base32", Preset{Header: "X", Encoding: "base32"}, "encoding:"},
		{"key mode", Preset{Header: "X", Key: "pem"}, "key:"},
		{"timestamp not signed", Preset{Header: "X", Timestamp: &Timestamp{From: "header:T"}}, "signed:"},
		{"{timestamp} without from", Preset{Header: "X", Signed: "{timestamp}{body}"}, "signed:"},
		{"list timestamp without ts_key", Preset{Header: "X", List: &List{Sep: ","}, Signed: "{timestamp}", Timestamp: &Timestamp{From: "list"}}, "timestamp.from:"},
		{"unit", Preset{Header: "X", Signed: "{timestamp}", Timestamp: &Timestamp{From: "header:T", Unit: "us"}}, "timestamp.unit:"},
		{"tolerance", Preset{Header: "X", Signed: "{timestamp}", Timestamp: &Timestamp{From: "header:T", Tolerance: "soon"}}, "timestamp.tolerance:"},
		{"unknown placeholder", Preset{Header: "X", Signed: "{query}"}, "{query}"},
		{"{id} without id", Preset{Header: "X", Signed: "{id}{body}"}, "{id} needs id"},
		{"sep of two", Preset{Header: "X", List: &List{Sep: ", "}}, "list.sep:"},
		{"kv without sig_key", Preset{Header: "X", List: &List{Sep: ",", KV: "="}}, "list.sig_key:"},
		{"template too long", Preset{Header: "X", Signed: strings.Repeat("{body}", maxTmplParts+1)}, "too many parts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			p.Name, p.Family = "t", "hmac"
			_, err := newHMACFamily(&p, config.Verify{}, []string{"k"}, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestSignatureLineBreaksRefused: encoding/base64 skips CR and LF while
// decoding, so without a check a signature with a line break in it
// would read as the signature without one. Every decoder a family reads
// a request's signature with refuses it.
func TestSignatureLineBreaksRefused(t *testing.T) {
	raw := sum256([]byte("k"), "body")
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		s := enc.EncodeToString(raw)
		for _, bad := range []string{s + "\r", s[:8] + "\n" + s[8:], "\r\n" + s} {
			var d64 [64]byte
			var d80 [80]byte
			var drsa [maxRSABytes]byte
			b := []byte(bad)
			checks := map[string]bool{}
			switch enc {
			case base64.StdEncoding:
				_, checks["decodeSig"] = decodeSig(&d64, "base64", b)
				_, checks["decodeAsymSig"] = decodeAsymSig(&d80, "base64", b)
				_, checks["decodeRSASig"] = decodeRSASig(&drsa, "base64", b)
			default:
				_, checks["decodeSigEnc"] = decodeSigEnc(&d64, "base64url", b)
				_, checks["decodeAsymSig"] = decodeAsymSig(&d80, "base64url", b)
				_, checks["b64urlInto"] = b64urlInto(base64.RawURLEncoding, d64[:], []byte(strings.TrimRight(bad, "=")))
			}
			for name, ok := range checks {
				if ok {
					t.Errorf("%s accepted %q", name, bad)
				}
			}
		}
		// The same signature without the break still decodes.
		var d64 [64]byte
		if enc == base64.StdEncoding {
			if got, ok := decodeSig(&d64, "base64", []byte(s)); !ok || !hmac.Equal(got, raw) {
				t.Fatalf("decodeSig refused a clean signature")
			}
		} else if got, ok := decodeSigEnc(&d64, "base64url", []byte(s)); !ok || !hmac.Equal(got, raw) {
			t.Fatalf("decodeSigEnc refused a clean signature %q", s)
		}
	}
}
