package main

// Receivers that go away, answer errors, and come back: what a 201 promises
// holds through all of it.

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// post sends POST path to the admin listener.
func (a *adminClient) post(path, token string) answer {
	a.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+a.addr+path, nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// deadLetters lists every dead letter of tenant through the admin API,
// page by page.
func deadLetters(t *testing.T, c *adminClient, tenant string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		ans := c.get("/v1/tenants/"+tenant+"/deliveries?state=dead&limit=100&cursor="+cursor, opsToken)
		if ans.status != http.StatusOK {
			t.Fatalf("dead letters of %s: %d %s", tenant, ans.status, ans.body)
		}
		var page struct {
			Deliveries []map[string]any `json:"deliveries"`
			Next       string           `json:"next_cursor"`
		}
		if err := json.Unmarshal(ans.body, &page); err != nil {
			t.Fatalf("dead letters: %v in %s", err, ans.body)
		}
		out = append(out, page.Deliveries...)
		if page.Next == "" {
			return out
		}
		cursor = page.Next
	}
}

type attemptJSON struct {
	Sink    string    `json:"sink"`
	N       int       `json:"attempt"`
	At      time.Time `json:"at"`
	Status  int       `json:"status"`
	Outcome string    `json:"outcome"`
	Error   string    `json:"error"`
}

func attemptsOf(t *testing.T, c *adminClient, tenant, id string) []attemptJSON {
	t.Helper()
	ans := c.get("/v1/tenants/"+tenant+"/hooks/"+id+"/attempts", opsToken)
	if ans.status != http.StatusOK {
		t.Fatalf("attempts of %s: %d %s", id, ans.status, ans.body)
	}
	var v struct {
		Attempts []attemptJSON `json:"attempts"`
	}
	if err := json.Unmarshal(ans.body, &v); err != nil {
		t.Fatalf("attempts: %v in %s", err, ans.body)
	}
	return v.Attempts
}

