package edge_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/verify"
	"github.com/ankusa/ankusa/wal"
)

// The handshake tests run the real listener with sources whose verifiers
// carry a preset's handshake (verify.Extend), and play each provider's
// documented handshake request. The signature families the presets use
// are stood in for by the verifiers below where the built-in types have
// none (Twitch's id+timestamp+body HMAC, Discord's Ed25519, Okta's token):
// what is under test is the handshake and the edge, not the family.

const (
	slackSecret  = "8f742231b10e8888abcd99yyyzzz85a5" // Slack's documented example signing secret
	zoomSecret   = "zoom-secret-token"
	twitchSecret = "twitch-secret-0123456789"
	xeroKey      = "xero-webhook-key"
	oktaToken    = "Bearer okta-shared-secret"
	asanaSecret  = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81" // Asana's documented example
	metaToken    = "meatyhamhock"                                                     // Meta's documented example
)

var discordKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

const handshakeYAML = `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [webhooks]}
sources:
  slack: {verify: {type: slack, secret: ` + slackSecret + `}}
  zoom: {verify: {type: hmac, secret: ` + zoomSecret + `, header: X-Zm-Signature, prefix: "v0=", timestamp_header: X-Zm-Request-Timestamp, signed_content: "v0:{timestamp}:{body}"}}
  twitch: {verify: {type: hmac, secret: ` + twitchSecret + `, header: Twitch-Eventsub-Message-Signature}}
  discord: {verify: {type: hmac, secret: unused, header: X-Signature-Ed25519}}
  okta: {verify: {type: hmac, secret: "` + oktaToken + `", header: Authorization}}
  dropbox: {verify: {type: hmac, secret: dropbox-app-secret, header: X-Dropbox-Signature}}
  meta: {verify: {type: hmac, secret: meta-app-secret, header: X-Hub-Signature-256, prefix: "sha256="}}
  graph: {verify: {type: hmac, secret: graph-client-state, header: X-Graph-Signature}}
  xero: {verify: {type: hmac, secret: ` + xeroKey + `, header: X-Xero-Signature, encoding: base64}}
  asana: {verify: {type: hmac, secret: ` + asanaSecret + `, header: X-Hook-Signature}}
  asana-new: {verify: {type: hmac, secret: some-other-secret, header: X-Hook-Signature}}
  slack-tight: {verify: {type: slack, secret: ` + slackSecret + `}, quarantine: {rate: 0.001, burst: 1}}
  dropbox-tight: {verify: {type: hmac, secret: dropbox-app-secret, header: X-Dropbox-Signature}, quarantine: {rate: 0.001, burst: 1}}
  plain: {verify: {type: github, secret: gh}}
`

// presets are the handshake presets of the sources above.
var presets = map[string]*verify.Preset{
	"slack":         {Name: "slack", Handshake: "slack", EventType: "json:event.type"},
	"slack-tight":   {Name: "slack", Handshake: "slack"},
	"zoom":          {Name: "zoom", Handshake: "zoom", EventType: "json:event"},
	"twitch":        {Name: "twitch", Handshake: "twitch", EventType: "header:Twitch-Eventsub-Subscription-Type"},
	"discord":       {Name: "discord", Handshake: "discord"},
	"okta":          {Name: "okta", Handshake: "okta"},
	"dropbox":       {Name: "dropbox", Handshake: "dropbox"},
	"dropbox-tight": {Name: "dropbox", Handshake: "dropbox"},
	"meta":          {Name: "meta", Handshake: "meta"},
	"graph":         {Name: "graph", Handshake: "graph"},
	"xero":          {Name: "xero", Handshake: "xero"},
	"asana":         {Name: "asana", Handshake: "asana"},
	"asana-new":     {Name: "asana", Handshake: "asana"},
}

// twitchVerifier: HMAC-SHA256 over message id + timestamp + body, hex,
// "sha256=" (dev.twitch.tv/docs/eventsub/handling-webhook-events).
type twitchVerifier struct{}

func (twitchVerifier) Name() string { return "twitch" }
func (twitchVerifier) Verify(h verify.Headers, body []byte, _ time.Time) error {
	want := "sha256=" + twitchSig(string(h.Peek("Twitch-Eventsub-Message-Id")), string(h.Peek("Twitch-Eventsub-Message-Timestamp")), string(body))
	if !hmac.Equal(h.Peek("Twitch-Eventsub-Message-Signature"), []byte(want)) {
		return verify.ErrMismatch
	}
	return nil
}

