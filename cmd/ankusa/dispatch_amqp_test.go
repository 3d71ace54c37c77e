package main

// A node whose sources deliver to RabbitMQ (DESIGN.md §2.7): the broker
// closes the sink's connection in the middle of a stream of hooks, and
// every acknowledged hook still ends up in the queue, with an attempt log
// that never calls an unconfirmed publish delivered.
//
// The tests need a real RabbitMQ and rabbitmqctl to close a connection
// from the server side (internal/rabbittest). Each test declares its own
// exchanges and queues and deletes them at the end.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
)

// published is one message the node published, as consumed.
type published struct {
	msgID      string // message-id property
	eventID    string // x-ankusa-event-id header
	attempt    int64  // x-ankusa-attempt header
	routingKey string
	exchange   string
	body       []byte
	delivery   amqp.Delivery
}

// consumer takes every message of a queue as it arrives.
type consumer struct {
	t    *testing.T
	q    string
	mu   sync.Mutex
	msgs []published
	byID map[string][]int // event id -> indexes into msgs
	last time.Time        // when the last message arrived
}

// consume starts consuming q (auto-ack, exclusive) until the test ends.
func consume(t *testing.T, b *rabbittest.Broker, q string) *consumer {
	t.Helper()
	deliveries, stop := b.Consume(q, 1000, true)
	c := &consumer{t: t, q: q, byID: map[string][]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			p := published{msgID: d.MessageId, routingKey: d.RoutingKey, exchange: d.Exchange, body: d.Body, delivery: d}
			p.eventID, _ = d.Headers["x-ankusa-event-id"].(string)
			p.attempt, _ = d.Headers["x-ankusa-attempt"].(int64)
			c.mu.Lock()
			c.byID[p.msgID] = append(c.byID[p.msgID], len(c.msgs))
			c.msgs = append(c.msgs, p)
			c.last = time.Now()
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return c
}

func (c *consumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

// missing returns the ids not consumed yet.
func (c *consumer) missing(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m []string
	for _, id := range ids {
		if len(c.byID[id]) == 0 {
			m = append(m, id)
		}
	}
	return m
}

// waitAll waits until every id was consumed, then until no message has
// arrived for quiet (late duplicates), and returns what is still missing.
func (c *consumer) waitAll(ids []string, within, quiet time.Duration) []string {
	deadline := time.Now().Add(within)
	for len(c.missing(ids)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		c.mu.Lock()
		idle := time.Since(c.last)
		c.mu.Unlock()
		if idle >= quiet {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c.missing(ids)
}

// snapshot returns the messages consumed so far and the index by id.
func (c *consumer) snapshot() ([]published, map[string][]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := make(map[string][]int, len(c.byID))
	for k, v := range c.byID {
		by[k] = slices.Clone(v)
	}
	return slices.Clone(c.msgs), by
}

// checkMessage checks what every message of a hook carries: the id in the
// message-id, the header and the envelope (format envelope), whose seq is
// the id's, and the tenant, source and body the hook was sent with.
func checkMessage(p published, a ack) error {
	if p.eventID != p.msgID {
		return fmt.Errorf("message-id %q but x-ankusa-event-id %q", p.msgID, p.eventID)
	}
	if p.attempt < 1 {
		return fmt.Errorf("%s: x-ankusa-attempt %d", p.msgID, p.attempt)
	}
	var e envelope.Envelope
	if err := e.UnmarshalJSON(p.body); err != nil {
		return fmt.Errorf("%s: the body is not the envelope's JSON form: %v", p.msgID, err)
	}
	id, err := envelope.ParseID([]byte(p.msgID))
	if err != nil {
		return fmt.Errorf("message-id %q is not an event id", p.msgID)
	}
	if e.ID != id || e.Seq != id.Seq() || e.TenantID != a.tenant || e.SourceID != a.source || !bytes.Equal(e.Body, a.body) {
		return fmt.Errorf("%s: the envelope says id %v seq %d tenant %q source %q body %d bytes; sent tenant %q source %q body %d bytes",
			p.msgID, e.ID, e.Seq, e.TenantID, e.SourceID, len(e.Body), a.tenant, a.source, len(a.body))
	}
	return nil
}

// amqpSourcesYAML: after dispatchNodeYAML, the sources of the senders'
// targets (hooks_test.go), open and acme-billing, each with one RabbitMQ
// sink (%[1]s: its keys).
const amqpSourcesYAML = `      - {id: mq, type: rabbitmq, %[1]s}
  acme-billing:
    tenant_id: acme
    verify: {type: none}
    sinks:
      - {id: mq, type: rabbitmq, %[1]s}
`

// timedAttempt is an attempt log entry with its latency.
type timedAttempt struct {
	attemptJSON
	LatencyMs float64 `json:"latency_ms"`
}

// end is when the attempt finished.
func (a timedAttempt) end() time.Time {
	return a.At.Add(time.Duration(a.LatencyMs * float64(time.Millisecond)))
}

// tryAttempts reads a hook's attempt log; other goroutines than the
// test's may call it.
func tryAttempts(c *adminClient, tenant, id string) ([]timedAttempt, error) {
	ans, err := c.tryGet(hookPath(tenant, id)+"/attempts", opsToken)
	if err != nil {
		return nil, err
	}
	if ans.status != 200 {
		return nil, fmt.Errorf("GET %s/attempts: %d %s", hookPath(tenant, id), ans.status, ans.body)
	}
	var v struct {
		Attempts []timedAttempt `json:"attempts"`
	}
	if err := json.Unmarshal(ans.body, &v); err != nil {
		return nil, fmt.Errorf("GET %s/attempts: %v in %s", hookPath(tenant, id), err, ans.body)
	}
	return v.Attempts, nil
}

// attemptLogs polls every ack's attempt log, from workers goroutines,
// until its last entry is final (delivered or dead) or the deadline.
func attemptLogs(t *testing.T, c *adminClient, acks []ack, within time.Duration) map[string][]timedAttempt {
	t.Helper()
	deadline := time.Now().Add(within)
	logs := make(map[string][]timedAttempt, len(acks))
	var mu sync.Mutex
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(acks) || firstErr.Load() != nil {
					return
				}
				a := acks[i]
				for {
					as, err := tryAttempts(c, a.tenant, a.id)
					if err != nil {
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					if n := len(as); (n > 0 && (as[n-1].Outcome == "delivered" || as[n-1].Outcome == "dead")) || time.Now().After(deadline) {
						mu.Lock()
						logs[a.id] = as
						mu.Unlock()
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		t.Fatal(*err)
	}
	return logs
}

// Acceptance 5: the broker closes the RabbitMQ sink's connection while 8
// senders post hooks. Every acknowledged hook ends up in the queue,
// publishing resumes on a new connection, and the attempt logs agree with
// the queue: an attempt logged delivered has its message there (the
// x-ankusa-attempt header names the attempt), failures happen only around
// the close and are followed by a delivered attempt, nothing is dead.
func TestDispatchAMQPConnectionClosed(t *testing.T) {
	b := rabbittest.New(t)
	x := b.Exchange("topic")
	q := b.Queue(nil, x, "ankusa.#")
	cons := consume(t, b, q)

	node := fmt.Sprintf("amqp-close-%08x", rand.Uint32())
	sink := fmt.Sprintf(`url: %q, exchange: %q, routing_key: "ankusa.{tenant_id}.{source_id}", retry_base: 50ms, retry_max: 500ms, connect_timeout: 2s, timeout: 5s`, rabbittest.URL(), x)
	n := newDispatchConfigNode(t, node, fmt.Sprintf(amqpSourcesYAML, sink))
	p := n.serve(t)
	c := newAdminClient(t, n.admin)

	loadStart := time.Now()
	l := startLoad(t, n.listen, 8, 2<<10)
	stopped := false
	defer func() {
		if !stopped {
			l.stop()
		}
	}()
	for wait := time.Now(); cons.count() < 500; time.Sleep(10 * time.Millisecond) {
		if time.Since(wait) > 10*time.Second {
			t.Fatalf("only %d messages in the queue after 10s of load:\n%s", cons.count(), tail(p.stderr.String(), 3000))
		}
	}
	cn := "ankusa/" + node + "/open/mq"
	conn := rabbittest.FindConn(t, cn)
	before := conn.Name
	closeStart := time.Now()
	conn.Close(t, "ankusa test: closed mid-stream")
	closeEnd := time.Now()
	time.Sleep(2 * time.Second)
	acks := l.stop()
	stopped = true
	if t.Failed() {
		t.FailNow()
	}

	ids := make([]string, len(acks))
	byID := make(map[string]ack, len(acks))
	for i, a := range acks {
		ids[i] = a.id
		byID[a.id] = a
	}
	drainStart := time.Now()
	if missing := cons.waitAll(ids, 20*time.Second, 500*time.Millisecond); len(missing) > 0 {
		a := byID[missing[0]]
		as, err := tryAttempts(c, a.tenant, a.id)
		t.Fatalf("%d of %d acknowledged hooks are not in the queue after 20s; first %s (tenant %s, source %s), attempts %+v %v\n"+
			"the missing hooks by their attempt logs: %s\n%s\nthe node's warnings and errors:\n%s",
			len(missing), len(acks), a.id, a.tenant, a.source, as, err, classifyMissing(c, missing, byID), breakerSummary(p.stderr.String()), logSummary(p.stderr.String()))
	}
	drained := time.Since(drainStart)
	after := rabbittest.FindConn(t, cn).Name
	if after == before {
		t.Fatalf("the sink is still on connection %q after the broker closed it", before)
	}

	msgs, inQueue := cons.snapshot()
	dups, afterClose := 0, 0
	for _, m := range msgs {
		a, ok := byID[m.msgID]
		if !ok {
			t.Fatalf("message %q (attempt %d) is not a hook the node acknowledged", m.msgID, m.attempt)
		}
		if err := checkMessage(m, a); err != nil {
			t.Fatal(err)
		}
		if want := "ankusa." + a.tenant + "." + a.source; m.routingKey != want || m.exchange != x {
			t.Fatalf("%s: published to %q with routing key %q, want %q with %q", m.msgID, m.exchange, m.routingKey, x, want)
		}
	}
	for id, idx := range inQueue {
		dups += len(idx) - 1
		if e, _ := envelope.ParseID([]byte(id)); e.Millis() > uint64(closeEnd.UnixMilli()) {
			afterClose++
		}
	}
	if afterClose == 0 {
		t.Fatalf("publishing did not resume: no hook received after the close (%s) is in the queue", closeEnd.Format(time.RFC3339Nano))
	}

	// The attempt logs.
	logStart := time.Now()
	logs := attemptLogs(t, c, acks, 15*time.Second)
	logTime := time.Since(logStart)
	failedHooks, failedAttempts := 0, 0
	var firstFail, lastFail time.Time
	var sample string
	for _, a := range acks {
		as := logs[a.id]
		if len(as) == 0 {
			t.Fatalf("hook %s: empty attempt log, but it is in the queue", a.id)
		}
		for i, at := range as {
			last := i == len(as)-1
			switch {
			case at.Sink != "mq" || at.N != i+1:
				t.Fatalf("hook %s: attempt log %+v: entry %d is sink %q attempt %d, want sink mq attempt %d", a.id, as, i, at.Sink, at.N, i+1)
			case last && at.Outcome != "delivered":
				t.Fatalf("hook %s: attempt log %+v ends %q, want delivered (it is in the queue)", a.id, as, at.Outcome)
			case !last && at.Outcome != "retry":
				t.Fatalf("hook %s: attempt log %+v: attempt %d is %q before the last, want retry", a.id, as, at.N, at.Outcome)
			}
			if at.Outcome != "retry" {
				continue
			}
			failedAttempts++
			end := at.end()
			if a.source != "open" || end.Before(closeStart.Add(-50*time.Millisecond)) || end.After(closeEnd.Add(15*time.Second)) {
				t.Fatalf("hook %s (source %s): attempt %d failed at %s (%s), not around the close of the open source's connection (%s to %s)",
					a.id, a.source, at.N, end.Format(time.RFC3339Nano), at.Error, closeStart.Format(time.RFC3339Nano), closeEnd.Format(time.RFC3339Nano))
			}
			if end.Before(firstFail) || firstFail.IsZero() {
				firstFail = end
			}
			if end.After(lastFail) {
				lastFail = end
			}
			if sample == "" {
				sample = at.Error
			}
		}
		// Nothing unconfirmed is marked delivered: the attempt the log
		// calls delivered has its own message in the queue, and no message
		// comes from a later attempt.
		delivered := as[len(as)-1].N
		found := false
		for _, i := range inQueue[a.id] {
			switch m := msgs[i]; {
			case m.attempt == int64(delivered):
				found = true
			case m.attempt > int64(delivered):
				t.Fatalf("hook %s: message of attempt %d in the queue, but the log says attempt %d delivered it: %+v", a.id, m.attempt, delivered, as)
			}
		}
		if !found {
			t.Fatalf("hook %s: the attempt log says attempt %d delivered it, but no message of that attempt is in the queue (messages of attempts %v): %+v",
				a.id, delivered, attemptsIn(msgs, inQueue[a.id]), as)
		}
		if len(as) > 1 {
			failedHooks++
		}
	}
	for _, tn := range []string{"t0", "t1", "t2", "t3", "t4.eu", "t5_x", "acme"} {
		if dead := deadLetters(t, c, tn); len(dead) > 0 {
			t.Fatalf("tenant %s has %d dead letters, first %+v", tn, len(dead), dead[0])
		}
	}
	stopStart := time.Now()
	p.stop()

	t.Logf("phases: every ack in the queue %v after the load stopped; SIGTERM drain %v; %s", drained.Round(time.Millisecond), time.Since(stopStart).Round(time.Millisecond), breakerSummary(p.stderr.String()))
	t.Logf("close_connection %s (%q), %v after the load started, took %v; the sink then published on %q",
		conn.PID, before, closeStart.Sub(loadStart).Round(time.Millisecond), closeEnd.Sub(closeStart).Round(time.Millisecond), after)
	t.Logf("%d requests, %d acknowledged (201); queue: %d messages, %d distinct ids, %d duplicates; %d hooks received after the close are in it",
		l.sent.Load(), len(acks), len(msgs), len(inQueue), dups, afterClose)
	t.Logf("attempt logs (read in %v): %d hooks with %d failed attempts, ending %s to %s (close at %s to %s), each hook then delivered; e.g. %q",
		logTime.Round(time.Millisecond), failedHooks, failedAttempts, fmtTime(firstFail), fmtTime(lastFail), fmtTime(closeStart), fmtTime(closeEnd), sample)
}

// classifyMissing counts hooks by what their attempt logs end with (at
// most 1000 of them), for a failure message.
func classifyMissing(c *adminClient, missing []string, byID map[string]ack) string {
	missing = missing[:min(len(missing), 1000)]
	var mu sync.Mutex
	kinds := map[string]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(missing) {
					return
				}
				a := byID[missing[i]]
				as, err := tryAttempts(c, a.tenant, a.id)
				k := "no attempt"
				switch {
				case err != nil:
					k = "error: " + err.Error()
				case len(as) > 0:
					k = fmt.Sprintf("last attempt %d %s", as[len(as)-1].N, as[len(as)-1].Outcome)
				}
				mu.Lock()
				kinds[a.source+": "+k]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return fmt.Sprintf("%v (of the first %d)", kinds, len(missing))
}

// logSummary counts the warnings and errors of a node's JSON log by
// message, with the first of each.
func logSummary(log string) string {
	type entry struct {
		Level string `json:"level"`
		Msg   string `json:"msg"`
	}
	counts := map[string]int{}
	var order []string
	first := map[string]string{}
	for line := range strings.Lines(log) {
		var e entry
		if json.Unmarshal([]byte(line), &e) != nil || (e.Level != "warn" && e.Level != "error") {
			continue
		}
		k := e.Level + ": " + e.Msg
		if counts[k] == 0 {
			order = append(order, k)
			first[k] = strings.TrimSpace(line)
		}
		counts[k]++
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "%6d x %s\n       first: %.600s\n", counts[k], k, first[k])
	}
	return b.String()
}

// breakerSummary describes the dispatcher's "circuit opened" log entries:
// how often each target's breaker opened, over what time, and the longest
// pause it set.
func breakerSummary(log string) string {
	type opened struct {
		Msg    string  `json:"msg"`
		TS     float64 `json:"ts"`
		Target string  `json:"target"`
		Until  float64 `json:"until"`
	}
	type agg struct {
		n           int
		first, last float64
		longest     float64
	}
	by := map[string]*agg{}
	for line := range strings.Lines(log) {
		var e opened
		if json.Unmarshal([]byte(line), &e) != nil || !strings.HasPrefix(e.Msg, "circuit opened") {
			continue
		}
		a := by[e.Target]
		if a == nil {
			a = &agg{first: e.TS}
			by[e.Target] = a
		}
		a.n++
		a.last, a.longest = e.TS, max(a.longest, e.Until-e.TS)
	}
	if len(by) == 0 {
		return "no circuit breaker opened"
	}
	var parts []string
	for target, a := range by {
		parts = append(parts, fmt.Sprintf("the breaker of target %q opened %d times within %v, pausing deliveries for up to %v",
			target, a.n, time.Duration((a.last-a.first)*float64(time.Second)).Round(time.Millisecond), time.Duration(a.longest*float64(time.Second)).Round(time.Millisecond)))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func attemptsIn(msgs []published, idx []int) []int64 {
	var out []int64
	for _, i := range idx {
		out = append(out, msgs[i].attempt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("15:04:05.000")
}
