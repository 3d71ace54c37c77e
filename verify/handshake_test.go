package verify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

func secret(v string) config.Secret { return config.Secret{Ref: v, Value: v} }

// TestHandshakeConfig: verify.handshake_token is required by Meta's
// handshake and refused, naming the key, everywhere else; an unknown
// handshake in a preset is refused naming verify.type.
func TestHandshakeConfig(t *testing.T) {
	for _, c := range []struct {
		name, handshake string
		token           config.Secret
		want            string // "" ok, else a prefix and a fragment
	}{
		{"meta with token", "meta", secret("meatyhamhock"), ""},
		{"meta without token", "meta", config.Secret{}, "verify.handshake_token: required by verifier"},
		{"meta with unresolved token", "meta", config.Secret{Ref: "env:NOPE"}, "verify.handshake_token: required by verifier"},
		{"slack with token", "slack", secret("x"), "verify.handshake_token: verifier \"p\"'s handshake (slack) does not use one"},
		{"no handshake with token", "", secret("x"), "verify.handshake_token: verifier \"p\" has no subscription handshake"},
		{"unknown handshake", "carrier-pigeon", config.Secret{}, "verify.type: preset \"p\" names handshake \"carrier-pigeon\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := withPreset(None{}, &Preset{Name: "p", Handshake: c.handshake}, config.Verify{HandshakeToken: c.token}, []string{"s"})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if hs, ok := v.(Handshaker); !ok || !hs.AcceptsGET() {
					t.Fatalf("%T: not a GET handshaker", v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	for _, k := range HandshakeKinds {
		c := config.Verify{}
		if k == "meta" {
			c.HandshakeToken = secret("t")
		}
		v, err := withPreset(None{}, &Preset{Name: k, Handshake: k, EventType: "json:type"}, c, []string{"s"})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if _, ok := v.(Handshaker); !ok {
			t.Fatalf("%s: %T is not a Handshaker", k, v)
		}
		if _, ok := v.(EventTyper); !ok {
			t.Fatalf("%s: %T is not an EventTyper", k, v)
		}
		want := k == "okta" || k == "dropbox" || k == "meta"
		if got := v.(Handshaker).AcceptsGET(); got != want {
			t.Errorf("%s: AcceptsGET = %v", k, got)
		}
	}
}

func handshaker(t *testing.T, kind string, secrets ...string) Handshaker {
	t.Helper()
	v, err := withPreset(None{}, &Preset{Name: kind, Handshake: kind}, config.Verify{}, secrets)
	if err != nil {
		t.Fatal(err)
	}
	return v.(Handshaker)
}

// TestHandshakeNotForOrdinaryHooks: an ordinary hook of each provider is
// not taken for its handshake, and a signed handshake whose verification
// failed is not answered (it takes on_verify_failure's path) except
// Xero's and Discord's, whose protocols want the 401.
func TestHandshakeNotForOrdinaryHooks(t *testing.T) {
	h := reqHeaders("POST", "/in/s")
	for kind, body := range map[string]string{
		"slack":   `{"type":"event_callback","event":{"type":"message","text":"url_verification"}}`,
		"zoom":    `{"event":"meeting.started","payload":{"object":{"topic":"endpoint.url_validation"}}}`,
		"twitch":  `{"challenge":"x"}`, // no Twitch-Eventsub-Message-Type
		"discord": `{"type":2,"data":{"options":[{"type" : 12}]}}`,
		"graph":   `{"value":[]}`,
		"xero":    `{"events":[{"resourceId":"1"}],"firstEventSequence":1}`,
		"asana":   `{"events":[]}`,
		"okta":    `{}`,
	} {
		if _, ok := handshaker(t, kind, "s").Handshake(h, []byte(body), nil); ok {
			t.Errorf("%s: an ordinary hook %s was answered as a handshake", kind, body)
		}
	}
	for kind, body := range map[string]string{
		"slack": `{"type":"url_verification","challenge":"c"}`,
		"zoom":  `{"event":"endpoint.url_validation","payload":{"plainToken":"p"}}`,
	} {
		if _, ok := handshaker(t, kind, "s").Handshake(h, []byte(body), ErrMismatch); ok {
			t.Errorf("%s: a handshake that failed verification was answered", kind)
		}
	}
	a, ok := handshaker(t, "xero", "s").Handshake(h, []byte(`{"events": [ ], "entropy":"x"}`), ErrMismatch)
	if !ok || a.Status != 401 || a.Verified || len(a.Body) != 0 {
		t.Fatalf("xero intent to receive with a bad signature: %+v, %v; want 401, empty, not verified", a, ok)
	}
	// Discord's security check: a PING with an invalid (or no) signature
	// is answered 401, never the PONG; an ordinary interaction that failed
	// is not answered here.
	for _, verr := range []error{ErrMismatch, ErrMissing, ErrMalformed} {
		a, ok := handshaker(t, "discord", "s").Handshake(h, []byte(`{"application_id":"1","type" : 1,"version":1}`), verr)
		if !ok || a.Status != 401 || a.Verified || string(a.Body) == `{"type":1}` {
			t.Fatalf("discord PING failing with %v: %+v, %v; want 401, not verified, not a PONG", verr, a, ok)
		}
	}
	if _, ok := handshaker(t, "discord", "s").Handshake(h, []byte(`{"type":2,"data":{"name":"x"}}`), ErrMismatch); ok {
		t.Fatal("discord: an interaction that is not a PING and failed verification was answered")
	}
}

// TestZoomKeyFollowsTheSignature: with two secrets (a rotation), the
// encryptedToken is keyed by the one that signed the request.
func TestZoomKeyFollowsTheSignature(t *testing.T) {
	body := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	ts := "1654503850"
	m := hmac.New(sha256.New, []byte("new"))
	m.Write([]byte("v0:" + ts + ":" + body))
	h := reqHeaders("POST", "/in/zoom", "X-Zm-Request-Timestamp", ts, "X-Zm-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	a, ok := handshaker(t, "zoom", "old", "new").Handshake(h, []byte(body), nil)
	k := hmac.New(sha256.New, []byte("new"))
	k.Write([]byte("qgg8vlvZRS6UYooatFL8Aw"))
	want := `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"` + hex.EncodeToString(k.Sum(nil)) + `"}`
	if !ok || string(a.Body) != want || !a.Verified {
		t.Fatalf("answer %s, %v\nwant %s", a.Body, ok, want)
	}
}

// TestChallengeBounded: a challenge past MaxChallengeBytes is not echoed.
func TestChallengeBounded(t *testing.T) {
	long := strings.Repeat("a", MaxChallengeBytes+1)
	if _, ok := handshaker(t, "dropbox", "s").HandshakeGET(reqHeaders("GET", "/in/d?challenge="+long), time.Now()); ok {
		t.Error("dropbox echoed an oversized challenge")
	}
	if _, ok := handshaker(t, "slack", "s").Handshake(reqHeaders("POST", "/"), []byte(`{"type":"url_verification","challenge":"`+long+`"}`), nil); ok {
		t.Error("slack echoed an oversized challenge")
	}
	if _, ok := handshaker(t, "asana", "s").Handshake(reqHeaders("POST", "/", "X-Hook-Secret", long), nil, nil); ok {
		t.Error("asana echoed an oversized secret")
	}
}

// TestAsanaSecret: the X-Hook-Secret is echoed; it is Verified only when
// it is one of the source's secrets.
func TestAsanaSecret(t *testing.T) {
	hs := handshaker(t, "asana", "old", "b537207f")
	for sec, verified := range map[string]bool{"b537207f": true, "old": true, "b537207": false, "unknown": false} {
		a, ok := hs.Handshake(reqHeaders("POST", "/", "X-Hook-Secret", sec), nil, ErrMissing)
		if !ok || a.Status != 200 || a.Header != [2]string{"X-Hook-Secret", sec} || a.Verified != verified {
			t.Errorf("X-Hook-Secret %q: %+v, %v; want echoed, verified %v", sec, a, ok, verified)
		}
	}
}

// TestFieldIs: the pre-check finds the key whatever JSON whitespace
// surrounds it, and does not take 10 for 1.
func TestFieldIs(t *testing.T) {
	for body, want := range map[string]bool{
		`{"type":1}`: true, `{"type" : 1 }`: true, "{\"type\":\n1}": true, `{"type":10}`: false, `{"type":2}`: false,
		`{"x":{"type":2},"type":1}`: true, `{"type"}`: false, `{"type":`: false,
	} {
		if got := fieldIs([]byte(body), `"type"`, "1"); got != want {
			t.Errorf("fieldIs(%s, type, 1) = %v", body, got)
		}
	}
	for body, want := range map[string]bool{`{"events":[]}`: true, `{"events": [ ] }`: true, `{"events":[1]}`: false} {
		if got := fieldIs([]byte(body), `"events"`, "[]"); got != want {
			t.Errorf("fieldIs(%s, events, []) = %v", body, got)
		}
	}
}

// TestUnsignedHandshakesRefuseMalformed: Dropbox's challenge, Graph's
// validationToken and Asana's X-Hook-Secret are signed by no one, so what
// the node refuses is what its provider would not send: a value missing,
// empty, given twice, past its bound, or with characters outside its
// shape. None of these is answered as the handshake (ok false: a GET is
// the 405 of any GET, a POST is verified as a hook), and a well-formed one
// next to them is.
func TestUnsignedHandshakesRefuseMalformed(t *testing.T) {
	long := strings.Repeat("a", MaxTokenBytes+1)
	for _, c := range []struct{ kind, uri, secret string }{
		{"dropbox", "/in/d", ""},
		{"dropbox", "/in/d?challenge=", ""},
		{"dropbox", "/in/d?Challenge=abc123", ""},
		{"dropbox", "/in/d?challenge=abc123&challenge=def456", ""},
		{"dropbox", "/in/d?challenge=" + long, ""},
		{"dropbox", "/in/d?challenge=%3Cscript%3Ealert(1)%3C%2Fscript%3E", ""},
		{"dropbox", "/in/d?challenge=abc+123", ""}, // a space
		{"dropbox", "/in/d?challenge=abc%0D%0ASet-Cookie:x", ""},
		{"dropbox", "/in/d?challenge=%C3%A9t%C3%A9", ""},
		{"dropbox", "/in/d?challenge=a%zz", ""}, // no query that parses
		{"graph", "/in/g?validationToken=", ""},
		{"graph", "/in/g?validationtoken=Validation%3a+x", ""},
		{"graph", "/in/g?validationToken=a&validationToken=b", ""},
		{"graph", "/in/g?validationToken=" + strings.Repeat("a", MaxChallengeBytes+1), ""},
		{"graph", "/in/g?validationToken=%3Chtml%3E", ""},
		{"graph", "/in/g?validationToken=a%22b", ""},
		{"graph", "/in/g?validationToken=a%00b", ""},
		{"graph", "/in/g?validationToken=line%0Aline", ""},
		{"asana", "/in/a", ""},
		{"asana", "/in/a", long},
		{"asana", "/in/a", "b537207f 20cbfa02"},
		{"asana", "/in/a", "<b537207f>"},
		{"asana", "/in/a", "b537207f\x7f"},
	} {
		a, ok := askUnsigned(t, c.kind, c.uri, c.secret)
		if ok {
			t.Errorf("%s %s %q: answered as the handshake: %+v", c.kind, c.uri, c.secret, a)
		}
	}
	for _, c := range []struct{ kind, uri, secret, echo string }{
		{"dropbox", "/in/d?challenge=Cn1xNFYLgPVjNRoOSuWW0MvwhHJ3TQHZ7iuGKxF8", "", "Cn1xNFYLgPVjNRoOSuWW0MvwhHJ3TQHZ7iuGKxF8"},
		{"dropbox", "/in/d?challenge=" + strings.Repeat("a", MaxTokenBytes), "", strings.Repeat("a", MaxTokenBytes)},
		{"graph", "/in/g?validationToken=Validation%3a+Testing+client+application+reachability+for+subscription+Request-Id%3a+522a8e7e-096a-494c-aaf1-ac0dcfca45b7", "",
			"Validation: Testing client application reachability for subscription Request-Id: 522a8e7e-096a-494c-aaf1-ac0dcfca45b7"},
		{"asana", "/in/a", "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81", ""},
	} {
		a, ok := askUnsigned(t, c.kind, c.uri, c.secret)
		if !ok || a.Status != 200 || string(a.Body) != c.echo || a.Verified {
			t.Errorf("%s %s: %+v, %v; want 200 echoing %q, unverified", c.kind, c.uri, a, ok, c.echo)
		}
		if c.echo != "" && (a.ContentType != "text/plain" || a.Header != [2]string{"X-Content-Type-Options", "nosniff"}) {
			t.Errorf("%s: echo answered as %q with %q, want text/plain and nosniff", c.kind, a.ContentType, a.Header)
		}
	}
}

// askUnsigned plays an unsigned handshake to a source of preset kind:
// Dropbox's GET, or a POST carrying Asana's X-Hook-Secret when secret is
// set (Graph's token is in the URI).
func askUnsigned(t *testing.T, kind, uri, secret string) (Answer, bool) {
	hs := handshaker(t, kind, "s")
	if kind == "dropbox" {
		return hs.HandshakeGET(reqHeaders("GET", uri), time.Now())
	}
	var kv []string
	if secret != "" {
		kv = append(kv, "X-Hook-Secret", secret)
	}
	return hs.Handshake(reqHeaders("POST", uri, kv...), nil, ErrMissing)
}
