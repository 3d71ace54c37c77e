package main

// A node whose sources deliver to NATS JetStream (type: nats): hooks
// land in the stream with their exact bodies; a server that goes away
// makes the sink retry (and the breaker open) until it is back, nothing
// lost and nothing stored twice; a hook over the server's max_payload is
// a dead letter at once; the sink's id, derived from its target, stays
// when the source is edited through the admin API, so a pending hook
// keeps its delivery row.
//
// The tests need nats-server (internal/natstest): the first runs a private
// one it stops and starts, the second uses the shared one on
// 127.0.0.1:4222 with a stream of its own.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/natstest"
)

// natsStored reads every message of stream and checks each is one of the
// acks, with its subject, headers and the envelope of its exact body. It
// returns the count of messages per event id.
func natsStored(t *testing.T, c *natstest.Client, stream, prefix string, acks []ack, want int) map[string]int {
	t.Helper()
	byID := make(map[string]ack, len(acks))
	for _, a := range acks {
		byID[a.id] = a
	}
	ms := c.Msgs(stream, want)
	seen := make(map[string]int, len(ms))
	for _, m := range ms {
		id := m.Header.Get("Nats-Msg-Id")
		a, ok := byID[id]
		if !ok {
			t.Fatalf("message %d (%q) in the stream is not a hook the node acknowledged", m.Sequence, id)
		}
		seen[id]++
		if want := prefix + "." + a.tenant + "." + a.source; m.Subject != want {
			t.Fatalf("%s: subject %q, want %q", id, m.Subject, want)
		}
		if m.Header.Get("ankusa-event-id") != id || m.Header.Get("ankusa-tenant") != a.tenant || m.Header.Get("ankusa-source") != a.source ||
			m.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: headers %v", id, m.Header)
		}
		if n, err := strconv.Atoi(m.Header.Get("ankusa-attempt")); err != nil || n < 1 {
			t.Fatalf("%s: ankusa-attempt %q", id, m.Header.Get("ankusa-attempt"))
		}
		var e envelope.Envelope
		if err := e.UnmarshalJSON(m.Data); err != nil {
			t.Fatalf("%s: the data is not the envelope's JSON form: %v", id, err)
		}
		if e.ID.String() != id || e.TenantID != a.tenant || e.SourceID != a.source || !bytes.Equal(e.Body, a.body) {
			t.Fatalf("%s: the envelope says id %v tenant %q source %q body %q; sent %q %q %q", id, e.ID, e.TenantID, e.SourceID, e.Body, a.tenant, a.source, a.body)
		}
	}
	return seen
}

