package verify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/valyala/fastjson"

	"github.com/ankusa/ankusa/config"
)

// HandshakeKinds are the subscription handshakes the edge answers, by the
// name a preset's handshake gives. Each is answered as its provider's
// documentation says; the address is with each kind below.
var HandshakeKinds = []string{"slack", "zoom", "twitch", "discord", "okta", "dropbox", "meta", "graph", "xero", "asana"}

// MaxChallengeBytes bounds a challenge the edge echoes: a longer one is not
// a handshake. Providers send a few dozen bytes.
const MaxChallengeBytes = 1024

// Content types of handshake answers.
const (
	ctJSON = "application/json"
	ctText = "text/plain"
)

// nosniff goes with every challenge echoed as text from a query string
// (Dropbox asks for it; Meta's and Graph's echo the same kind of value):
// a browser must not read an echo as HTML.
var nosniff = [2]string{"X-Content-Type-Options", "nosniff"}

// Refusals: a handshake that failed its own check is answered with the
// edge's error form and never with the challenge.
var (
	refuseSignature = []byte(`{"error":"signature_invalid","message":"the handshake's signature or token does not verify"}`)
	refuseToken     = []byte(`{"error":"handshake_refused","message":"the handshake's verify token does not match this source's"}`)
)

// handshake answers one source's subscription handshake. It is pure: it
// reads the request and the configured secrets and does no I/O.
type handshake struct {
	kind string
	// base is the source's verifier: Okta's GET carries the header the
	// token family checks, so the handshake asks it.
	base Verifier
	// secrets are the source's secrets: Zoom's encryptedToken is keyed
	// by the one that signed the request; Asana's X-Hook-Secret is
	// trusted only when it is one of them.
	secrets [][]byte
	// token is verify.handshake_token (Meta's hub.verify_token).
	token []byte
}

// newHandshake builds the handshake p names, or nil when it names none.
// Its errors name the key at fault.
func newHandshake(v Verifier, p *Preset, c config.Verify, secrets []string) (*handshake, error) {
	kind := p.Handshake
	if kind == "" {
		if c.HandshakeToken.IsSet() {
			return nil, fmt.Errorf("verify.handshake_token: verifier %q has no subscription handshake that uses one; remove it", p.Name)
		}
		return nil, nil
	}
	if !slices.Contains(HandshakeKinds, kind) {
		return nil, fmt.Errorf("verify.type: preset %q names handshake %q, which is none of %v", p.Name, kind, HandshakeKinds)
	}
	h := &handshake{kind: kind, base: v}
	for _, s := range secrets {
		h.secrets = append(h.secrets, []byte(s))
	}
	switch {
	case kind == "meta" && (!c.HandshakeToken.IsSet() || c.HandshakeToken.Value == ""):
		return nil, fmt.Errorf("verify.handshake_token: required by verifier %q: the hub.verify_token its provider's verification request carries, as entered in its webhook settings", p.Name)
	case kind == "meta":
		h.token = []byte(c.HandshakeToken.Value)
	case c.HandshakeToken.IsSet():
		return nil, fmt.Errorf("verify.handshake_token: verifier %q's handshake (%s) does not use one; remove it", p.Name, kind)
	}
	return h, nil
}

// AcceptsGET reports whether the handshake is a GET (Okta, Dropbox, Meta).
func (h *handshake) AcceptsGET() bool {
	return h.kind == "okta" || h.kind == "dropbox" || h.kind == "meta"
}

