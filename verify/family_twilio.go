package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sync"
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

// twilioState is one request's parsed form, pooled: names and values
// are slices of the body, or of buf when they had escapes; tail is the
// signed parameters, sorted and concatenated, one contiguous write for
// the MAC rather than two small ones per parameter; parts is what the
// MAC reads.
type twilioState struct {
	buf, tail []byte
	pairs     []formPair
	parts     [][]byte
}

type formPair struct{ k, v []byte }

var twilioStates = sync.Pool{New: func() any { return &twilioState{} }}

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
	st := twilioStates.Get().(*twilioState)
	defer twilioStates.Put(st)
	st.parts = st.parts[:0]
	// The request's own query is what Twilio signed, bodySHA256 included:
	// with verify.url (the address behind a balancer) it follows the
	// configured address unless that one carries its own query.
	r, isReq := h.(Request)
	var query []byte
	if isReq {
		if q := bytes.IndexByte(r.RequestURI(), '?'); q >= 0 {
			query = r.RequestURI()[q+1:]
		}
	}
	switch {
	case f.url != nil && bytes.IndexByte(f.url, '?') >= 0:
		st.parts = append(st.parts, f.url)
		query = f.url[bytes.IndexByte(f.url, '?')+1:]
	case f.url != nil:
		st.parts = append(st.parts, f.url)
		if len(query) > 0 {
			st.parts = append(st.parts, questionMark, query)
		}
	case !isReq:
		return ErrMissing
	default:
		st.parts = append(st.parts, httpsScheme, r.Host(), r.RequestURI())
	}
	form := false
	switch {
	case bytes.Contains(query, bodySHA256Key):
		if err := checkBodySHA256(query, body); err != nil {
			return err
		}
	case isForm(h.Peek("Content-Type")):
		form = true
	case len(body) > 0:
		// Twilio signs a body only as form parameters or through
		// bodySHA256: any other body would be accepted unsigned.
		return ErrMismatch
	}
	if form {
		if err := st.parseForm(body); err != nil {
			return err
		}
		st.parts = append(st.parts, st.tail)
	}
	if anyMatch(f.keys, sig, st.parts...) {
		return nil
	}
	return ErrMismatch
}

var (
	bodySHA256Key = []byte("bodySHA256=")
	questionMark  = []byte("?")
)

// checkBodySHA256 checks that the query's bodySHA256 is the hex SHA-256
// of the body (Twilio's JSON requests: the signature covers the URL, the
// URL the body).
func checkBodySHA256(query, body []byte) error {
	vals, err := url.ParseQuery(string(query))
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
	return nil
}

// parseForm reads a urlencoded body into tail, the signed parameters
// sorted by name, then value, as Twilio sorts them, each name then its
// value, refusing what url.ParseQuery refuses (a bad escape, a semicolon)
// and more than maxFormParams pairs. Twilio posts its parameters in name
// order, so the first pass compares each pair with the one before it and
// appends it to tail at once, keeping nothing else; only a body found out
// of order is read again into pairs, sorted, and its tail written anew.
func (st *twilioState) parseForm(body []byte) error {
	if bytes.IndexByte(body, ';') >= 0 {
		return ErrMalformed
	}
	if cap(st.buf) < len(body) {
		// Unescaping never grows a value: with this room, the slices
		// of buf taken below stay valid.
		st.buf = make([]byte, 0, len(body))
	}
	if cap(st.tail) < len(body) {
		st.tail = make([]byte, 0, len(body)) // never longer than the body
	}
	sorted, err := st.scan(body, false)
	if err != nil || sorted {
		return err
	}
	if _, err := st.scan(body, true); err != nil {
		return err
	}
	slices.SortFunc(st.pairs, comparePairs)
	st.tail = st.tail[:0]
	for _, p := range st.pairs {
		st.tail = append(append(st.tail, p.k...), p.v...)
	}
	return nil
}

// scan is one pass over the body's pairs. Without collect it appends each
// pair to tail while they come in order and stops, sorted false, at the
// first that does not; with collect it keeps every pair in pairs. Names
// and values without escapes stay slices of the body; the next '%' and
// '+' are found once each, ahead, so that escapes cost nothing to a pair
// without them.
func (st *twilioState) scan(body []byte, collect bool) (sorted bool, err error) {
	st.buf, st.tail, st.pairs = st.buf[:0], st.tail[:0], st.pairs[:0]
	pct, plus := indexFrom(body, '%', 0), indexFrom(body, '+', 0)
	var pk, pv []byte // the pair before, while the pairs come in order
	n := 0
	for start := 0; start < len(body); {
		end := indexFrom(body, '&', start)
		kv := body[start:end]
		start = end + 1
		if len(kv) == 0 {
			continue
		}
		if n == maxFormParams {
			return false, ErrMalformed
		}
		n++
		// Names are short: a plain loop finds the '=' sooner than a
		// call to IndexByte, which pays off only over longer runs.
		eq := 0
		for eq < len(kv) && kv[eq] != '=' {
			eq++
		}
		k, v := kv[:eq], kv[eq:]
		if eq < len(kv) {
			v = kv[eq+1:]
		}
		if pct < end || plus < end {
			var ok bool
			if k, ok = st.unescape(k); !ok {
				return false, ErrMalformed
			}
			if v, ok = st.unescape(v); !ok {
				return false, ErrMalformed
			}
			if pct < end {
				pct = indexFrom(body, '%', end)
			}
			if plus < end {
				plus = indexFrom(body, '+', end)
			}
		}
		if collect {
			st.pairs = append(st.pairs, formPair{k, v})
			continue
		}
		if n > 1 {
			if c := bytes.Compare(pk, k); c > 0 || c == 0 && bytes.Compare(pv, v) > 0 {
				return false, nil
			}
		}
		pk, pv = k, v
		st.tail = append(append(st.tail, k...), v...)
	}
	return true, nil
}

// indexFrom is the index of the first c in b at or after from, or len(b).
func indexFrom(b []byte, c byte, from int) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return len(b)
}

// comparePairs orders form pairs as Twilio does: by name, then value.
func comparePairs(a, b formPair) int {
	if c := bytes.Compare(a.k, b.k); c != 0 {
		return c
	}
	return bytes.Compare(a.v, b.v)
}

// unescape decodes s into buf and returns that slice of buf.
func (st *twilioState) unescape(s []byte) ([]byte, bool) {
	start := len(st.buf)
	var ok bool
	st.buf, ok = appendUnescaped(st.buf, s)
	return st.buf[start:len(st.buf):len(st.buf)], ok
}

// appendUnescaped appends s with form escapes decoded ('+' is a space).
func appendUnescaped(dst, s []byte) ([]byte, bool) {
	if bytes.IndexByte(s, '%') < 0 && bytes.IndexByte(s, '+') < 0 {
		return append(dst, s...), true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) {
				return dst, false
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return dst, false
			}
			dst = append(dst, hi<<4|lo)
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// isForm reports whether a Content-Type is a urlencoded form (whose
// parameters Twilio signs); any other body is not signed but through
// bodySHA256.
func isForm(ct []byte) bool {
	ct = bytes.TrimSpace(ct)
	return len(ct) >= len(formType) && bytes.EqualFold(ct[:len(formType)], formType)
}