// natsMetric reads one counter of the node's /metrics (0 when absent).
func natsMetric(t *testing.T, c *adminClient, name string) float64 {
	t.Helper()
	ans := c.get("/metrics", "")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(ans.body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func TestNATSDispatchNode(t *testing.T) {
	srv := natstest.StartServer(t, natstest.ServerOptions{MaxPayload: 16 << 10})
	stream, prefix := natstest.Names(t, srv.URL())
	js := natstest.Connect(t, srv.URL())
	js.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})

	node := fmt.Sprintf("nats-node-%08x", rand.Uint32())
	sink := fmt.Sprintf(`      - {id: js, type: nats, url: %q, stream: %q, subject: "%s.{tenant_id}.{source_id}", retry_base: 50ms, retry_max: 300ms, max_attempts: 1000, connect_timeout: 1s, timeout: 2s}
`, srv.URL(), stream, prefix)
	n := newDispatchConfigNode(t, node, sink)
	p := n.serve(t)
	c := newAdminClient(t, n.admin)
	tenant := func(i int) string { return fmt.Sprintf("t%d", i%3) }

	// Up: every hook in the stream, once, exactly.
	start := time.Now()
	acks := sendHooks(t, n.listen, 60, 6, tenant)
	seen := natsStored(t, js, stream, prefix, acks, len(acks))
	if len(seen) != len(acks) {
		t.Fatalf("%d distinct hooks in the stream, want %d", len(seen), len(acks))
	}
	upTook := time.Since(start)

	// Down: the hooks are acknowledged (the WAL has them), the sink
	// fails fast and retryably, and the breaker opens.
	srv.Stop()
	downAt := time.Now()
	down := sendHooks(t, n.listen, 40, 4, tenant)
	time.Sleep(2 * time.Second)
	circuit := natsMetric(t, c, `ankusa_dispatch_attempts_total{sink="open/js",outcome="circuit_open"}`)
	if circuit == 0 || !strings.Contains(p.stderr.String(), "circuit opened") {
		t.Fatalf("with the server down 2s the breaker has not opened (circuit_open attempts %v):\n%s", circuit, logSummary(p.stderr.String()))
	}
	var failed attemptJSON
	for _, a := range down {
		if as := attemptsOf(t, c, a.tenant, a.id); len(as) > 0 {
			failed = as[0]
			break
		}
	}
	if failed.Outcome != "retry" || !strings.Contains(failed.Error, "not connected") || failed.Sink != "js" {
		t.Fatalf("first attempt of a hook sent while the server was down: %+v, want a retry naming the lost connection", failed)
	}

	// Back: every hook of the outage is delivered, none twice.
	srv.Start()
	upAgain := time.Now()
	all := append(append([]ack(nil), acks...), down...)
	deadline := time.Now().Add(25 * time.Second)
	var info *jetstream.StreamInfo
	js = natstest.Connect(t, srv.URL())
	for {
		st, err := js.JS.Stream(t.Context(), stream)
		if err == nil {
			info, err = st.Info(t.Context())
		}
		if err == nil && info.State.Msgs >= uint64(len(all)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("25s after the server came back the stream holds %v of %d hooks (%v):\n%s\n%s", info, len(all), err,
				breakerSummary(p.stderr.String()), logSummary(p.stderr.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(upAgain)
	seen = natsStored(t, js, stream, prefix, all, len(all))
	for _, a := range all {
		if seen[a.id] != 1 {
			t.Fatalf("hook %s is in the stream %d times", a.id, seen[a.id])
		}
	}
	retried := 0
	for _, a := range down {
		as := attemptsOf(t, c, a.tenant, a.id)
		if len(as) == 0 || as[len(as)-1].Outcome != "delivered" {
			t.Fatalf("hook %s: attempt log %+v, want it to end delivered", a.id, as)
		}
		if len(as) > 1 {
			retried++
		}
	}

	// Too large: over the server's max_payload, a dead letter at once.
	big := postOne(t, n.listen, "big", "open", bytes.Repeat([]byte("x"), 20<<10))
	var dead []map[string]any
	if !waitFor(10*time.Second, func() bool { dead = deadLetters(t, c, "big"); return len(dead) > 0 }) {
		t.Fatalf("no dead letter for a hook over max_payload after 10s: %+v", attemptsOf(t, c, "big", big.id))
	}
	if d := dead[0]; d["sink"] != "js" || d["attempts"] != float64(1) || !strings.Contains(fmt.Sprint(d["last_error"]), "max_payload") {
		t.Fatalf("dead letter %v: want sink js, 1 attempt, an error naming max_payload", d)
	}
	for _, tn := range []string{"t0", "t1", "t2"} {
		if d := deadLetters(t, c, tn); len(d) > 0 {
			t.Fatalf("tenant %s has %d dead letters, first %v", tn, len(d), d[0])
		}
	}
	if got := natsMetric(t, c, "ankusa_nats_sink_acked_total"); got < float64(len(all)) {
		t.Errorf("ankusa_nats_sink_acked_total %v, want at least %d", got, len(all))
	}
	p.stop()
	t.Logf("%d hooks in the stream %v after the first post; server down %v: %d hooks acknowledged meanwhile, %d of them retried, all in the stream %v after the restart, none twice; %s; a %d-byte hook dead-lettered: %v",
		len(acks), upTook.Round(time.Millisecond), upAgain.Sub(downAt).Round(time.Millisecond), len(down), retried, recovered.Round(time.Millisecond),
		breakerSummary(p.stderr.String()), len(big.body), dead[0]["last_error"])
}

// The sink's id is derived from its target (url, stream, subject): a PUT
// that changes how it delivers (timeouts, backoff) keeps it, so a hook
// pending across the edit keeps its delivery row and attempt count.
func TestNATSSinkIDStableAcrossEdit(t *testing.T) {
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	spec := func(timeout string) string {
		return fmt.Sprintf(`{"name":"jsedit","verify":{"type":"none"},"sinks":[{"type":"nats","url":%q,"stream":%q,"subject":"%s.{tenant_id}","retry_base":"50ms","retry_max":"200ms","max_attempts":1000,"timeout":%q}]}`,
			u, stream, prefix, timeout)
	}
	sinkID := func(what string, a answer) string {
		t.Helper()
		var v struct {
			Sinks []struct {
				ID string `json:"id"`
			} `json:"sinks"`
		}
		decode(t, what, a, &v)
		if len(v.Sinks) != 1 || !strings.HasPrefix(v.Sinks[0].ID, "nats-") {
			t.Fatalf("%s: sinks %s, want one with a derived nats-... id", what, a.body)
		}
		return v.Sinks[0].ID
	}
	created := n.do("POST", sourcesOf("acme"), opsToken, spec("3s"))
	wantStatus(t, "POST jsedit", created, http.StatusCreated)
	id := sinkID("POST jsedit", created)

	// No stream yet: the hook is retried under the sink's id.
	pending := hookID(t, "a hook to jsedit", n.hook("acme", "jsedit", `{"pending":1}`))
	c := newAdminClient(t, n.admin)
	var before []attemptJSON
	if !waitFor(5*time.Second, func() bool { before = attemptsOf(t, c, "acme", pending); return len(before) >= 2 }) {
		t.Fatalf("attempts of the pending hook: %+v", before)
	}
	if before[0].Sink != id || before[0].Outcome != "retry" || !strings.Contains(before[0].Error, stream) {
		t.Fatalf("first attempt %+v: want a retry of sink %s naming the missing stream %s", before[0], id, stream)
	}

	edited := n.do("PUT", sourceAt("acme", "jsedit"), opsToken, spec("4s"))
	wantStatus(t, "PUT jsedit with another timeout", edited, http.StatusOK)
	if got := sinkID("PUT jsedit", edited); got != id {
		t.Fatalf("the sink's id changed from %s to %s with its timeout", id, got)
	}
	if got := sinkID("GET jsedit", n.do("GET", sourceAt("acme", "jsedit"), opsToken, "")); got != id {
		t.Fatalf("GET after the PUT: sink id %s, want %s", got, id)
	}

	js := natstest.Connect(t, u)
	js.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage})
	var after []attemptJSON
	if !waitFor(10*time.Second, func() bool {
		after = attemptsOf(t, c, "acme", pending)
		return len(after) > 0 && after[len(after)-1].Outcome == "delivered"
	}) {
		t.Fatalf("the pending hook was not delivered 10s after the stream was made: %+v", after)
	}
	for i, a := range after {
		if a.Sink != id || a.N != i+1 {
			t.Fatalf("attempt log %+v: entry %d is sink %q attempt %d, want sink %s attempt %d (one row across the edit)", after, i, a.Sink, a.N, id, i+1)
		}
	}
	ms := js.Msgs(stream, 1)
	if len(ms) != 1 || ms[0].Header.Get("Nats-Msg-Id") != pending || ms[0].Header.Get("ankusa-attempt") != strconv.Itoa(len(after)) {
		t.Fatalf("stream holds %d messages; first %v", len(ms), ms[0].Header)
	}
	var e envelope.Envelope
	if err := json.Unmarshal(ms[0].Data, &e); err != nil || string(e.Body) != `{"pending":1}` {
		t.Fatalf("the message's envelope: %v body %q", err, e.Body)
	}
	p.stop()
	t.Logf("sink %s: %d attempts before the PUT, the hook delivered at attempt %d after it", id, len(before), len(after))
}

// With wal.type: none the nats sink is the hook's only copy: a 201 comes
// only after the stream's PubAck (every 201'd id is in the stream with
// its body), and while the server is down the node answers 503 with
// Retry-After, never a 201; once it is back, 201s resume.
func TestNATSWALNone(t *testing.T) {
	srv := natstest.StartServer(t, natstest.ServerOptions{})
	stream, prefix := natstest.Names(t, srv.URL())
	js := natstest.Connect(t, srv.URL())
	js.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage})
	n := newConfiguredNode(t, func(n *testNode) string {
		sink := fmt.Sprintf(`{id: js, type: nats, url: %q, stream: %q, subject: "%s.{tenant_id}.{source_id}", connect_timeout: 1s, timeout: 2s}`, srv.URL(), stream, prefix)
		return fmt.Sprintf(walNoneSinkYAML, fmt.Sprintf("nats-walnone-%08x", rand.Uint32()), n.dataDir, n.listen, n.admin, sink)
	})
	p := n.serve(t)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var acks []ack
	send := func(i int) answered {
		return postHook(client, n.listen, fmt.Sprintf("t%d", i%2), "open", fmt.Appendf(nil, `{"order":%d}`, i))
	}
	for i := range 20 {
		a := send(i)
		if a.err != nil || a.status != http.StatusCreated {
			t.Fatalf("hook %d with the server up: %v", i, a)
		}
		acks = append(acks, a.ack())
	}
	srv.Stop()
	refused := 0
	for i := 20; i < 30; i++ {
		a := send(i)
		switch {
		case a.is503():
			refused++
		case a.status == http.StatusCreated:
			t.Fatalf("hook %d answered 201 with the server down: %v", i, a)
		default:
			t.Fatalf("hook %d with the server down: %v, want 503 unavailable with Retry-After", i, a)
		}
	}
	srv.Start()
	var back answered
	if !waitFor(15*time.Second, func() bool { back = send(30); return back.status == http.StatusCreated }) {
		t.Fatalf("15s after the server came back: %v", back)
	}
	acks = append(acks, back.ack())
	js = natstest.Connect(t, srv.URL())
	seen := natsStored(t, js, stream, prefix, acks, len(acks))
	for _, a := range acks {
		if seen[a.id] == 0 {
			t.Fatalf("hook %s was answered 201 but is not in the stream", a.id)
		}
	}
	p.stop()
	t.Logf("wal.type none: %d hooks answered 201, each in the stream; %d answered 503 while the server was down; 201 again after the restart",
		len(acks), refused)
}