func twitchSig(id, ts, body string) string {
	m := hmac.New(sha256.New, []byte(twitchSecret))
	m.Write([]byte(id + ts + body))
	return hex.EncodeToString(m.Sum(nil))
}

// discordVerifier: Ed25519 over timestamp + body, hex signature.
type discordVerifier struct{}

func (discordVerifier) Name() string { return "discord" }
func (discordVerifier) Verify(h verify.Headers, body []byte, _ time.Time) error {
	sig, err := hex.DecodeString(string(h.Peek("X-Signature-Ed25519")))
	if err != nil {
		return verify.ErrMalformed
	}
	msg := append(append([]byte{}, h.Peek("X-Signature-Timestamp")...), body...)
	if !ed25519.Verify(discordKey.Public().(ed25519.PublicKey), msg, sig) {
		return verify.ErrMismatch
	}
	return nil
}

// tokenVerifier: the Authorization header equals the configured secret.
type tokenVerifier struct{}

func (tokenVerifier) Name() string { return "okta" }
func (tokenVerifier) Verify(h verify.Headers, _ []byte, _ time.Time) error {
	if !hmac.Equal(h.Peek("Authorization"), []byte(oktaToken)) {
		return verify.ErrMismatch
	}
	return nil
}

// hsNode serves handshakeYAML with each source's verifier extended by its
// preset; it returns the listener's address and the WAL directory.
func hsNode(t *testing.T) (string, string) {
	t.Helper()
	cfg, err := config.Load([]byte(handshakeYAML), config.ValidateOptions{ResolverKnown: edge.ResolverKnown})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	st := source.NewStatic(cfg)
	for name, p := range presets {
		src := st.Snapshot().Lookup([]byte(name))
		c := cfg.Sources[name].Verify
		base := src.Verifier
		switch name {
		case "twitch":
			base = twitchVerifier{}
		case "discord":
			base = discordVerifier{}
		case "okta":
			base = tokenVerifier{}
		case "meta":
			c.HandshakeToken = config.Secret{Ref: metaToken, Value: metaToken}
		}
		if src.Verifier, err = verify.Extend(base, p, c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	dir := t.TempDir()
	w, err := wal.Open(wal.Options{FS: vfs.Default, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	r := edge.NewRouter(edge.Options{Resolver: res, Sources: st, WAL: w, Limits: cfg.Limits})
	srv := edge.NewServer(r, cfg.Limits, zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Shutdown()
		if got := r.PipelineBytes(); got != 0 {
			t.Errorf("PipelineBytes() = %d after shutdown: a handshake kept a reservation", got)
		}
		w.Close()
	})
	return ln.Addr().String(), dir
}

// hsAnswer is what a test checks of an answer.
type hsAnswer struct {
	status int
	ctype  string
	body   string
	header [2]string
}

func hsDo(t *testing.T, method, url, body string, hdr ...string) hsAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body = nil
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return hsAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: string(b)}
}

// committed lists the envelopes in the WAL.
func committed(t *testing.T, dir string) []envelope.Envelope {
	t.Helper()
	var out []envelope.Envelope
	err := wal.ReadDir(vfs.Default, dir, func(r *wal.Record) error {
		if r.Kind == envelope.KindEnvelope {
			var e envelope.Envelope
			if _, err := envelope.Decode(r.Payload, &e); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return out
}

func slackSign(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":" + body))
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// TestHandshakes plays each provider's documented handshake through the
// real edge and checks the exact answer, then a forged one, and that none
// was committed.
func TestHandshakes(t *testing.T) {
	addr, dir := hsNode(t)
	base := "http://" + addr + "/webhooks/"
	ts := strconv.FormatInt(time.Now().Unix(), 10)

	// https://api.slack.com/events/url_verification (the page's payload)
	slackBody := `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	// https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint
	zoomBody := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	// https://dev.twitch.tv/docs/eventsub/handling-webhook-events#responding-to-a-challenge-request
	twitchBody := `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"webhook_callback_verification_pending","type":"channel.follow","version":"1","cost":1,"condition":{"broadcaster_user_id":"12826"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"}}`
	twitchID := "e76c6bd4-55c9-4987-8304-da1588d8988b"
	// https://discord.com/developers/docs/interactions/receiving-and-responding
	discordBody := `{"application_id":"1234567890","id":"987654321","token":"tok","type":1,"version":1}`
	discordSig := hex.EncodeToString(ed25519.Sign(discordKey, []byte(ts+discordBody)))
	// https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/#intent-to-receive
	xeroBody := `{"events":[],"firstEventSequence": 0,"lastEventSequence": 0, "entropy": "S0m3r4Nd0mt3xt"}`
	xm := hmac.New(sha256.New, []byte(xeroKey))
	xm.Write([]byte(xeroBody))
	xeroSig := base64.StdEncoding.EncodeToString(xm.Sum(nil))
	// https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks#notification-endpoint-validation
	graphToken := "Validation: Testing client application reachability for subscription Request-Id: 5f1c0a3e-8b7d-4f3a-9c2e-1a2b3c4d5e6f"
	graphQuery := "?validationToken=Validation%3a+Testing+client+application+reachability+for+subscription+Request-Id%3a+5f1c0a3e-8b7d-4f3a-9c2e-1a2b3c4d5e6f"

	for _, c := range []struct {
		name         string
		method, path string
		body         string
		hdr          []string
		want         hsAnswer
		forged       []string // the same request with these headers, refused
		forgedStatus int
		forgedPath   string
	}{
		{name: "slack", method: "POST", path: "slack", body: slackBody,
			hdr:    []string{"Content-Type", "application/json", "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", slackSign(slackSecret, ts, slackBody)},
			want:   hsAnswer{200, "application/json", `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, [2]string{}},
			forged: []string{"X-Slack-Signature", slackSign("wrong", ts, slackBody)}, forgedStatus: 401},
		{name: "zoom", method: "POST", path: "zoom", body: zoomBody,
			hdr: []string{"Content-Type", "application/json", "X-Zm-Request-Timestamp", ts, "X-Zm-Signature", slackSign(zoomSecret, ts, zoomBody)},
			// encryptedToken: python3 hmac.new(b"zoom-secret-token", b"qgg8vlvZRS6UYooatFL8Aw", sha256).hexdigest()
			want:   hsAnswer{200, "application/json", `{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"d9e0d764a78494688ba3f2d5c0ed4ca311394b4834d959759213424d2df961e3"}`, [2]string{}},
			forged: []string{"X-Zm-Signature", slackSign("wrong", ts, zoomBody)}, forgedStatus: 401},
		{name: "twitch", method: "POST", path: "twitch", body: twitchBody,
			hdr: []string{"Content-Type", "application/json", "Twitch-Eventsub-Message-Id", twitchID, "Twitch-Eventsub-Message-Timestamp", "2019-11-16T10:11:12.634234626Z",
				"Twitch-Eventsub-Message-Type", "webhook_callback_verification", "Twitch-Eventsub-Message-Signature", "sha256=" + twitchSig(twitchID, "2019-11-16T10:11:12.634234626Z", twitchBody)},
			want:   hsAnswer{200, "text/plain", "pogchamp-kappa-360noscope-vohiyo", [2]string{}},
			forged: []string{"Twitch-Eventsub-Message-Signature", "sha256=" + twitchSig("other", "x", twitchBody)}, forgedStatus: 401},
		{name: "discord", method: "POST", path: "discord", body: discordBody,
			hdr:    []string{"Content-Type", "application/json", "X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSig},
			want:   hsAnswer{200, "application/json", `{"type":1}`, [2]string{}},
			forged: []string{"X-Signature-Ed25519", strings.Repeat("00", 64)}, forgedStatus: 401},
		{name: "okta", method: "GET", path: "okta",
			hdr:    []string{"X-Okta-Verification-Challenge", "Eo7VxqaUYbHHy7EX8hdWDIM6iCMz8WxSbXwaUSeHvvt7", "Authorization", oktaToken},
			want:   hsAnswer{200, "application/json", `{"verification":"Eo7VxqaUYbHHy7EX8hdWDIM6iCMz8WxSbXwaUSeHvvt7"}`, [2]string{}},
			forged: []string{"Authorization", "Bearer guessed"}, forgedStatus: 401},
		{name: "dropbox", method: "GET", path: "dropbox?challenge=Cn1xNFYLgPVjNRoOSuWW0MvwhHJ3TQHZ7iuGKxF8", // https://www.dropbox.com/developers/reference/webhooks
			want: hsAnswer{200, "text/plain", "Cn1xNFYLgPVjNRoOSuWW0MvwhHJ3TQHZ7iuGKxF8", [2]string{"X-Content-Type-Options", "nosniff"}}},
		{name: "meta", method: "GET", path: "meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock", // developers.facebook.com/docs/graph-api/webhooks/getting-started
			want:         hsAnswer{200, "text/plain", "1158201444", [2]string{"X-Content-Type-Options", "nosniff"}},
			forgedPath:   "meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhocx",
			forgedStatus: 403},
		{name: "graph", method: "POST", path: "graph" + graphQuery, hdr: []string{"Content-Type", "text/plain; charset=utf-8"},
			want: hsAnswer{200, "text/plain", graphToken, [2]string{"X-Content-Type-Options", "nosniff"}}},
		{name: "xero", method: "POST", path: "xero", body: xeroBody,
			hdr:    []string{"Content-Type", "application/json", "X-Xero-Signature", xeroSig},
			want:   hsAnswer{200, "", "", [2]string{}},
			forged: []string{"X-Xero-Signature", base64.StdEncoding.EncodeToString(make([]byte, 32))}, forgedStatus: 401},
		{name: "asana", method: "POST", path: "asana", hdr: []string{"X-Hook-Secret", asanaSecret},
			want: hsAnswer{200, "", "", [2]string{"X-Hook-Secret", asanaSecret}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			if c.body == "" {
				req.Body = nil
			}
			for i := 0; i+1 < len(c.hdr); i += 2 {
				req.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ct := resp.Header.Get("Content-Type")
			if c.want.ctype == "" {
				ct = "" // the transport's default; the provider reads no body
			}
			if resp.StatusCode != c.want.status || ct != c.want.ctype || string(b) != c.want.body {
				t.Fatalf("answer %d %q %q\nwant   %d %q %q", resp.StatusCode, ct, b, c.want.status, c.want.ctype, c.want.body)
			}
			if h := c.want.header; h[0] != "" && resp.Header.Get(h[0]) != h[1] {
				t.Fatalf("header %s = %q, want %q", h[0], resp.Header.Get(h[0]), h[1])
			}
			if c.forged != nil || c.forgedPath != "" {
				path := c.path
				if c.forgedPath != "" {
					path = c.forgedPath
				}
				hdr := append(append([]string{}, c.hdr...), c.forged...)
				got := hsDo(t, c.method, base+path, c.body, hdr...)
				if got.status != c.forgedStatus || strings.Contains(got.body, "3eZbrw") || strings.Contains(got.body, "pogchamp") ||
					strings.Contains(got.body, "1158201444") || strings.Contains(got.body, "Eo7Vx") || strings.Contains(got.body, "encryptedToken") || got.body == `{"type":1}` {
					t.Fatalf("forged handshake answered %d %q, want %d and never the challenge", got.status, got.body, c.forgedStatus)
				}
			}
		})
	}
	if hooks := committed(t, dir); len(hooks) != 0 {
		t.Fatalf("%d handshakes were committed, want none: %+v", len(hooks), hooks[0])
	}

	// A hook to the same sources after the handshakes is an ordinary hook,
	// with its event type in the committed envelope and its JSON form.
	event := `{"type":"event_callback","event":{"type":"app_mention","text":"hi"}}`
	got := hsDo(t, "POST", base+"slack", event, "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", slackSign(slackSecret, ts, event))
	if got.status != 201 {
		t.Fatalf("slack event: %d %s", got.status, got.body)
	}
	hooks := committed(t, dir)
	if len(hooks) != 1 || hooks[0].EventType != "app_mention" || !hooks[0].Verification.Verified {
		t.Fatalf("committed %+v, want one verified hook of event type app_mention", hooks)
	}
	if js := hooks[0].AppendJSON(nil); !strings.Contains(string(js), `"dedupe_key":"","event_type":"app_mention"`) {
		t.Fatalf("JSON form %s lacks the event type", js)
	}
}

// TestHandshakeGETOnlyWhereDeclared: a GET to a source without a GET
// handshake, to a POST-handshake source, to an unknown source or a bad URL,
// and a GET handshake without its challenge, all get the same 405 bytes.
func TestHandshakeGETOnlyWhereDeclared(t *testing.T) {
	addr, dir := hsNode(t)
	raw := func(path string) string {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		b, _ := io.ReadAll(c)
		// The Date header is the only thing that may differ.
		var lines []string
		for _, l := range strings.Split(string(b), "\r\n") {
			if !strings.HasPrefix(l, "Date: ") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\r\n")
	}
	want := raw("/webhooks/nope")
	if !strings.HasPrefix(want, "HTTP/1.1 405") || !strings.Contains(want, "method_not_allowed") {
		t.Fatalf("GET to an unknown source: %q", want)
	}
	for _, p := range []string{"/webhooks/plain", "/webhooks/slack", "/webhooks/graph?validationToken=x", "/webhooks/dropbox",
		"/webhooks/meta?hub.mode=unsubscribe&hub.challenge=1&hub.verify_token=meatyhamhock", "/webhooks/okta", "/elsewhere", "/webhooks/a/../plain"} {
		if got := raw(p); got != want {
			t.Errorf("GET %s:\n%q\nwant the unknown URL's\n%q", p, got, want)
		}
	}
	if hooks := committed(t, dir); len(hooks) != 0 {
		t.Fatalf("%d hooks committed", len(hooks))
	}
}

// TestHandshakeRateLimited: an unverified handshake spends the source's
// quarantine bucket; once it is empty the handshake is a 429, as a hook
// that failed verification would be; a verified one spends the tenant's
// token, not the quarantine bucket.
func TestHandshakeRateLimited(t *testing.T) {
	addr, _ := hsNode(t)
	base := "http://" + addr + "/webhooks/"
	if got := hsDo(t, "GET", base+"dropbox-tight?challenge=abc", ""); got.status != 200 || got.body != "abc" {
		t.Fatalf("first handshake: %+v", got)
	}
	got := hsDo(t, "GET", base+"dropbox-tight?challenge=abc", "")
	if got.status != 429 || !strings.Contains(got.body, "rate_limited") {
		t.Fatalf("second handshake with the quarantine bucket empty: %+v, want 429 rate_limited", got)
	}
	// Verified handshakes spend the tenant's token, never the quarantine
	// bucket: slack-tight's holds one token and refills in ~17 minutes,
	// yet three verified handshakes in a row are answered.
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	body := `{"token":"t","challenge":"c1","type":"url_verification"}`
	for i := 0; i < 3; i++ {
		if got := hsDo(t, "POST", base+"slack-tight", body, "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", slackSign(slackSecret, ts, body)); got.status != 200 || got.body != `{"challenge":"c1"}` {
			t.Fatalf("verified handshake %d: %+v", i, got)
		}
	}
}

// TestAsanaUnknownSecret: Asana's handshake with a secret the source does
// not have is echoed (Asana makes the secret there) but not trusted.
func TestAsanaUnknownSecret(t *testing.T) {
	addr, _ := hsNode(t)
	req, _ := http.NewRequest("POST", "http://"+addr+"/webhooks/asana-new", nil)
	req.Header.Set("X-Hook-Secret", asanaSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Hook-Secret") != asanaSecret {
		t.Fatalf("asana handshake: %d, X-Hook-Secret %q", resp.StatusCode, resp.Header.Get("X-Hook-Secret"))
	}
}

// TestHandshakeMetrics: answered, refused and rate-limited handshakes are
// counted by kind and outcome.
func TestHandshakeMetrics(t *testing.T) {
	read := func(kind, outcome string) int {
		var b strings.Builder
		metrics.WritePrometheus(&b, false)
		prefix := `ankusa_edge_handshakes_total{kind="` + kind + `",outcome="` + outcome + `"} `
		for _, l := range strings.Split(b.String(), "\n") {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatalf("no metric %s", prefix)
		return 0
	}
	addr, _ := hsNode(t)
	base := "http://" + addr + "/webhooks/"
	answered, refused, limited := read("dropbox", "answered"), read("meta", "refused"), read("dropbox", "rate_limited")
	hsDo(t, "GET", base+"dropbox-tight?challenge=a", "")
	hsDo(t, "GET", base+"dropbox-tight?challenge=a", "")
	hsDo(t, "GET", base+"meta?hub.mode=subscribe&hub.challenge=1&hub.verify_token=wrong", "")
	if d := read("dropbox", "answered") - answered; d != 1 {
		t.Errorf("dropbox answered +%d, want +1", d)
	}
	if d := read("dropbox", "rate_limited") - limited; d != 1 {
		t.Errorf("dropbox rate_limited +%d, want +1", d)
	}
	if d := read("meta", "refused") - refused; d != 1 {
		t.Errorf("meta refused +%d, want +1", d)
	}
}