// HandshakeGET answers a GET handshake; ok false: the request is not one
// (the edge answers it as any GET, 405).
func (h *handshake) HandshakeGET(r Request, now time.Time) (Answer, bool) {
	switch h.kind {
	case "okta":
		// https://developer.okta.com/docs/concepts/event-hooks/#one-time-verification-request
		// A GET whose X-Okta-Verification-Challenge is echoed as
		// {"verification": value}. Okta sends the hook's configured
		// authorization header on it too: the source's verifier checks it.
		ch := r.Peek("X-Okta-Verification-Challenge")
		if !challengeOK(ch) {
			return Answer{}, false
		}
		if err := h.base.Verify(r, nil, now); err != nil {
			return h.refuse(401, refuseSignature), true
		}
		body, _ := json.Marshal(struct {
			Verification string `json:"verification"`
		}{string(ch)})
		return Answer{Kind: h.kind, Status: 200, ContentType: ctJSON, Body: body, Verified: true}, true
	case "dropbox":
		// https://www.dropbox.com/developers/reference/webhooks
		// (verification request): GET ?challenge=X, echoed as text with
		// X-Content-Type-Options: nosniff (the echo must not be read as
		// HTML). Unsigned: it proves nothing, so it is not Verified.
		// It is unsigned: what the node can refuse is a challenge that
		// is not the random token Dropbox sends (tokenOK), or that comes
		// twice; such a GET is any GET, a 405.
		q, ok := query(r.RequestURI())
		ch, one := only(q, "challenge")
		if !ok || !one || !tokenOK([]byte(ch)) {
			return Answer{}, false
		}
		return Answer{Kind: h.kind, Status: 200, ContentType: ctText, Body: []byte(ch), Header: nosniff}, true
	case "meta":
		// https://developers.facebook.com/docs/graph-api/webhooks/getting-started#verification-requests
		// GET ?hub.mode=subscribe&hub.verify_token=T&hub.challenge=C: C
		// when T is the token entered in the app's settings.
		q, ok := query(r.RequestURI())
		ch := q.Get("hub.challenge")
		if !ok || q.Get("hub.mode") != "subscribe" || !challengeOK([]byte(ch)) {
			return Answer{}, false
		}
		if subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), h.token) != 1 {
			return h.refuse(403, refuseToken), true
		}
		return Answer{Kind: h.kind, Status: 200, ContentType: ctText, Body: []byte(ch), Verified: true, Header: nosniff}, true
	}
	return Answer{}, false
}

