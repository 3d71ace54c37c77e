package edge_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
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
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/verify"
	"github.com/ankusa/ankusa/wal"
)

// The handshake tests run the real listener with sources of the real
// presets (verify.type slack, zoom, twitch, discord, okta, dropbox, meta,
// microsoft-graph, xero, asana), built from configuration as a node builds
// them, and play each provider's documented handshake request, signed
// here as the provider signs it (crypto/hmac, crypto/ed25519).

const (
	slackSecret  = "8f742231b10e8888abcd99yyyzzz85a5" // Slack's documented example signing secret
	zoomSecret   = "zoom-secret-token"
	twitchSecret = "twitch-secret-0123456789"
	xeroKey      = "xero-webhook-key"
	oktaToken    = "Bearer okta-shared-secret"
	dropboxKey   = "dropbox-app-secret"
	metaKey      = "meta-app-secret"
	graphState   = "secretClientValue"                                                // Microsoft's documented example clientState
	asanaSecret  = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81" // Asana's documented example
	metaToken    = "meatyhamhock"                                                     // Meta's documented example
)

// discordPub, discordKey: the application's key pair, made for this run;
// the source is configured with the public key, hex, as Discord shows it.
var discordPub, discordKey = mustEd25519()

func mustEd25519() (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return pub, priv
}

func handshakeYAML() string {
	dpub := hex.EncodeToString(discordPub)
	return `node: {name: test}
` + limitsYAML + `route_resolver: {type: path, prefix: [webhooks]}
sources:
  slack: {verify: {type: slack, secret: ` + slackSecret + `}}
  zoom: {verify: {type: zoom, secret: ` + zoomSecret + `}}
  twitch: {verify: {type: twitch, secret: ` + twitchSecret + `}}
  discord: {verify: {type: discord, secret: ` + dpub + `}}
  discord-q: {verify: {type: discord, secret: ` + dpub + `}, on_verify_failure: quarantine}
  discord-flag: {verify: {type: discord, secret: ` + dpub + `}, on_verify_failure: accept_flag}
  discord-tight: {verify: {type: discord, secret: ` + dpub + `}, on_verify_failure: quarantine, quarantine: {rate: 0.001, burst: 1}}
  okta: {verify: {type: okta, secret: "` + oktaToken + `"}}
  dropbox: {verify: {type: dropbox, secret: ` + dropboxKey + `}}
  meta: {verify: {type: meta, secret: ` + metaKey + `, handshake_token: ` + metaToken + `}}
  graph: {verify: {type: microsoft-graph, secret: ` + graphState + `}}
  xero: {verify: {type: xero, secret: ` + xeroKey + `}}
  asana: {verify: {type: asana, secret: ` + asanaSecret + `}}
  asana-new: {verify: {type: asana, secret: some-other-secret}}
  slack-tight: {verify: {type: slack, secret: ` + slackSecret + `}, quarantine: {rate: 0.001, burst: 1}}
  dropbox-tight: {verify: {type: dropbox, secret: ` + dropboxKey + `}, quarantine: {rate: 0.001, burst: 1}}
  plain: {verify: {type: github, secret: gh}}
`
}

