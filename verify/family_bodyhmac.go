package verify

import (
	"fmt"
	"time"

	"github.com/valyala/fastjson"

	"github.com/ankusa/ankusa/config"
)

// bodyHMACFamily: the signature is in the JSON body (signature:
// json:PATH) over fields of the same body (Mailgun:
// {json:signature.timestamp}{json:signature.token}; Adyen: a notification
// item's fields joined by ":", key hex, base64).
type bodyHMACFamily struct {
	*hmacFamily
	sig    source
	single source // an array that must hold one element, or unset
}

func newBodyHMACFamily(p *Preset, c config.Verify, secrets []string, tol time.Duration) (Verifier, error) {
	sig, err := parseSource("signature", p.Signature)
	if err != nil || !sig.isJSON() {
		return nil, fmt.Errorf("signature: %q must be json:PATH (where the body carries the signature)", p.Signature)
	}
	if p.Header != "" || p.List != nil || p.Prefix != "" {
		return nil, fmt.Errorf("family body-hmac takes no header, list or prefix (its signature is in the body)")
	}
	if p.Timestamp != nil && p.Timestamp.From == "list" {
		return nil, fmt.Errorf("timestamp.from: family body-hmac has no list")
	}
	q := *p
	q.Header = "-" // the hmac build wants a header; Verify never reads it
	f, err := newHMACFamily(&q, c, secrets, tol)
	if err != nil {
		return nil, err
	}
	b := &bodyHMACFamily{hmacFamily: f, sig: sig}
	if p.Single != "" {
		if b.single, err = parseSource("single", p.Single); err != nil || !b.single.isJSON() {
			return nil, fmt.Errorf("single: %q must be json:PATH (an array of the body)", p.Single)
		}
	}
	return b, nil
}

func (f *bodyHMACFamily) Verify(h Headers, body []byte, now time.Time) error {
	st := getState()
	defer putState(st)
	root := st.json(body)
	if root == nil {
		return ErrMalformed
	}
	if f.single.isSet() {
		// The signature covers one element: a batch of more would carry
		// unsigned ones next to it.
		a := st.walk(root, f.single.path)
		if a == nil || a.Type() != fastjson.TypeArray {
			return ErrMalformed
		}
		if items, _ := a.Array(); len(items) != 1 {
			return ErrMalformed
		}
	}
	val, ok := st.lookup(f.sig, h, body)
	if !ok {
		if st.dup {
			return ErrMalformed
		}
		return ErrMissing
	}
	var rf reqFields
	rf.url = f.url
	if f.ts != nil {
		if rf.ts, ok = st.lookup(f.ts.src, h, body); !ok {
			return ErrMissing
		}
		tm, ok := f.ts.parse(rf.ts)
		if !ok {
			return ErrMalformed
		}
		if !f.ts.within(tm, now) {
			return ErrExpired
		}
	}
	if f.id.isSet() {
		if rf.id, ok = st.lookup(f.id, h, body); !ok {
			return ErrMissing
		}
	}
	var sbuf [64]byte
	sig, ok := decodeSigEnc(&sbuf, f.enc, val)
	if !ok {
		return ErrMalformed
	}
	var pbuf [maxTmplParts][]byte
	parts, ok := f.fill(&pbuf, st, &rf, h, body)
	if !ok {
		return ErrMissing
	}
	if st.dup {
		return ErrMalformed
	}
	if anyMatch(f.keys, sig, parts...) {
		return nil
	}
	return ErrMismatch
}