// Handshake answers a POST handshake once Verify has run (verr). Each kind
// first looks for what marks its handshake with a byte search or a header
// read, so an ordinary hook costs next to nothing here.
func (h *handshake) Handshake(r Request, body []byte, verr error) (Answer, bool) {
	switch h.kind {
	case "slack":
		// https://api.slack.com/events/url_verification: {"type":
		// "url_verification","challenge":X}, signed like every request;
		// answered 200 with {"challenge":X} (one of the three forms the
		// page allows).
		if !bytes.Contains(body, []byte("url_verification")) || verr != nil {
			return Answer{}, false
		}
		var ch []byte
		if !jsonFields(body, func(v *fastjson.Value) bool {
			ch = stringAt(v, "challenge")
			return string(stringAt(v, "type")) == "url_verification" && challengeOK(ch)
		}) {
			return Answer{}, false
		}
		out, _ := json.Marshal(struct {
			Challenge string `json:"challenge"`
		}{string(ch)})
		return Answer{Kind: h.kind, Status: 200, ContentType: ctJSON, Body: out, Verified: true}, true
	case "zoom":
		// https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint
		// {"event":"endpoint.url_validation","payload":{"plainToken":P}}
		// → {"plainToken":P,"encryptedToken":hex(HMAC-SHA256(secret, P))}.
		if !bytes.Contains(body, []byte("endpoint.url_validation")) || verr != nil {
			return Answer{}, false
		}
		var plain []byte
		if !jsonFields(body, func(v *fastjson.Value) bool {
			plain = stringAt(v, "payload", "plainToken")
			return string(stringAt(v, "event")) == "endpoint.url_validation" && challengeOK(plain)
		}) {
			return Answer{}, false
		}
		m := hmac.New(sha256.New, h.zoomKey(r, body))
		m.Write(plain)
		out, _ := json.Marshal(struct {
			PlainToken     string `json:"plainToken"`
			EncryptedToken string `json:"encryptedToken"`
		}{string(plain), hex.EncodeToString(m.Sum(nil))})
		return Answer{Kind: h.kind, Status: 200, ContentType: ctJSON, Body: out, Verified: true}, true
	case "twitch":
		// https://dev.twitch.tv/docs/eventsub/handling-webhook-events#responding-to-a-challenge-request
		// Twitch-Eventsub-Message-Type: webhook_callback_verification,
		// signed; answered 200 text/plain with the body's challenge, raw.
		if string(r.Peek("Twitch-Eventsub-Message-Type")) != "webhook_callback_verification" || verr != nil {
			return Answer{}, false
		}
		var ch []byte
		if !jsonFields(body, func(v *fastjson.Value) bool {
			ch = stringAt(v, "challenge")
			return challengeOK(ch)
		}) {
			return Answer{}, false
		}
		return Answer{Kind: h.kind, Status: 200, ContentType: ctText, Body: bytes.Clone(ch), Verified: true}, true
	case "discord":
		// https://discord.com/developers/docs/interactions/receiving-and-responding#receiving-an-interaction
		// A PING ({"type":1}), Ed25519-signed like every interaction, is
		// acknowledged with a PONG, {"type":1}. Discord also sends PINGs
		// with deliberately invalid signatures and removes the endpoint
		// unless they are answered 401
		// (https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers):
		// so a PING that fails verification is answered 401 here, never
		// committed, whatever the source's on_verify_failure (a 202 from a
		// quarantining or flagging source would fail Discord's check).
		if len(body) > maxPingBytes || !fieldIs(body, `"type"`, "1") {
			return Answer{}, false
		}
		if !jsonFields(body, func(v *fastjson.Value) bool {
			t := v.Get("type")
			return t != nil && t.Type() == fastjson.TypeNumber && string(t.MarshalTo(nil)) == "1"
		}) {
			return Answer{}, false
		}
		if verr != nil {
			return h.refuse(401, refuseSignature), true
		}
		return Answer{Kind: h.kind, Status: 200, ContentType: ctJSON, Body: []byte(`{"type":1}`), Verified: true}, true
	case "graph":
		// https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks#notification-endpoint-validation
		// Microsoft Graph POSTs to the notification URL with
		// ?validationToken=T and expects 200 text/plain with T, URL-decoded,
		// within 10 seconds. The validation is not signed: not Verified.
		// (Microsoft documents a POST only, so a GET stays a 405.)
		if !bytes.Contains(r.RequestURI(), []byte("validationToken=")) {
			return Answer{}, false
		}
		// Unsigned too: a token that is not the printable text Graph
		// sends (graphTokenOK), or that comes twice, is not a
		// validation, and the request is verified as a notification.
		q, ok := query(r.RequestURI())
		tok, one := only(q, "validationToken")
		if !ok || !one || !graphTokenOK([]byte(tok)) {
			return Answer{}, false
		}
		return Answer{Kind: h.kind, Status: 200, ContentType: ctText, Body: []byte(tok), Header: nosniff}, true
	case "xero":
		// https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/#intent-to-receive
		// Intent to receive: signed payloads with an empty events list,
		// some correctly signed and some not; Xero expects 200 with an
		// empty body for the first and 401 for the others, so a badly
		// signed one is answered here (a 202 from a quarantining source
		// would fail the check) and neither is ever committed.
		if len(body) > maxPingBytes || !fieldIs(body, `"events"`, "[]") {
			return Answer{}, false
		}
		if !jsonFields(body, func(v *fastjson.Value) bool {
			ev := v.Get("events")
			if ev == nil || ev.Type() != fastjson.TypeArray {
				return false
			}
			a, _ := ev.Array()
			return len(a) == 0
		}) {
			return Answer{}, false
		}
		if verr != nil {
			return h.refuse(401, nil), true
		}
		return Answer{Kind: h.kind, Status: 200, Verified: true}, true
	case "asana":
		// https://developers.asana.com/reference/createwebhook: the
		// handshake is a POST with X-Hook-Secret, answered 200 with the
		// same header. It is not signed: Asana makes the secret there and
		// signs the webhook's events with it from then on. The node never
		// adopts a secret it is sent: a handshake whose secret is one of
		// the source's is Verified; any other is still echoed (the echo
		// proves only that the URL answers) but not Verified, spends the
		// quarantine bucket, and the edge tells the operator to configure
		// it; until then the subscription's events fail verification.
		// A secret that is not a token (tokenOK) is not a handshake:
		// the request is verified as an event, and refused as one.
		sec := r.Peek("X-Hook-Secret")
		if !tokenOK(sec) {
			return Answer{}, false
		}
		known := false
		for _, s := range h.secrets {
			if subtle.ConstantTimeCompare(sec, s) == 1 {
				known = true
			}
		}
		return Answer{Kind: h.kind, Status: 200, Header: [2]string{"X-Hook-Secret", string(sec)}, Verified: known}, true
	}
	return Answer{}, false
}

// maxPingBytes bounds the bodies that may be a Discord PING or a Xero
// intent to receive: both are a few hundred bytes, and an ordinary hook
// larger than this is not parsed for them.
const maxPingBytes = 4 << 10

// refuse is a refused handshake's answer: never the challenge, never
// Verified.
func (h *handshake) refuse(status int, body []byte) Answer {
	a := Answer{Kind: h.kind, Status: status, Body: body}
	if body != nil {
		a.ContentType = ctJSON
	}
	return a
}