// Acceptance 2: a receiver down for a while gets every hook once it is
// back, retried with backoff, nothing lost; a receiver that always fails
// dead-letters each hook after max_attempts, and retry-all through the
// admin API delivers them once it is fixed.
func TestDispatchOutageRetriesAndDeadLetters(t *testing.T) {
	recvA, recvB := newReceiver(t), newReceiver(t)
	recvB.setStatus(func(string, string) int { return http.StatusInternalServerError })
	n := newDispatchNode2(t, recvA, ", retry_base: 100ms, retry_max: 800ms, max_attempts: 1000",
		recvB, ", retry_base: 50ms, retry_max: 100ms, max_attempts: 3")
	recvA.down()
	p := n.serve(t)
	c := newAdminClient(t, n.admin)
	acks := sendHooks(t, n.listen, 300, 8, func(i int) string { return fmt.Sprintf("t%d", i%3) })
	time.Sleep(3 * time.Second)
	if m := recvA.missing(acks, "a"); m != len(acks) {
		t.Fatalf("%d hooks reached a receiver that is down", len(acks)-m)
	}
	// B answers 500 every time: after max_attempts = 3 each hook is a dead
	// letter, listed per tenant.
	deadline := time.Now().Add(20 * time.Second)
	var dead int
	for {
		dead = 0
		for i := range 3 {
			dead += len(deadLetters(t, c, fmt.Sprintf("t%d", i)))
		}
		if dead == len(acks) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if dead != len(acks) {
		t.Fatalf("%d dead letters of sink b, want %d", dead, len(acks))
	}
	for _, d := range deadLetters(t, c, "t0")[:3] {
		if d["sink"] != "b" || d["attempts"] != float64(3) || d["last_status"] != float64(500) || d["last_error"] == "" {
			t.Fatalf("dead letter %v: want sink b, 3 attempts, status 500 and an error", d)
		}
	}
	att := attemptsOf(t, c, acks[0].tenant, acks[0].id)
	var aTries, bTries []attemptJSON
	for _, a := range att {
		switch a.Sink {
		case "a":
			aTries = append(aTries, a)
		case "b":
			bTries = append(bTries, a)
		}
	}
	// Sink b's log: attempts 1..3, each a 500, retried with backoff (full
	// jitter under min(retry_max 100ms, 50ms*2^(n-1)), plus the
	// scheduler's wake-up), the last one dead.
	if len(bTries) != 3 {
		t.Fatalf("attempt log of sink b: %+v; want max_attempts = 3 entries", bTries)
	}
	for i, a := range bTries {
		want := "retry"
		if i == 2 {
			want = "dead"
		}
		if a.N != i+1 || a.Status != 500 || a.Outcome != want || a.Error == "" {
			t.Fatalf("attempt %d of sink b: %+v; want n %d, status 500, outcome %s, an error", i+1, a, i+1, want)
		}
		if i > 0 {
			if gap := a.At.Sub(bTries[i-1].At); gap < 0 || gap > 100*time.Millisecond+time.Second {
				t.Fatalf("attempts %d and %d of sink b came %v apart; the backoff allows at most 100ms (+ the scheduler's pass)", i, i+1, gap)
			}
		}
	}
	// Sink a's breaker opens after the first failures, and the hooks it
	// holds back meanwhile are rescheduled without an attempt: the first
	// acknowledged hook need not be among those tried. One of the first
	// hooks was.
	for _, ack := range acks[1:min(len(acks), 64)] {
		if len(aTries) > 0 {
			break
		}
		for _, a := range attemptsOf(t, c, ack.tenant, ack.id) {
			if a.Sink == "a" {
				aTries = append(aTries, a)
			}
		}
	}
	if len(aTries) == 0 || aTries[0].Error == "" || aTries[0].Outcome != "retry" {
		t.Fatalf("attempt log of sink a while its receiver is down: %+v", aTries)
	}
	upAt := time.Now()
	recvA.up()
	// The breaker's cooldown doubles while the receiver stays down (1 s,
	// 2 s, ... at most a minute): the first probe after it returns decides.
	recvA.waitDelivered(t, p, acks, 75*time.Second, "a")
	t.Logf("sink a: every hook delivered %v after its receiver came back", time.Since(upAt).Round(time.Millisecond))
	// The backoff: consecutive failed attempts of one hook are spaced by
	// full jitter under min(retry_max, retry_base*2^(n-1)), the breaker's
	// cooldown (1 s, doubling) and the scheduler's pass (at most 1 s).
	for i := 1; i < len(aTries); i++ {
		if gap := aTries[i].At.Sub(aTries[i-1].At); gap > 8*time.Second {
			t.Fatalf("attempts %d and %d of a hook came %v apart: past every backoff bound", i, i+1, gap)
		}
	}
	if m := recvB.missing(acks, "b"); m != len(acks) {
		t.Fatalf("%d hooks reached b while it answered 500", len(acks)-m)
	}
	recvB.setStatus(func(string, string) int { return 0 })
	retried := 0
	for i := range 3 {
		ans := c.post(fmt.Sprintf("/v1/tenants/t%d/deliveries/retry", i), opsToken)
		var v struct {
			Retried int `json:"retried"`
		}
		if ans.status != http.StatusOK || json.Unmarshal(ans.body, &v) != nil {
			t.Fatalf("retry-all: %d %s", ans.status, ans.body)
		}
		retried += v.Retried
	}
	if retried != len(acks) {
		t.Fatalf("retry-all retried %d, want %d", retried, len(acks))
	}
	recvB.waitDelivered(t, p, acks, 30*time.Second, "b")
	if d := deadLetters(t, c, "t1"); len(d) != 0 {
		t.Fatalf("%d dead letters left after retry-all delivered", len(d))
	}
	dupsA := recvA.checkClean(t, acks)
	t.Logf("sink a: %d attempts of the first hook while down; sink b: %d dead letters retried and delivered; %d duplicates", len(aTries), retried, dupsA)
	p.stop()
}

// Acceptance 3: kill -9 the node several times with thousands of pending
// and in-flight deliveries; after the restart every acknowledged hook
// reaches every sink at least once.
func TestDispatchKill9(t *testing.T) {
	recv := newReceiver(t)
	// A slow receiver keeps thousands of deliveries pending and in flight.
	var slow atomic.Bool
	slow.Store(true)
	recv.setStatus(func(string, string) int {
		if slow.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		return 0
	})
	n := newDispatchNode(t, recv, ", concurrency: 16, tenant_concurrency: 8")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	var acks []ack
	for round := range 3 {
		p := n.serve(t)
		l := startTolerantLoad(t, n.listen, 8)
		time.Sleep(time.Duration(800+rng.IntN(1200)) * time.Millisecond)
		p.kill9()
		got := l.stop()
		acks = append(acks, got...)
		recv.mu.Lock()
		done := len(recv.got)
		recv.mu.Unlock()
		t.Logf("round %d: %d hooks acknowledged in all, %d deliveries done before kill -9", round, len(acks), done)
	}
	slow.Store(false)
	p := n.serve(t)
	recv.waitDelivered(t, p, acks, 60*time.Second, "a", "b")
	dups := recv.checkClean(t, acks)
	t.Logf("%d acknowledged hooks over 3 kill -9: every one reached both sinks; %d duplicate deliveries (at least once)", len(acks), dups)
	p.stop()
}

// tolerantLoad sends hooks until stopped; the node may die under it: only
// what was answered 201 counts.
type tolerantLoad struct {
	stopCh chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	acks   []ack
}

func startTolerantLoad(t *testing.T, listen string, senders int) *tolerantLoad {
	l := &tolerantLoad{stopCh: make(chan struct{})}
	for s := range senders {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for i := 0; ; i++ {
				select {
				case <-l.stopCh:
					return
				default:
				}
				tn := fmt.Sprintf("k%d", (s+i)%5)
				body := fmt.Appendf(nil, `{"sender":%d,"n":%d,"at":%d}`, s, i, time.Now().UnixNano())
				a, status, _, err := post(client, "http://"+listen+"/webhooks/"+tn+"/open", body)
				if err != nil || status != http.StatusCreated {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				a.tenant, a.source, a.body = tn, "open", body
				l.mu.Lock()
				l.acks = append(l.acks, a)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *tolerantLoad) stop() []ack {
	close(l.stopCh)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.acks, func(i, j int) bool { return l.acks[i].id < l.acks[j].id })
	return l.acks
}
