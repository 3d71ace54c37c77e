package payload

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Signer sets a provider's signature headers on a request, as the provider
// does, with the send time as the signature time:
//
//	stripe            Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<body>")>
//	github            X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>
//	                  (plus X-GitHub-Event and X-GitHub-Delivery)
//	standardwebhooks  webhook-id: msg_<token>, webhook-timestamp: <unix>,
//	                  webhook-signature: v1,<base64 HMAC-SHA256(base64dec(secret without whsec_), "<id>.<unix>.<body>")>
//
// A Signer belongs to one sender: it keeps its HMAC state and scratch
// buffers between requests and is not safe for concurrent use.
type Signer struct {
	mode string
	mac  hash.Hash
	sum  []byte // the last MAC, kept so that its storage is reused
	buf  []byte // header value being built
	ts   []byte
	id   []byte
}

var dot = []byte(".")

// SignModes are the modes NewSigner accepts.
var SignModes = []string{"none", "stripe", "github", "standardwebhooks"}

// NewSigner builds a signer for mode, one of SignModes ("none" signs
// nothing). A standardwebhooks secret must be whsec_ followed by base64
// (loadgen checks -secret before).
func NewSigner(mode, secret string) *Signer {
	s := &Signer{mode: mode}
	switch mode {
	case "stripe", "github":
		s.mac = hmac.New(sha256.New, []byte(secret))
	case "standardwebhooks":
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			panic("BUG: standardwebhooks secret passed validation but does not decode")
		}
		s.mac = hmac.New(sha256.New, key)
	}
	return s
}

// Sign adds the signature headers for body to h. token is the request's
// unique token (message and delivery ids); b says what body it is.
func (s *Signer) Sign(h *fasthttp.RequestHeader, body []byte, now time.Time, token []byte, b *Body) {
	if s.mac == nil {
		return
	}
	s.ts = strconv.AppendInt(s.ts[:0], now.Unix(), 10)
	s.mac.Reset()
	switch s.mode {
	case "stripe":
		s.mac.Write(s.ts)
		s.mac.Write(dot)
		s.mac.Write(body)
		s.buf = append(append(append(s.buf[:0], "t="...), s.ts...), ",v1="...)
		s.sum = s.mac.Sum(s.sum[:0])
		s.buf = hex.AppendEncode(s.buf, s.sum)
		h.SetBytesV("Stripe-Signature", s.buf)
	case "github":
		s.mac.Write(body)
		s.sum = s.mac.Sum(s.sum[:0])
		s.buf = hex.AppendEncode(append(s.buf[:0], "sha256="...), s.sum)
		h.SetBytesV("X-Hub-Signature-256", s.buf)
		h.SetBytesV("X-GitHub-Delivery", token)
		if b.Kind == "github" {
			h.Set("X-GitHub-Event", b.Event)
		}
	case "standardwebhooks":
		s.id = append(append(s.id[:0], "msg_"...), token...)
		s.mac.Write(s.id)
		s.mac.Write(dot)
		s.mac.Write(s.ts)
		s.mac.Write(dot)
		s.mac.Write(body)
		s.sum = s.mac.Sum(s.sum[:0])
		s.buf = base64.StdEncoding.AppendEncode(append(s.buf[:0], "v1,"...), s.sum)
		h.SetBytesV("Webhook-Id", s.id)
		h.SetBytesV("Webhook-Timestamp", s.ts)
		h.SetBytesV("Webhook-Signature", s.buf)
	}
}
