package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/ankusa/ankusa/config"
)

// twilioFamily: X-Twilio-Signature, base64 HMAC-SHA1 keyed by the auth
// token over the URL followed by the form parameters of a POST sorted by
// name, each name then its value. A request whose URL carries bodySHA256
// (JSON bodies) is signed over the URL alone, and bodySHA256 must be the
// hex SHA-256 of the body.
type twilioFamily struct {
	name   string
	keys   []*macKey
	header string
	url    []byte
}

// maxFormParams bounds the form parameters sorted and signed.
const maxFormParams = 512

func newTwilioFamily(p *Preset, c config.Verify, secrets []string, _ time.Duration) (Verifier, error) {
	if p.List != nil || p.Prefix != "" || p.Signed != "" || p.Timestamp != nil || p.Signature != "" {
		return nil, fmt.Errorf("family twilio takes header, algorithm, encoding and key only (what it signs is fixed)")
	}
	newHash, ok := hashFor(orDefault(p.Algorithm, "sha1"))
	if !ok {
		return nil, fmt.Errorf("algorithm: %q must be sha1, sha256 or sha512", p.Algorithm)
	}
	if p.Encoding != "" && p.Encoding != "base64" {
		return nil, fmt.Errorf("encoding: family twilio's signature is base64")
	}
	keys, err := macKeysFor(newHash, p.Key, secrets)
	if err != nil {
		return nil, err
	}
	f := &twilioFamily{name: p.Name, keys: keys, header: canonical(orDefault(p.Header, "X-Twilio-Signature"))}
	if c.URL != "" {
		f.url = []byte(c.URL)
	}
	return f, nil
}

func (f *twilioFamily) Name() string { return f.name }

var formType = []byte("application/x-www-form-urlencoded")

func (f *twilioFamily) Verify(h Headers, body []byte, _ time.Time) error {
	hdr := h.Peek(f.header)
	if len(hdr) == 0 {
		return ErrMissing
	}
	var sbuf [64]byte
	sig, ok := decodeSig(&sbuf, "base64", hdr)
	if !ok {
		return ErrMalformed
	}
	r, isReq := h.(Request)
	u := f.url
	if u == nil {
		if !isReq {
			return ErrMissing
		}
		u = append(append(append(make([]byte, 0, 8+len(r.Host())+len(r.RequestURI())), httpsScheme...), r.Host()...), r.RequestURI()...)
	}
	parts := [][]byte{u}
	if q := bytes.IndexByte(u, '?'); q >= 0 && bytes.Contains(u[q:], []byte("bodySHA256=")) {
		vals, err := url.ParseQuery(string(u[q+1:]))
		if err != nil {
			return ErrMalformed
		}
		want, err := hex.DecodeString(vals.Get("bodySHA256"))
		if err != nil || len(want) != sha256.Size {
			return ErrMalformed
		}
		sum := sha256.Sum256(body)
		if subtle.ConstantTimeCompare(sum[:], want) != 1 {
			return ErrMismatch
		}
	} else if isForm(h.Peek("Content-Type")) {
		if bytes.Count(body, []byte("&")) >= maxFormParams {
			return ErrMalformed
		}
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return ErrMalformed
		}
		names := make([]string, 0, len(vals))
		for k := range vals {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			vs := vals[k]
			sort.Strings(vs)
			for _, v := range vs {
				parts = append(parts, []byte(k), []byte(v))
			}
		}
	}
	if anyMatch(f.keys, sig, parts...) {
		return nil
	}
	return ErrMismatch
}

// isForm reports whether a Content-Type is a urlencoded form (whose
// parameters Twilio signs); any other body is not signed but through
// bodySHA256.
func isForm(ct []byte) bool {
	ct = bytes.TrimSpace(ct)
	return len(ct) >= len(formType) && bytes.EqualFold(ct[:len(formType)], formType)
}
