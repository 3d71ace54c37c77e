package main

// A node whose sources deliver to Kafka (DESIGN.md §2.7, issue 19): the
// cluster is franz-go's in-process kfake, in this test process; the node
// is the built binary. Hooks land in the topic with their exact bodies; a
// broker that refuses produces makes them retry and then deliver; a record
// the topic refuses for its size is a dead letter at once; a cluster that
// is down opens the circuit breaker; the sink's id survives a source edit.

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaCluster starts a kfake cluster of three brokers (on ports, when
// given) with topics hooks (3 partitions) and small (max.message.bytes
// 4096), closed at the end of the test.
func kafkaCluster(t *testing.T, ports ...int) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(3, "hooks")}
	if len(ports) > 0 {
		opts = append(opts, kfake.Ports(ports...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "small", 1, 3
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "max.message.bytes", kafkaString("4096")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("cannot create topic small: %v", err)
	}
	return c
}

func kafkaString(s string) *string { return &s }

// kafkaSourcesYAML: after dispatchNodeYAML, the kafka sink kq of source
// open (topic hooks, format raw) and source small (tenant acme, topic
// small, format envelope); %[1]s are the brokers, %[2]s more sink keys.
const kafkaSourcesYAML = `      - {id: kq, type: kafka, brokers: %[1]s, topic: hooks, format: raw, %[2]s}
  small:
    tenant_id: acme
    verify: {type: none}
    sinks:
      - {id: kq, type: kafka, brokers: %[1]s, topic: small, %[2]s}
`

// kafkaSinkKeys: quick attempts and retries, so a test sees several.
const kafkaSinkKeys = `timeout: 2s, connect_timeout: 500ms, retry_base: 50ms, retry_max: 400ms, max_attempts: 1000`

// kafkaBrokersYAML is addrs as a YAML flow list (quoted: host:port in a
// flow list would read as a mapping).
func kafkaBrokersYAML(addrs []string) string {
	b, _ := json.Marshal(addrs)
	return string(b)
}

// kafkaRecord is one record consumed from a topic.
type kafkaRecord struct {
	key, value []byte
	headers    map[string]string
}

// kafkaConsumer reads a topic from its start until the test ends.
type kafkaConsumer struct {
	mu   sync.Mutex
	byID map[string][]kafkaRecord
	n    int
}

func kafkaConsume(t *testing.T, addrs []string, topic string) *kafkaConsumer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	kc := &kafkaConsumer{byID: map[string][]kafkaRecord{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, r := range cl.PollFetches(ctx).Records() {
				kr := kafkaRecord{key: r.Key, value: r.Value, headers: map[string]string{}}
				for _, h := range r.Headers {
					kr.headers[h.Key] = string(h.Value)
				}
				kc.mu.Lock()
				id := kr.headers["ankusa-event-id"]
				kc.byID[id] = append(kc.byID[id], kr)
				kc.n++
				kc.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	return kc
}

// waitAll waits until every ack is in the topic and returns the ids
// still missing.
func (kc *kafkaConsumer) waitAll(acks []ack, within time.Duration) []string {
	deadline := time.Now().Add(within)
	for {
		var missing []string
		kc.mu.Lock()
		for _, a := range acks {
			if len(kc.byID[a.id]) == 0 {
				missing = append(missing, a.id)
			}
		}
		kc.mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (kc *kafkaConsumer) records(id string) []kafkaRecord {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	return kc.byID[id]
}

// kafkaNoBrokerPorts returns three loopback ports nothing listens on.
func kafkaNoBrokerPorts(t *testing.T) ([]int, []string) {
	t.Helper()
	var ports []int
	var addrs []string
	for range 3 {
		a := freeAddr(t)
		_, p, _ := net.SplitHostPort(a)
		var port int
		fmt.Sscan(p, &port)
		ports, addrs = append(ports, port), append(addrs, a)
	}
	return ports, addrs
}

// Hooks land in the topic with their exact bodies, the tenant as the key;
// a broker that refuses produces (TOPIC_AUTHORIZATION_FAILED, as an ACL
// mistake would) makes the hooks retry, and they are delivered once it
// stops; a hook the topic refuses for its size is a dead letter after one
// attempt.
func TestKafkaNodeDeliversRetriesAndDeadLetters(t *testing.T) {
	c := kafkaCluster(t)
	addrs := c.ListenAddrs()
	hooks, small := kafkaConsume(t, addrs, "hooks"), kafkaConsume(t, addrs, "small")
	n := newDispatchConfigNode(t, "kafka-node", fmt.Sprintf(kafkaSourcesYAML, kafkaBrokersYAML(addrs), kafkaSinkKeys))
	p := n.serve(t)
	ac := newAdminClient(t, n.admin)

	acks := sendHooks(t, n.listen, 300, 8, func(i int) string { return fmt.Sprintf("t%d", i%3) })
	if missing := hooks.waitAll(acks, 15*time.Second); len(missing) > 0 {
		t.Fatalf("%d of %d hooks not in topic hooks after 15s, first %s\n%s", len(missing), len(acks), missing[0], tail(p.stderr.String(), 2000))
	}
	for _, a := range acks {
		r := hooks.records(a.id)[0]
		if !bytes.Equal(r.value, a.body) || string(r.key) != a.tenant || r.headers["ankusa-tenant"] != a.tenant || r.headers["ankusa-source"] != "open" {
			t.Fatalf("hook %s: value %q key %q headers %v; sent body %q tenant %s", a.id, r.value, r.key, r.headers, a.body, a.tenant)
		}
	}

	// The broker refuses every produce for a while.
	var refusing atomic.Bool
	var refused atomic.Int64
	refusing.Store(true)
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		req := kr.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused.Add(1)
		return resp, nil, true
	})
	during := sendHooks(t, n.listen, 30, 4, func(i int) string { return fmt.Sprintf("t%d", i%3) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		as := attemptsOf(t, ac, during[0].tenant, during[0].id)
		if len(as) >= 2 {
			for _, a := range as {
				if a.Sink != "kq" || a.Outcome != "retry" || !strings.Contains(a.Error, "TOPIC_AUTHORIZATION_FAILED") {
					t.Fatalf("attempt while the broker refuses: %+v, want a retry naming TOPIC_AUTHORIZATION_FAILED", a)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hook %s: %d attempts in 10s of refusals: %+v", during[0].id, len(as), as)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(hooks.records(during[0].id)); n != 0 {
		t.Fatalf("a hook is in the topic while the broker refuses every produce")
	}
	refusing.Store(false)
	if missing := hooks.waitAll(during, 15*time.Second); len(missing) > 0 {
		t.Fatalf("%d of %d hooks sent during the refusals not in the topic 15s after they stopped", len(missing), len(during))
	}
	as := attemptsOf(t, ac, during[0].tenant, during[0].id)
	if last := as[len(as)-1]; len(as) < 2 || last.Outcome != "delivered" {
		t.Fatalf("attempt log after the refusals: %+v, want retries then delivered", as)
	}
	// A broker that answers is up: its refusals do not open the breaker.
	if strings.Contains(p.stderr.String(), "circuit opened") {
		t.Fatalf("the breaker opened on refusals the broker answered: %s", breakerSummary(p.stderr.String()))
	}

	// Too large for topic small (4096 bytes): dead at once. A small hook
	// of the same source is delivered.
	// Random hex: zstd cannot shrink it under the limit.
	random := make([]byte, 8<<10)
	_, _ = crand.Read(random)
	big := postOne(t, n.listen, "acme", "small", []byte(hex.EncodeToString(random)))
	ok := postOne(t, n.listen, "acme", "small", []byte(`{"small":true}`))
	if missing := small.waitAll([]ack{ok}, 10*time.Second); len(missing) > 0 {
		t.Fatalf("the small hook %s is not in topic small", ok.id)
	}
	var dead []map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if dead = deadLetters(t, ac, "acme"); len(dead) > 0 {
			break
		}
	}
	if len(dead) != 1 || dead[0]["event_id"] != big.id || dead[0]["sink"] != "kq" || dead[0]["attempts"] != float64(1) ||
		!strings.Contains(fmt.Sprint(dead[0]["last_error"]), "MESSAGE_TOO_LARGE") {
		t.Fatalf("dead letters of acme: %v; want the big hook %s, sink kq, 1 attempt, MESSAGE_TOO_LARGE; its attempts: %+v",
			dead, big.id, attemptsOf(t, ac, "acme", big.id))
	}
	if len(small.records(big.id)) != 0 {
		t.Fatal("the refused hook is in topic small")
	}
	e := small.records(ok.id)[0]
	var env struct {
		ID   string `json:"id"`
		Body string `json:"body"`
	}
	if err := json.Unmarshal(e.value, &env); err != nil || env.ID != ok.id || env.Body != `{"small":true}` {
		t.Fatalf("topic small (format envelope): %s (%v), want the envelope of %s", e.value, err, ok.id)
	}
	p.stop()
	t.Logf("%d hooks delivered with exact bodies; %d produce requests refused, then %d hooks delivered; the 16 KiB hook (random hex) dead: %v",
		len(acks), refused.Load(), len(during), dead[0]["last_error"])
}

// A cluster that is down opens the sink's breaker (the node logs
// "circuit opened" for sink open/kq and counts attempts held back as
// circuit_open); when it comes up, every hook is delivered.
func TestKafkaNodeBreakerOpensWhileDown(t *testing.T) {
	ports, addrs := kafkaNoBrokerPorts(t)
	n := newDispatchConfigNode(t, "kafka-down", fmt.Sprintf(kafkaSourcesYAML, kafkaBrokersYAML(addrs),
		`timeout: 1s, connect_timeout: 200ms, retry_base: 50ms, retry_max: 300ms, max_attempts: 1000`))
	p := n.serve(t)
	ac := newAdminClient(t, n.admin)
	acks := sendHooks(t, n.listen, 40, 4, func(i int) string { return fmt.Sprintf("t%d", i%2) })

	const held = `ankusa_dispatch_attempts_total{sink="open/kq",outcome="circuit_open"} `
	var heldBack string
	for deadline := time.Now().Add(15 * time.Second); heldBack == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for line := range strings.Lines(string(ac.get("/metrics", "").body)) {
			if strings.HasPrefix(line, held) && strings.TrimSpace(line) != held+"0" {
				heldBack = strings.TrimSpace(line)
			}
		}
	}
	if heldBack == "" || !strings.Contains(p.stderr.String(), "circuit opened") {
		t.Fatalf("the breaker did not open in 15s with the cluster down (metric %q); %s; first hook's log: %+v",
			heldBack, breakerSummary(p.stderr.String()), attemptsOf(t, ac, acks[0].tenant, acks[0].id))
	}
	first := attemptsOf(t, ac, acks[0].tenant, acks[0].id)
	for _, at := range first {
		if at.Outcome != "retry" || at.Sink != "kq" || !strings.Contains(at.Error, "no acknowledgement") {
			t.Fatalf("attempt while the cluster is down: %+v, want a retry without acknowledgement", at)
		}
	}

	c := kafkaCluster(t, ports...)
	hooks := kafkaConsume(t, c.ListenAddrs(), "hooks")
	up := time.Now()
	if missing := hooks.waitAll(acks, 30*time.Second); len(missing) > 0 {
		t.Fatalf("%d of %d hooks not in the topic 30s after the cluster came up\n%s", len(missing), len(acks), breakerSummary(p.stderr.String()))
	}
	p.stop()
	t.Logf("while down: %s, the first hook's attempts %d, e.g. %q; all %d delivered %v after the cluster came up; %s",
		heldBack, len(first), first[0].Error, len(acks), time.Since(up).Round(time.Millisecond), breakerSummary(p.stderr.String()))
}

// A source stored through the admin API keeps its kafka sink's derived id
// when another key changes: the hooks' attempt logs name one sink before
// and after the edit.
func TestKafkaNodeSinkIDStableAcrossEdits(t *testing.T) {
	c := kafkaCluster(t)
	addrs := c.ListenAddrs()
	hooks := kafkaConsume(t, addrs, "hooks")
	n := newAPINode(t, "persistent", "", "")
	p := n.serve(t)
	ac := newAdminClient(t, n.admin)
	brokers, _ := json.Marshal(addrs)
	spec := func(timeout string) string {
		return fmt.Sprintf(`{"name":"kq-src","verify":{"type":"none"},"sinks":[{"type":"kafka","brokers":%s,"topic":"hooks","timeout":%q}]}`, brokers, timeout)
	}
	wantStatus(t, "POST kq-src", n.do("POST", sourcesOf("acme"), opsToken, spec("2s")), http.StatusCreated)
	sinkID := func(what string) string {
		a := n.do("GET", sourceAt("acme", "kq-src"), opsToken, "")
		wantStatus(t, what, a, http.StatusOK)
		var v struct {
			Sinks []struct {
				ID      string `json:"id"`
				Timeout string `json:"timeout"`
			} `json:"sinks"`
		}
		decode(t, what, a, &v)
		if len(v.Sinks) != 1 || v.Sinks[0].ID == "" {
			t.Fatalf("%s: sinks %+v in %s", what, v.Sinks, a.body)
		}
		return v.Sinks[0].ID + " timeout " + v.Sinks[0].Timeout
	}
	before := sinkID("GET after POST")
	h1 := ack{id: hookID(t, "hook before the edit", n.hook("acme", "kq-src", `{"n":1}`)), tenant: "acme"}
	wantStatus(t, "PUT kq-src with another timeout", n.do("PUT", sourceAt("acme", "kq-src"), opsToken, spec("3s")), http.StatusOK)
	after := sinkID("GET after PUT")
	h2 := ack{id: hookID(t, "hook after the edit", n.hook("acme", "kq-src", `{"n":2}`)), tenant: "acme"}
	id := strings.Fields(before)[0]
	if !strings.HasPrefix(id, "kafka-") || strings.Fields(after)[0] != id || before == after {
		t.Fatalf("sink before the edit %q, after %q: want the same derived kafka-... id and the new timeout", before, after)
	}
	if missing := hooks.waitAll([]ack{h1, h2}, 10*time.Second); len(missing) > 0 {
		t.Fatalf("hooks %v not in the topic", missing)
	}
	for _, h := range []ack{h1, h2} {
		var as []attemptJSON
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if as = attemptsOf(t, ac, "acme", h.id); len(as) > 0 && as[len(as)-1].Outcome == "delivered" {
				break
			}
		}
		if len(as) == 0 || as[len(as)-1].Sink != id || as[len(as)-1].Outcome != "delivered" {
			t.Fatalf("hook %s: attempts %+v, want delivered by sink %s", h.id, as, id)
		}
	}
	p.stop()
	t.Logf("sink %s before and after the edit (%s -> %s)", id, before, after)
}

// check-config refuses what the kafka sink would refuse at boot, naming
// the key: a tls.ca_file that cannot be read, a topic Kafka cannot hold,
// a key of another sink type.
func TestKafkaCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		keys string
		want []string
	}{
		{`topic: hooks, tls: {ca_file: /nonexistent/ca.pem}`, []string{"sources.open.sinks[0]", "tls.ca_file", "/nonexistent/ca.pem"}},
		{`topic: "hooks/acme"`, []string{"sources.open.sinks[0]", "topic", "hooks/acme"}},
		{`topic: hooks, exchange: x`, []string{"sources.open.sinks[0]", "exchange"}},
		{`topic: hooks, sasl: {mechanism: gssapi, username: u, password: "env:KAFKA_TEST_UNSET_PASSWORD"}`, []string{"sasl.mechanism"}},
	} {
		n := newTestNode(t)
		yaml := fmt.Sprintf(dispatchNodeYAML, "kafka-check", n.dataDir, n.listen, n.admin, sha256Hex(opsToken)) +
			fmt.Sprintf("      - {id: kq, type: kafka, brokers: [\"127.0.0.1:9092\"], %s}\n", tc.keys)
		if err := os.WriteFile(n.config, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runBin(t, n.dir, "check-config", "-config", n.config)
		if code == 0 {
			t.Errorf("check-config accepted a kafka sink with %s", tc.keys)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("check-config with %s: %q lacks %q", tc.keys, stderr, w)
			}
		}
	}
}
