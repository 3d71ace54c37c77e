package main

// The admin API's hook fetch, driven as an operator uses it: hooks posted by
// a provider are read back by the ids of their 201s, before and after they
// are sealed into segments and across restarts, and every refusal is
// checked from the outside.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ankusa/ankusa/envelope"
)

// hookJSON is the JSON form of a hook, read with nothing but encoding/json.
type hookJSON struct {
	ID           string              `json:"id"`
	Seq          uint64              `json:"seq"`
	TenantID     string              `json:"tenant_id"`
	SourceID     string              `json:"source_id"`
	ReceivedAt   string              `json:"received_at"`
	RouteParams  map[string]string   `json:"route_params"`
	Headers      map[string][]string `json:"headers"`
	Body         string              `json:"body"`
	BodyEncoding string              `json:"body_encoding"`
	Verification struct {
		Verifier string `json:"verifier"`
		Verified bool   `json:"verified"`
		Flagged  bool   `json:"flagged"`
	} `json:"verification"`
	DedupeKey  string `json:"dedupe_key"`
	RemoteAddr string `json:"remote_addr"`
}

// jsonFormKeys are the keys of the JSON form (version 1), in their order.
var jsonFormKeys = []string{"id", "seq", "tenant_id", "source_id", "received_at", "route_params",
	"headers", "body", "body_encoding", "verification", "dedupe_key", "remote_addr"}

var receivedAtRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)

// parseHook checks what every 200 of the hook fetch is (JSON, not cached,
// one object with the form's keys in order, then a newline) and decodes it.
func parseHook(path string, a answer) (hookJSON, error) {
	var h hookJSON
	if a.status != http.StatusOK {
		return h, fmt.Errorf("GET %s: %d %s, want 200", path, a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		return h, fmt.Errorf("GET %s: Content-Type %q, want application/json", path, ct)
	}
	if cc := a.header.Get("Cache-Control"); cc != "no-store" {
		return h, fmt.Errorf("GET %s: Cache-Control %q, want no-store (the answer holds a tenant's data)", path, cc)
	}
	text, ok := bytes.CutSuffix(a.body, []byte("\n"))
	if !ok || bytes.Contains(text, []byte("\n")) {
		return h, fmt.Errorf("GET %s: the answer is not one line ending in a newline: %q", path, a.body)
	}
	keys, err := topLevelKeys(text)
	if err != nil {
		return h, fmt.Errorf("GET %s: %v: %s", path, err, text)
	}
	if !slices.Equal(keys, jsonFormKeys) {
		return h, fmt.Errorf("GET %s: keys %q, want %q", path, keys, jsonFormKeys)
	}
	if err := json.Unmarshal(text, &h); err != nil {
		return h, fmt.Errorf("GET %s: %v: %s", path, err, text)
	}
	return h, nil
}

// topLevelKeys returns the keys of the JSON object text, in order.
func topLevelKeys(text []byte) ([]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(text))
	var keys []string
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// decodedBody is the body the JSON form carries, after its body_encoding;
// it also checks the encoding is the one the form prescribes for body.
func decodedBody(h *hookJSON, want []byte) ([]byte, error) {
	wantEnc := "base64"
	if utf8.Valid(want) {
		wantEnc = "utf8"
	}
	if h.BodyEncoding != wantEnc {
		return nil, fmt.Errorf("body_encoding %q, want %q", h.BodyEncoding, wantEnc)
	}
	if h.BodyEncoding == "utf8" {
		return []byte(h.Body), nil
	}
	return base64.StdEncoding.DecodeString(h.Body)
}

// checkIdentity checks the fields every fetched hook must get right: id,
// seq (the id's low 64 bits), tenant, source and body.
func checkIdentity(h *hookJSON, id, tenant, source string, body []byte) error {
	if h.ID != id {
		return fmt.Errorf("id %q, want the 201's %q", h.ID, id)
	}
	pid, err := envelope.ParseID([]byte(id))
	if err != nil {
		return fmt.Errorf("the 201's id %q does not parse: %v", id, err)
	}
	if h.Seq == 0 || pid.Seq() != h.Seq {
		return fmt.Errorf("seq %d, but the id's seq part is %d", h.Seq, pid.Seq())
	}
	if h.TenantID != tenant || h.SourceID != source {
		return fmt.Errorf("tenant_id %q source_id %q, want %q %q", h.TenantID, h.SourceID, tenant, source)
	}
	got, err := decodedBody(h, body)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("body (%d bytes) differs from the %d bytes sent", len(got), len(body))
	}
	return nil
}