// zoomKey is the secret that signed a Zoom request (x-zm-signature: v0=
// hex HMAC-SHA256 over "v0:{timestamp}:{body}"), so that the answer is
// keyed as Zoom checks it while secrets rotate; the first one when none
// matches.
func (h *handshake) zoomKey(r Request, body []byte) []byte {
	sig := r.Peek("X-Zm-Signature")
	ts := r.Peek("X-Zm-Request-Timestamp")
	for _, s := range h.secrets {
		m := hmac.New(sha256.New, s)
		m.Write([]byte("v0:"))
		m.Write(ts)
		m.Write([]byte(":"))
		m.Write(body)
		want := append([]byte("v0="), hex.EncodeToString(m.Sum(nil))...)
		if hmac.Equal(sig, want) {
			return s
		}
	}
	if len(h.secrets) == 0 {
		return nil
	}
	return h.secrets[0]
}

// challengeOK reports whether c may be echoed: present, bounded, and
// printable ASCII. Every provider's challenge is a token or a line of
// text; an echo reflects the sender's bytes, so control characters and
// anything past ASCII are never sent back.
func challengeOK(c []byte) bool {
	if len(c) == 0 || len(c) > MaxChallengeBytes {
		return false
	}
	for _, b := range c {
		if b < 0x20 || b > 0x7e {
			return false
		}
	}
	return true
}

// MaxTokenBytes bounds the unsigned tokens echoed as they come, Dropbox's
// challenge and Asana's X-Hook-Secret: Dropbox sends a random string of a
// few dozen characters, Asana 64 hex digits.
const MaxTokenBytes = 256

// tokenOK reports whether c is a token the node echoes unsigned: 1 to
// MaxTokenBytes of letters, digits and the base64, base64url and URL
// unreserved punctuation (+ / = - _ . ~). No space, quote, angle bracket
// or ampersand: such an echo could only be an attempt at markup.
func tokenOK(c []byte) bool {
	if len(c) == 0 || len(c) > MaxTokenBytes {
		return false
	}
	for _, b := range c {
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '+', b == '/', b == '=', b == '-', b == '_', b == '.', b == '~':
		default:
			return false
		}
	}
	return true
}

// graphTokenOK reports whether c may be Microsoft Graph's validationToken,
// URL-decoded: printable ASCII (challengeOK) without the characters of
// markup (< > " ' & ` \). Graph's token is a line of text ("Validation:
// Testing client application reachability for subscription Request-Id:
// <guid>"), so it has spaces and colons, and none of those.
func graphTokenOK(c []byte) bool {
	return challengeOK(c) && !bytes.ContainsAny(c, "<>\"'&`\\")
}

// only is the query's single value for name; one false when it is absent
// or given more than once (a provider sends it once: two are not its
// request, and which one to echo would be a guess).
func only(q url.Values, name string) (v string, one bool) {
	vs := q[name]
	if len(vs) != 1 {
		return "", false
	}
	return vs[0], true
}

// query parses the request's query string; ok false when it has none or
// it does not parse.
func query(uri []byte) (url.Values, bool) {
	i := bytes.IndexByte(uri, '?')
	if i < 0 {
		return nil, false
	}
	q, err := url.ParseQuery(string(uri[i+1:]))
	return q, err == nil
}

// jsonFields parses body and reports what check says of its root. It runs
// only for a request its pre-check took for a handshake, so it uses a
// parser of its own rather than the pool: the values check keeps view
// that parser, and stay valid after it returns.
func jsonFields(body []byte, check func(*fastjson.Value) bool) bool {
	var p fastjson.Parser
	root, err := p.ParseBytes(body)
	return err == nil && check(root)
}

// stringAt is the string at path in v, or nil.
func stringAt(v *fastjson.Value, path ...string) []byte {
	s := v.Get(path...)
	if s == nil || s.Type() != fastjson.TypeString {
		return nil
	}
	return s.GetStringBytes()
}

// fieldIs is the handshakes' pre-check: whether body has key (quoted)
// followed by a colon and want, JSON whitespace allowed around the colon
// and inside want's brackets, and want not followed by another digit. It
// may be fooled by a nested key of the same name (the parse that follows
// decides); it does not miss a match.
func fieldIs(body []byte, key, want string) bool {
	for rest := body; ; {
		i := bytes.Index(rest, []byte(key))
		if i < 0 {
			return false
		}
		rest = rest[i+len(key):]
		b := skipSpace(rest)
		if len(b) == 0 || b[0] != ':' {
			continue
		}
		b = skipSpace(b[1:])
		j := 0
		for ; j < len(want) && len(b) > 0; j++ {
			if b[0] != want[j] {
				break
			}
			b = b[1:]
			if want[j] == '[' {
				b = skipSpace(b)
			}
		}
		if j == len(want) && (len(b) == 0 || b[0] < '0' || b[0] > '9') {
			return true
		}
	}
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}