func hexMAC(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// slackSign signs as Slack and Zoom do: v0= hex HMAC-SHA256 over
// "v0:{timestamp}:{body}".
func slackSign(secret, ts, body string) string { return "v0=" + hexMAC(secret, "v0:"+ts+":"+body) }

// twitchSig: hex HMAC-SHA256 over message id + timestamp + body
// (dev.twitch.tv/docs/eventsub/handling-webhook-events#verifying-the-event-message).
func twitchSig(id, ts, body string) string { return hexMAC(twitchSecret, id+ts+body) }

// discordSign: hex Ed25519 over timestamp + body
// (discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers).
func discordSign(key ed25519.PrivateKey, ts, body string) string {
	return hex.EncodeToString(ed25519.Sign(key, []byte(ts+body)))
}

// hsNode serves handshakeYAML with the sources as configuration builds
// them; it returns the listener's address and the WAL directory.
func hsNode(t *testing.T) (string, string) {
	t.Helper()
	return hsNodeLog(t, zap.NewNop())
}

func hsNodeLog(t *testing.T, log *zap.Logger) (string, string) {
	t.Helper()
	return presetNode(t, handshakeYAML(), log)
}

// presetNode serves a config whose sources are built as configuration
// builds them (presets by name), committing to a WAL of its own; it
// returns the listener's address and the WAL directory.
func presetNode(t *testing.T, yaml string, log *zap.Logger) (string, string) {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), config.ValidateOptions{ResolverKnown: edge.ResolverKnown, VerifierKnown: verify.Known})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	st := source.NewStatic(cfg)
	dir := t.TempDir()
	w, err := wal.Open(wal.Options{FS: vfs.Default, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		t.Fatal(err)
	}
	r := edge.NewRouter(edge.Options{Resolver: res, Sources: st, WAL: w, Limits: cfg.Limits, Logger: log, Pen: &countingPen{}})
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
	a := hsAnswer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: string(b)}
	for _, name := range []string{"X-Hook-Secret", "X-Content-Type-Options"} {
		if v := resp.Header.Get(name); v != "" {
			a.header = [2]string{name, v}
		}
	}
	return a
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
	twitchTS := time.Now().UTC().Format(time.RFC3339Nano) // the preset holds it to ten minutes
	// https://discord.com/developers/docs/interactions/receiving-and-responding#receiving-an-interaction
	discordBody := `{"application_id":"1234567890","id":"987654321","token":"tok","type":1,"version":1}`
	// https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/#intent-to-receive
	xeroBody := `{"events":[],"firstEventSequence": 0,"lastEventSequence": 0, "entropy": "S0m3r4Nd0mt3xt"}`
	xm := hmac.New(sha256.New, []byte(xeroKey))
	xm.Write([]byte(xeroBody))
	xeroSig := base64.StdEncoding.EncodeToString(xm.Sum(nil))
	// https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks#notification-endpoint-validation
	graphToken := "Validation: Testing client application reachability for subscription Request-Id: 5f1c0a3e-8b7d-4f3a-9c2e-1a2b3c4d5e6f"
	graphQuery := "?validationToken=Validation%3a+Testing+client+application+reachability+for+subscription+Request-Id%3a+5f1c0a3e-8b7d-4f3a-9c2e-1a2b3c4d5e6f"
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)

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
			hdr: []string{"Content-Type", "application/json", "Twitch-Eventsub-Message-Id", twitchID, "Twitch-Eventsub-Message-Timestamp", twitchTS,
				"Twitch-Eventsub-Message-Type", "webhook_callback_verification", "Twitch-Eventsub-Subscription-Type", "channel.follow",
				"Twitch-Eventsub-Message-Signature", "sha256=" + twitchSig(twitchID, twitchTS, twitchBody)},
			want:   hsAnswer{200, "text/plain", "pogchamp-kappa-360noscope-vohiyo", [2]string{}},
			forged: []string{"Twitch-Eventsub-Message-Signature", "sha256=" + twitchSig("other", twitchTS, twitchBody)}, forgedStatus: 401},
		{name: "discord", method: "POST", path: "discord", body: discordBody,
			hdr:  []string{"Content-Type", "application/json", "X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(discordKey, ts, discordBody)},
			want: hsAnswer{200, "application/json", `{"type":1}`, [2]string{}},
			// Discord's own security check: a PING signed by another key.
			forged: []string{"X-Signature-Ed25519", discordSign(otherKey, ts, discordBody)}, forgedStatus: 401},
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
			got := hsDo(t, c.method, base+c.path, c.body, c.hdr...)
			if c.want.ctype == "" {
				got.ctype = "" // the transport's default; the provider reads no body
			}
			if got.status != c.want.status || got.ctype != c.want.ctype || got.body != c.want.body {
				t.Fatalf("answer %d %q %q\nwant   %d %q %q", got.status, got.ctype, got.body, c.want.status, c.want.ctype, c.want.body)
			}
			if got.header != c.want.header {
				t.Fatalf("extra header %q, want %q", got.header, c.want.header)
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
	// with its event type in the committed envelope and its JSON form:
	// Slack's a string, Discord's interaction type a number, Graph's the
	// first notification's changeType.
	event := `{"type":"event_callback","event":{"type":"app_mention","text":"hi"}}`
	if got := hsDo(t, "POST", base+"slack", event, "X-Slack-Request-Timestamp", ts, "X-Slack-Signature", slackSign(slackSecret, ts, event)); got.status != 201 {
		t.Fatalf("slack event: %d %s", got.status, got.body)
	}
	command := `{"application_id":"1234567890","id":"987654322","token":"tok","type":2,"data":{"name":"ping"},"version":1}`
	if got := hsDo(t, "POST", base+"discord", command, "X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(discordKey, ts, command)); got.status != 201 {
		t.Fatalf("discord command: %d %s", got.status, got.body)
	}
	// https://learn.microsoft.com/en-us/graph/change-notifications-delivery-webhooks#receive-notifications
	notes := `{"value":[{"id":"lsgTZMr9KwAAA","subscriptionId":"b62c4ad0-4c5a-4f4e-9b7f-2a0d5b8e0c11","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":"secretClientValue","changeType":"created","resource":"users/8d4f/messages/AAMk","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"},` +
		`{"id":"lsgTZMr9KwAAB","subscriptionId":"b62c4ad0-4c5a-4f4e-9b7f-2a0d5b8e0c11","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":"secretClientValue","changeType":"updated","resource":"users/8d4f/messages/AAMl","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95"}]}`
	if got := hsDo(t, "POST", base+"graph", notes, "Content-Type", "application/json"); got.status != 201 {
		t.Fatalf("graph notifications: %d %s", got.status, got.body)
	}
	// One forged item in a batch is a forged batch: refused, not committed.
	forgedNotes := strings.Replace(notes, `"clientState":"secretClientValue","changeType":"updated"`, `"clientState":"guessed","changeType":"updated"`, 1)
	if got := hsDo(t, "POST", base+"graph", forgedNotes, "Content-Type", "application/json"); got.status != 401 {
		t.Fatalf("graph batch with one forged clientState: %d %s, want 401", got.status, got.body)
	}
	hooks := committed(t, dir)
	want := []string{"app_mention", "2", "created"}
	if len(hooks) != len(want) {
		t.Fatalf("committed %d hooks, want %d: %+v", len(hooks), len(want), hooks)
	}
	for i, h := range hooks {
		if h.EventType != want[i] || !h.Verification.Verified {
			t.Errorf("hook %d: event type %q, verified %v; want %q, verified", i, h.EventType, h.Verification.Verified, want[i])
		}
	}
	if js := hooks[0].AppendJSON(nil); !strings.Contains(string(js), `"dedupe_key":"","event_type":"app_mention"`) {
		t.Fatalf("JSON form %s lacks the event type", js)
	}
}

// TestDiscordForgedPingIs401: Discord's security check sends PINGs with
// invalid signatures and removes the endpoint unless it answers 401. A
// source that quarantines or flags what fails verification still answers
// such a PING 401 and commits nothing, while an ordinary interaction that
// fails takes the source's path (it is committed, quarantined or
// flagged), and a PING signed by the application's key gets its PONG.
func TestDiscordForgedPingIs401(t *testing.T) {
	addr, dir := hsNode(t)
	base := "http://" + addr + "/webhooks/"
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	ping := `{"application_id":"1234567890","id":"987654321","token":"tok","type":1,"version":1}`
	command := `{"application_id":"1234567890","id":"987654322","token":"tok","type":2,"data":{"name":"ping"},"version":1}`
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, src := range []string{"discord-q", "discord-flag", "discord-tight"} {
		for _, forged := range [][]string{
			{"X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(otherKey, ts, ping)},       // another key
			{"X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(discordKey, ts+"1", ping)}, // another timestamp
			{"X-Signature-Timestamp", ts, "X-Signature-Ed25519", strings.Repeat("0", 128)},              // zeros
			{"X-Signature-Timestamp", ts}, // none
			{"X-Signature-Timestamp", "1", "X-Signature-Ed25519", discordSign(discordKey, "1", ping)}, // expired
		} {
			got := hsDo(t, "POST", base+src, ping, append([]string{"Content-Type", "application/json"}, forged...)...)
			if got.status != 401 || got.body == `{"type":1}` {
				t.Fatalf("%s: forged PING %v answered %d %q, want 401", src, forged[2:], got.status, got.body)
			}
		}
		if n := len(committed(t, dir)); n != 0 {
			t.Fatalf("%s: %d forged PINGs committed", src, n)
		}
		// A refusal spends no bucket: discord-tight's quarantine bucket
		// holds one token, yet five forgeries above got their 401 and
		// the signed PING below its PONG.
		got := hsDo(t, "POST", base+src, ping, "X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(discordKey, ts, ping))
		if got.status != 200 || got.body != `{"type":1}` {
			t.Fatalf("%s: signed PING answered %d %q, want the PONG", src, got.status, got.body)
		}
	}
	// The sources do take their on_verify_failure path for anything else.
	for _, src := range []string{"discord-q", "discord-flag"} {
		got := hsDo(t, "POST", base+src, command, "X-Signature-Timestamp", ts, "X-Signature-Ed25519", discordSign(otherKey, ts, command))
		if got.status/100 != 2 {
			t.Fatalf("%s: a forged command answered %d %q, want the source's on_verify_failure (2xx)", src, got.status, got.body)
		}
	}
	hooks := committed(t, dir)
	if len(hooks) != 2 {
		t.Fatalf("committed %d, want the two forged commands only", len(hooks))
	}
	for _, h := range hooks {
		if h.Verification.Verified || h.EventType != "2" {
			t.Fatalf("forged command committed %+v, want unverified, event type 2", h)
		}
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
// not have is echoed (Asana makes the secret there) but not trusted, and
// the operator is told, once per throttle period, that it is
// unauthenticated, where it came from, and to configure the value Asana's
// API returned only if the webhook is theirs, with the secret's
// fingerprint and never the secret; a known secret logs nothing.
func TestAsanaUnknownSecret(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	addr, dir := hsNodeLog(t, zap.New(core))
	for _, src := range []string{"asana", "asana-new"} {
		got := hsDo(t, "POST", "http://"+addr+"/webhooks/"+src, "", "X-Hook-Secret", asanaSecret)
		if got.status != 200 || got.header != [2]string{"X-Hook-Secret", asanaSecret} {
			t.Fatalf("%s handshake: %+v", src, got)
		}
	}
	if n := len(committed(t, dir)); n != 0 {
		t.Fatalf("%d handshakes committed", n)
	}
	lines := logs.FilterMessageSnippet("asana").All()
	if len(lines) != 1 {
		t.Fatalf("%d asana log lines, want 1 (the unknown secret's): %+v", len(lines), lines)
	}
	l := lines[0]
	fields := l.ContextMap()
	remote, _ := fields["remote_addr"].(string)
	if !strings.HasPrefix(remote, "127.0.0.1:") {
		t.Fatalf("remote_addr %q, want the sender's address", remote)
	}
	for _, want := range []string{"unauthenticated", "If and only if you created an Asana webhook for this source just now and its handshake came from " + remote + ",",
		"the X-Hook-Secret that Asana's answer to your POST /webhooks returned", "verify.secret"} {
		if !strings.Contains(l.Message, want) {
			t.Errorf("log line %q lacks %q", l.Message, want)
		}
	}
	// The secret itself is never logged (docs/security.md): its
	// fingerprint is, the first 16 hex digits of its SHA-256.
	sum := sha256.Sum256([]byte(asanaSecret))
	if fields["x_hook_secret_sha256"] != hex.EncodeToString(sum[:8]) || fields["source"] != "asana-new" {
		t.Errorf("log fields %v: want the secret's fingerprint and the source", fields)
	}
	for k, v := range fields {
		if s, _ := v.(string); strings.Contains(s, asanaSecret[:16]) && k != "x_hook_secret_sha256" || strings.Contains(l.Message, asanaSecret[:16]) {
			t.Errorf("log line carries the secret: %s=%v / %q", k, v, l.Message)
		}
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

// TestUnsignedHandshakesForged: Dropbox's challenge, Graph's
// validationToken and Asana's X-Hook-Secret are signed by no one, so a
// forgery of the well-formed request cannot be told from the provider's
// (it is answered unverified and spends the quarantine bucket:
// TestHandshakeRateLimited). What the edge refuses is each handshake sent
// where it does not belong, malformed, oversized or missing its parts: a
// GET is the 405 of any GET, a POST is verified as the hook it then is and
// refused 401; never an echo, never committed.
func TestUnsignedHandshakesForged(t *testing.T) {
	addr, dir := hsNode(t)
	base := "http://" + addr + "/webhooks/"
	long := strings.Repeat("a", verify.MaxTokenBytes+1)
	for _, c := range []struct {
		name, method, path string
		hdr                []string
		status             int
		never              string // what the answer must not carry
	}{
		// Dropbox: GET ?challenge=
		{"dropbox challenge to a github source", "GET", "plain?challenge=abc123", nil, 405, "abc123"},
		{"dropbox challenge to a slack source", "GET", "slack?challenge=abc123", nil, 405, "abc123"},
		{"dropbox challenge with markup", "GET", "dropbox?challenge=%3Cscript%3Ealert(1)%3C%2Fscript%3E", nil, 405, "script"},
		{"dropbox challenge with a header break", "GET", "dropbox?challenge=abc%0D%0ASet-Cookie:%20x=1", nil, 405, "Set-Cookie"},
		{"dropbox challenge oversized", "GET", "dropbox?challenge=" + long, nil, 405, long},
		{"dropbox challenge twice", "GET", "dropbox?challenge=abc123&challenge=def456", nil, 405, "abc123"},
		{"dropbox challenge empty", "GET", "dropbox?challenge=", nil, 405, ""},
		{"dropbox challenge posted", "POST", "dropbox?challenge=abc123", nil, 401, "abc123"},
		// Microsoft Graph: POST ?validationToken=
		{"graph token to a slack source", "POST", "slack?validationToken=Validation%3a+x", nil, 401, "Validation"},
		{"graph token to a github source", "POST", "plain?validationToken=Validation%3a+x", nil, 401, "Validation"},
		{"graph token with markup", "POST", "graph?validationToken=%3Cimg+src%3Dx%3E", nil, 401, "img"},
		{"graph token with a control character", "POST", "graph?validationToken=a%0Ab", nil, 401, ""},
		{"graph token oversized", "POST", "graph?validationToken=" + strings.Repeat("v", verify.MaxChallengeBytes+1), nil, 401, "vvvv"},
		{"graph token twice", "POST", "graph?validationToken=first&validationToken=second", nil, 401, "first"},
		{"graph token empty", "POST", "graph?validationToken=", nil, 401, ""},
		// Asana: POST with X-Hook-Secret
		{"asana secret to a github source", "POST", "plain", []string{"X-Hook-Secret", asanaSecret}, 401, asanaSecret},
		{"asana secret with markup", "POST", "asana-new", []string{"X-Hook-Secret", "<b>x</b>"}, 401, "<b>"},
		{"asana secret with a space", "POST", "asana-new", []string{"X-Hook-Secret", "b537207f 20cbfa02"}, 401, "b537207f"},
		{"asana secret oversized", "POST", "asana-new", []string{"X-Hook-Secret", long}, 401, long},
		{"asana secret empty", "POST", "asana-new", []string{"X-Hook-Secret", ""}, 401, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hsDo(t, c.method, base+c.path, "", c.hdr...)
			if got.status != c.status || c.never != "" && (strings.Contains(got.body, c.never) || strings.Contains(got.header[1], c.never)) ||
				got.header[0] == "X-Hook-Secret" || got.header[0] == "X-Content-Type-Options" && got.status == 200 {
				t.Fatalf("answered %d %q %q, want %d and no echo", got.status, got.body, got.header, c.status)
			}
		})
	}
	if hooks := committed(t, dir); len(hooks) != 0 {
		t.Fatalf("%d refused handshakes were committed", len(hooks))
	}
	// The well-formed ones are still answered, as text with nosniff.
	if got := hsDo(t, "GET", base+"dropbox?challenge=abc123", ""); got.status != 200 || got.body != "abc123" || got.ctype != "text/plain" || got.header != [2]string{"X-Content-Type-Options", "nosniff"} {
		t.Fatalf("dropbox challenge: %+v", got)
	}
	if got := hsDo(t, "POST", base+"graph?validationToken=Validation%3a+ok", ""); got.status != 200 || got.body != "Validation: ok" || got.ctype != "text/plain" || got.header != [2]string{"X-Content-Type-Options", "nosniff"} {
		t.Fatalf("graph validation: %+v", got)
	}
}
