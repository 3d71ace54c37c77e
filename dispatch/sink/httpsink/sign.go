package httpsink

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"sync"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// Standard Webhooks signing (https://www.standardwebhooks.com/):
//
//	webhook-id: <event id, evt_...>
//	webhook-timestamp: <unix seconds>
//	webhook-signature: v1,<base64(HMAC-SHA256(key, id "." timestamp "." body))>
//
// body is exactly the bytes sent. The key is the secret's expansion
// base64-decoded after its "whsec_" prefix when it has one (the form the
// specification's libraries take), else the expansion's bytes as they
// are.

const whsecPrefix = "whsec_"

var (
	errEmptySecret = errors.New("the secret expands to nothing for this hook; check the fields of the sink's secret template")
	errBadWhsec    = errors.New("the secret starts with whsec_ but the rest is not standard base64; fix the sink's secret")
)

// signer signs with one secret template. A template without fields is
// decoded once and its MACs are pooled; the others are keyed per hook.
type signer struct {
	t    *config.Template
	key  []byte // the decoded key of a static secret
	macs sync.Pool
}

// newSigner returns nil when secret is empty: the sink does not sign.
func newSigner(secret string) (*signer, error) {
	if secret == "" {
		return nil, nil
	}
	t, err := config.ParseTemplate(secret)
	if err != nil {
		return nil, err
	}
	sg := &signer{t: t}
	if t.Static() {
		key, err := appendKey(nil, []byte(secret))
		if err != nil {
			return nil, err
		}
		sg.key = key
		sg.macs.New = func() any { return hmac.New(sha256.New, key) }
	}
	return sg, nil
}

// appendKey appends the HMAC key of a secret's expansion to dst.
func appendKey(dst, secret []byte) ([]byte, error) {
	b64, ok := bytes.CutPrefix(secret, []byte(whsecPrefix))
	if !ok {
		if len(secret) == 0 {
			return dst, errEmptySecret
		}
		return append(dst, secret...), nil
	}
	n := len(dst)
	dst, err := base64.StdEncoding.AppendDecode(dst, b64)
	if err != nil || len(dst) == n {
		return dst[:n], errBadWhsec
	}
	return dst, nil
}

// sign sets the Standard Webhooks headers of a's request over a.body.
func (sg *signer) sign(a *attempt, e *envelope.Envelope, now time.Time) error {
	mac, err := sg.mac(a, e)
	if err != nil {
		return &dispatch.Error{Permanent: true, Err: err}
	}
	id := e.ID.AppendText(a.id[:0])
	ts := strconv.AppendInt(a.ts[:0], now.Unix(), 10)
	mac.Write(id)
	mac.Write(dot)
	mac.Write(ts)
	mac.Write(dot)
	mac.Write(a.body)
	a.sum = mac.Sum(a.sum[:0])
	if sg.key != nil {
		sg.macs.Put(mac)
	}
	sig := append(a.scratch[:0], "v1,"...)
	sig = base64.StdEncoding.AppendEncode(sig, a.sum)
	a.scratch = sig
	h := &a.req.Header
	h.SetCanonical(hWebhookID, id)
	h.SetCanonical(hWebhookTimestamp, ts)
	h.SetCanonical(hWebhookSignature, sig)
	return nil
}

// mac returns a MAC keyed for e, reset.
func (sg *signer) mac(a *attempt, e *envelope.Envelope) (hash.Hash, error) {
	if sg.key != nil {
		mac := sg.macs.Get().(hash.Hash)
		mac.Reset()
		return mac, nil
	}
	a.scratch = tmpl.AppendTo(a.scratch[:0], sg.t, e)
	key, err := appendKey(a.key[:0], a.scratch)
	clear(a.scratch) // the secret stays only in a.key, cleared on release
	a.key = key
	if err != nil {
		return nil, err
	}
	return hmac.New(sha256.New, key), nil
}

var dot = []byte{'.'}