// checkFetch fetches s with the ops token (and the acme token for acme's
// hooks) and checks all of its JSON form against what was sent. The first
// fetch keeps the JSON text; later ones must return the same bytes.
func checkFetch(t *testing.T, c *adminClient, phase, listen string, s *sent) {
	t.Helper()
	path := hookPath(s.tenant, s.id)
	a := c.get(path, opsToken)
	h, err := parseHook(path, a)
	if err == nil {
		err = checkIdentity(&h, s.id, s.tenant, s.source, s.body)
	}
	if err == nil {
		err = checkSent(&h, listen, s)
	}
	if err != nil {
		t.Fatalf("%s: hook %s (%s/%s): %v\n%s", phase, s.id, s.tenant, s.source, err, a.body)
	}
	switch {
	case s.json == "":
		s.json = string(a.body)
	case s.json != string(a.body):
		t.Fatalf("%s: hook %s now reads\n%s\nfirst read\n%s", phase, s.id, a.body, s.json)
	}
	if s.tenant == "acme" {
		if b := c.get(path, acmeToken); b.status != http.StatusOK || !bytes.Equal(b.body, a.body) {
			t.Fatalf("%s: GET %s with the tenant:acme token: %d %s\nthe tenant:* token got 200 %s", phase, path, b.status, b.body, a.body)
		}
	}
	// Ids are Crockford base32: the lower-case text names the same hook.
	if low := c.get(hookPath(s.tenant, strings.ToLower(s.id)), opsToken); low.status != http.StatusOK || !bytes.Equal(low.body, a.body) {
		t.Fatalf("%s: GET with the lower-case id of %s: %d %s", phase, s.id, low.status, low.body)
	}
}

// checkSent checks what checkIdentity does not: the seq the test expects,
// received_at, the headers as they went over the wire, and what a source
// without a verifier records.
func checkSent(h *hookJSON, listen string, s *sent) error {
	if h.Seq != s.seq {
		return fmt.Errorf("seq %d, want %d (hooks were sent one at a time)", h.Seq, s.seq)
	}
	if !receivedAtRE.MatchString(h.ReceivedAt) {
		return fmt.Errorf("received_at %q is not RFC 3339 UTC with nine fractional digits", h.ReceivedAt)
	}
	at, err := time.Parse(time.RFC3339Nano, h.ReceivedAt)
	if err != nil {
		return fmt.Errorf("received_at %q: %v", h.ReceivedAt, err)
	}
	// The node reads the clock between the request and the 201; a second
	// either side allows for a clock step.
	if at.Before(s.start.Add(-time.Second)) || at.After(s.end.Add(time.Second)) {
		return fmt.Errorf("received_at %s is not between the request (%s) and the 201 (%s)",
			h.ReceivedAt, s.start.UTC().Format(time.RFC3339Nano), s.end.UTC().Format(time.RFC3339Nano))
	}
	want := map[string][]string{}
	for _, f := range s.wireHeaders(listen) {
		want[f[0]] = append(want[f[0]], f[1])
	}
	if fmt.Sprint(h.Headers) != fmt.Sprint(want) {
		return fmt.Errorf("headers\n  %v\nwant the ones sent\n  %v", h.Headers, want)
	}
	if !strings.HasPrefix(h.RemoteAddr, "127.0.0.1:") {
		return fmt.Errorf("remote_addr %q, want the test's loopback address", h.RemoteAddr)
	}
	if len(h.RouteParams) != 0 {
		return fmt.Errorf("route_params %v, want {} (no routes)", h.RouteParams)
	}
	if h.Verification.Verifier != "none" || h.Verification.Flagged {
		return fmt.Errorf("verification %+v, want verifier none, not flagged", h.Verification)
	}
	return nil
}

// providerHooks are hooks as providers send them: JSON with a signature
// header and repeated fields, raw bytes, an empty body, text that needs
// escaping, text with a stray invalid byte, a form.
func providerHooks(rng *rand.Rand) []*sent {
	binary := make([]byte, 3000)
	for i := range binary {
		binary[i] = byte(rng.Uint32())
	}
	binary[0] = 0xff // never valid UTF-8
	return []*sent{
		{tenant: "acme", source: "acme-billing", body: []byte(`{"id":"evt_1","type":"invoice.paid","data":{"amount":4200}}`),
			headers: [][2]string{
				{"Content-Type", "application/json; charset=utf-8"},
				{"User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
				{"Stripe-Signature", "t=1764445200,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
				{"X-Multi", "one"},
				{"Accept", "*/*; q=0.5"},
				{"X-Multi", "two"},
				{"X-Quote", `say "hi" \ <b>&amp;</b>`},
			}},
		{tenant: "globex", source: "open", body: binary,
			headers: [][2]string{{"Content-Type", "application/octet-stream"}, {"X-Signature", "sha256=00ff"}}},
		{tenant: "acme", source: "open", body: []byte{},
			headers: [][2]string{{"Content-Type", "text/plain"}}},
		{tenant: "acme", source: "open", body: []byte("line1\n\tline2 ✓ é <b>&amp;</b> \u2028 \x01 \"q\" \\ end"),
			headers: [][2]string{{"Content-Type", "text/plain; charset=utf-8"}, {"X-Event", "text"}}},
		{tenant: "globex", source: "open", body: []byte("almost text \xff here"),
			headers: [][2]string{{"Content-Type", "text/plain"}}},
		{tenant: "acme", source: "acme-billing", body: []byte("a=1&b=%20&c=%E2%9C%93"),
			headers: [][2]string{
				{"Content-Type", "application/x-www-form-urlencoded"},
				{"X-Multi", "1"}, {"X-Multi", "2"}, {"X-Other", "o"}, {"X-Multi", "3"},
			}},
	}
}

// sendAll sends hooks one at a time, numbering them from next, and fetches
// each right after its 201. A pause between them puts their ids in
// distinct milliseconds (statusChecks builds ids between two of them).
func sendAll(t *testing.T, n *testNode, c *adminClient, phase string, next uint64, hooks []*sent) {
	t.Helper()
	for i, s := range hooks {
		sendRaw(t, n.listen, s)
		s.seq = next + uint64(i)
		checkFetch(t, c, phase, n.listen, s)
		time.Sleep(3 * time.Millisecond)
	}
}

func fetchAll(t *testing.T, n *testNode, c *adminClient, phase string, hooks []*sent) {
	t.Helper()
	for _, s := range hooks {
		checkFetch(t, c, phase, n.listen, s)
	}
}

// TestAdminHookFetch follows hooks from their 201 to the admin API: not
// sealed yet, after a restart that leaves them in the WAL, sealed, and
// sealed after a restart. Each read must give the same JSON bytes.
func TestAdminHookFetch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := newAdminNode(t, "1h")
	c := newAdminClient(t, n.admin)
	first := providerHooks(rng)

	p := n.serve(t)
	sendAll(t, n, c, "right after the 201", 1, first)
	if segs := sealedSegments(t, n); len(segs) != 0 {
		t.Fatalf("with segment.max_age 1h, segments were sealed within a second: %v", segs)
	}
	statusChecks(t, c, "not sealed", first)
	p.stop()

	p = n.serve(t)
	fetchAll(t, n, c, "after a restart, not sealed", first)
	if segs := sealedSegments(t, n); len(segs) != 0 {
		t.Fatalf("with segment.max_age 1h, segments were sealed: %v", segs)
	}
	p.stop()

	setMaxAge(t, n, "100ms")
	p = n.serve(t)
	waitSealed(t, n, p, uint64(len(first)))
	fetchAll(t, n, c, "sealed", first)
	statusChecks(t, c, "sealed", first)
	// Hooks that arrive after a seal go into a new segment. (Fetching them
	// while it is sealed races the sealer: TestAdminHookFetchWhileSealing.)
	second := []*sent{
		{tenant: "globex", source: "open", body: bytes.Repeat([]byte{0, 1, 0xfe}, 20000),
			headers: [][2]string{{"Content-Type", "application/octet-stream"}}},
		{tenant: "acme", source: "open", body: []byte(`{"after":"sealing"}`),
			headers: [][2]string{{"Content-Type", "application/json"}, {"X-Multi", "a"}, {"X-Multi", "b"}}},
	}
	for i, s := range second {
		sendRaw(t, n.listen, s)
		s.seq = uint64(len(first) + 1 + i)
	}
	all := append(slices.Clone(first), second...)
	waitSealed(t, n, p, uint64(len(all)))
	fetchAll(t, n, c, "all sealed", all)
	p.stop()

	p = n.serve(t)
	fetchAll(t, n, c, "sealed, after a restart", all)
	statusChecks(t, c, "sealed, after a restart", all)
	p.stop()
}

// statusChecks checks every refusal of the hook fetch on hooks (which
// hold hooks of acme and of globex sent in distinct milliseconds).
func statusChecks(t *testing.T, c *adminClient, phase string, hooks []*sent) {
	t.Helper()
	var acme, globex *sent
	var between envelope.ID
	for i, s := range hooks {
		if acme == nil && s.tenant == "acme" {
			acme = s
		}
		if globex == nil && s.tenant == "globex" {
			globex = s
		}
		if i+1 < len(hooks) && between.IsZero() {
			a, b := mustParseID(t, s.id), mustParseID(t, hooks[i+1].id)
			if a.Millis() < b.Millis() {
				// What the node would have numbered the next hook had it
				// come a millisecond earlier: inside the stored id range.
				between = envelope.MakeID(a.Millis(), a.Node(), a.Seq()+1)
			}
		}
	}
	if acme == nil || globex == nil || between.IsZero() {
		t.Fatal("BUG: statusChecks needs hooks of acme and globex, two in distinct milliseconds")
	}
	acmeID := mustParseID(t, acme.id)

	// 401: no token, a token that is not configured, the digest itself.
	for _, token := range []string{"", "not-a-token", sha256Hex(acmeToken), strings.ToUpper(acmeToken)} {
		a := c.get(hookPath("acme", acme.id), token)
		if a.status != http.StatusUnauthorized || a.header.Get("WWW-Authenticate") != "Bearer" ||
			a.header.Get("Content-Type") != "application/json" || !bytes.Contains(a.body, []byte(`"error":"unauthorized"`)) {
			t.Fatalf("%s: GET %s with token %q: %d %v %s\nwant 401 with WWW-Authenticate: Bearer and a JSON error",
				phase, hookPath("acme", acme.id), token, a.status, a.header, a.body)
		}
		if len(acme.body) > 0 && bytes.Contains(a.body, acme.body) {
			t.Fatalf("%s: a 401 carries the hook's body", phase)
		}
	}

	// 403: the tenant:acme token under globex, whether or not the id exists.
	for _, id := range []string{globex.id, between.String(), "evt_nope"} {
		a := c.get(hookPath("globex", id), acmeToken)
		if a.status != http.StatusForbidden || !bytes.Contains(a.body, []byte(`"error":"forbidden"`)) ||
			a.header.Get("WWW-Authenticate") != "" {
			t.Fatalf("%s: GET %s with the tenant:acme token: %d %v %s, want 403 forbidden", phase, hookPath("globex", id), a.status, a.header, a.body)
		}
	}

	// 404: one answer for an unknown id, a malformed one and another
	// tenant's, with either token that may look under acme.
	otherNode := envelope.MakeID(acmeID.Millis(), acmeID.Node()^1, acmeID.Seq())
	below := envelope.MakeID(1, acmeID.Node(), 1)
	above := envelope.MakeID(acmeID.Millis()+3_600_000, acmeID.Node(), 1<<40)
	paths := []string{
		hookPath("acme", between.String()), // unknown, inside the stored range
		hookPath("acme", otherNode.String()),
		hookPath("acme", below.String()),
		hookPath("acme", above.String()),
		hookPath("acme", "evt_nope"),
		hookPath("acme", "not-an-id"),
		hookPath("acme", acme.id[:len(acme.id)-1]+"U"), // U is not Crockford
		hookPath("acme", "evt_8"+acme.id[5:]),          // past 128 bits
		hookPath("acme", acme.id+"0"),
		hookPath("acme", globex.id), // another tenant's
		hookPath("globex", acme.id),
	}
	var first answer
	for i, path := range paths {
		for _, token := range []string{acmeToken, opsToken} {
			if strings.HasPrefix(path, "/v1/tenants/globex/") && token == acmeToken {
				continue
			}
			a := c.get(path, token)
			if i == 0 && token == acmeToken {
				first = a
				if a.status != http.StatusNotFound || !bytes.Contains(a.body, []byte(`"error":"not_found"`)) {
					t.Fatalf("%s: GET %s: %d %s, want 404 not_found", phase, path, a.status, a.body)
				}
				continue
			}
			if a.status != first.status || !bytes.Equal(a.body, first.body) || a.header.Get("Content-Type") != first.header.Get("Content-Type") {
				t.Fatalf("%s: GET %s: %d %s %q\ndiffers from the 404 for an unknown id: %d %s %q",
					phase, path, a.status, a.header.Get("Content-Type"), a.body, first.status, first.header.Get("Content-Type"), first.body)
			}
		}
	}
}

func mustParseID(t *testing.T, text string) envelope.ID {
	t.Helper()
	id, err := envelope.ParseID([]byte(text))
	if err != nil {
		t.Fatalf("id %q does not parse: %v", text, err)
	}
	return id
}

// TestAdminHookFetchAfterKill9: every hook acknowledged before a SIGKILL
// under load, while the node sealed every 150ms, can be fetched after the
// restart: first from the recovered WAL (the restart does not seal, so the
// fetches do not race the sealer; TestAdminHookFetchWhileSealing does
// that), then once a second restart has sealed them.
func TestAdminHookFetchAfterKill9(t *testing.T) {
	n := newAdminNode(t, "150ms")
	p := n.serve(t)
	l := startLoad(t, n.listen, 8, 4<<10)
	stopLoad := sync.OnceValue(l.stop)
	defer stopLoad()
	// Kill once some hooks are sealed and more keep coming.
	deadline := time.Now().Add(10 * time.Second)
	for (l.ackCount() < 400 || len(sealedSegments(t, n)) == 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.kill9()
	acks := stopLoad()
	if len(acks) == 0 || len(sealedSegments(t, n)) == 0 {
		t.Fatalf("in 10s under load: %d hooks acknowledged, segments %v; nothing to check", len(acks), sealedSegments(t, n))
	}
	c := newAdminClient(t, n.admin)

	setMaxAge(t, n, "1h")
	p = n.serve(t)
	maxSeq := fetchAcks(t, c, "after SIGKILL and a restart", acks)
	p.stop()

	setMaxAge(t, n, "50ms")
	p = n.serve(t)
	waitSealed(t, n, p, maxSeq)
	fetchAcks(t, c, "after SIGKILL, a restart and sealing", acks)

	// The restarted node numbers on above every acknowledged hook.
	s := &sent{tenant: "acme", source: "open", body: []byte("after the crash"), headers: [][2]string{{"Content-Type", "text/plain"}}}
	sendRaw(t, n.listen, s)
	a := c.get(hookPath("acme", s.id), opsToken)
	h, err := parseHook(hookPath("acme", s.id), a)
	if err == nil {
		err = checkIdentity(&h, s.id, s.tenant, s.source, s.body)
	}
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq <= maxSeq {
		t.Fatalf("the first hook after the restart has seq %d, not above the acknowledged %d", h.Seq, maxSeq)
	}
	p.stop()
	t.Logf("%d hooks acknowledged before SIGKILL (seqs up to %d), all fetched twice after the restart", len(acks), maxSeq)
}

// fetchAcks fetches every acknowledged hook with the ops token from a few
// connections at once and returns the highest seq.
func fetchAcks(t *testing.T, c *adminClient, phase string, acks []ack) uint64 {
	t.Helper()
	const workers = 4
	var (
		mu     sync.Mutex
		errs   []string
		maxSeq uint64
		seqs   = map[uint64]string{}
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(acks); i += workers {
				a := acks[i]
				path := hookPath(a.tenant, a.id)
				ans, err := c.tryGet(path, opsToken)
				var h hookJSON
				if err == nil {
					h, err = parseHook(path, ans)
				}
				if err == nil {
					err = checkIdentity(&h, a.id, a.tenant, a.source, a.body)
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Sprintf("hook %s (%s/%s, %d bytes, 201 at %s): %v",
						a.id, a.tenant, a.source, len(a.body), a.at.Format("15:04:05.000000"), err))
				} else if other, dup := seqs[h.Seq]; dup {
					errs = append(errs, fmt.Sprintf("hooks %s and %s both have seq %d", other, a.id, h.Seq))
				} else {
					seqs[h.Seq] = a.id
					maxSeq = max(maxSeq, h.Seq)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%s: %d of %d acknowledged hooks did not come back right; first ones:\n%s",
			phase, len(errs), len(acks), strings.Join(errs[:min(len(errs), 5)], "\n"))
	}
	return maxSeq
}

// TestAdminHookFetchWhileSealing fetches hooks just acknowledged while the
// node seals every few milliseconds under load: a hook is in the open
// segment, or being sealed, or sealed, and every fetch must find it.
func TestAdminHookFetchWhileSealing(t *testing.T) {
	const (
		fetchers = 4
		runFor   = 1500 * time.Millisecond
	)
	n := newAdminNode(t, "20ms")
	p := n.serve(t)
	c := newAdminClient(t, n.admin)
	l := startLoad(t, n.listen, 4, 2<<10)
	stopLoad := sync.OnceValue(l.stop)
	defer stopLoad()
	var (
		mu      sync.Mutex
		fetches int
		misses  []string
		wg      sync.WaitGroup
	)
	end := time.Now().Add(runFor)
	for w := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for time.Now().Before(end) {
				l.mu.Lock()
				k := len(l.acks)
				var a ack
				if k > 0 {
					// Mostly the newest hooks: those the sealer is working on.
					a = l.acks[k-1-rng.IntN(min(k, 8))]
				}
				l.mu.Unlock()
				if k == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				path := hookPath(a.tenant, a.id)
				ans, err := c.tryGet(path, opsToken)
				var h hookJSON
				if err == nil {
					h, err = parseHook(path, ans)
				}
				if err == nil {
					err = checkIdentity(&h, a.id, a.tenant, a.source, a.body)
				}
				mu.Lock()
				fetches++
				if err != nil {
					misses = append(misses, fmt.Sprintf("%s (201 at %s, fetched at %s): %v",
						a.id, a.at.Format("15:04:05.000000"), time.Now().Format("15:04:05.000000"), err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	acks := stopLoad()
	segs := sealedSegments(t, n)
	p.stop()
	t.Logf("%d fetches of %d hooks acknowledged while %d segments were sealed", fetches, len(acks), len(segs))
	if len(misses) > 0 {
		t.Fatalf("%d of %d fetches of acknowledged hooks failed; first ones:\n%s",
			len(misses), fetches, strings.Join(misses[:min(len(misses), 5)], "\n"))
	}
	if len(segs) < 5 {
		t.Fatalf("only %d segments were sealed in %s: the fetches did not race the sealer", len(segs), runFor)
	}
}
