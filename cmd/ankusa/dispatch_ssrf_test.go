package main

// The HTTP sink's SSRF guard (DESIGN.md §2.7): without allow_private a
// sink never connects to a loopback, private, link-local or metadata
// address, and the refusal is a dead letter at once whose error says what
// to change.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ssrfSinksYAML: the five HTTP sinks of source open (dispatchNodeYAML),
// pointing at private targets, none with allow_private. Sink a and loop6
// reach the receiver (%[1]s on 127.0.0.1, and on [::1] at port %[2]s) if
// the guard lets them; localhost reaches it by name.
const ssrfSinksYAML = `      - {id: a, type: http, url: "http://%[1]s/a/{tenant_id}", secret: "` + secretA + `", format: raw}
      - {id: private, type: http, url: "http://10.1.2.3/a/{tenant_id}"}
      - {id: metadata, type: http, url: "http://169.254.169.254/latest/meta-data"}
      - {id: loop6, type: http, url: "http://[::1]:%[2]s/a/{tenant_id}"}
      - {id: localhost, type: http, url: "http://localhost:%[2]s/"}
`

// ssrfRefusals is what each sink's error must name besides the guard and
// allow_private.
var ssrfRefusals = map[string]string{
	"a":         "127.0.0.1 (loopback)",
	"private":   "10.1.2.3 (private)",
	"metadata":  "169.254.169.254 (cloud metadata)",
	"loop6":     "::1 (loopback)",
	"localhost": `host "localhost" is a loopback name`,
}

// checkSSRFDead checks that every sink's row of hook id is a dead letter
// after one attempt whose error names the guard, allow_private and why,
// and that the attempt log says the same; only the sinks in skip are not
// dead.
func checkSSRFDead(t *testing.T, c *adminClient, tenant, id string, dead []map[string]any, skip string) {
	t.Helper()
	rows := map[string]map[string]any{}
	for _, d := range dead {
		if d["event_id"] == id {
			rows[d["sink"].(string)] = d
		}
	}
	errs := map[string]string{}
	for sink, why := range ssrfRefusals {
		d, ok := rows[sink]
		if sink == skip {
			if ok {
				t.Fatalf("hook %s: sink %s is a dead letter with allow_private: true: %v", id, sink, d)
			}
			continue
		}
		if !ok {
			t.Fatalf("hook %s: no dead letter for sink %s (dead letters: %v)", id, sink, rows)
		}
		e, _ := d["last_error"].(string)
		if d["state"] != "dead" || d["attempts"] != 1.0 || d["last_status"] != 0.0 || d["source"] != "open" ||
			!strings.Contains(e, "SSRF guard") || !strings.Contains(e, "allow_private: true") || !strings.Contains(e, why) {
			t.Fatalf("hook %s sink %s: dead letter %v; want state dead after 1 attempt, status 0, and an error naming the SSRF guard, allow_private: true and %q", id, sink, d, why)
		}
		errs[sink] = e
	}
	as := attemptsOf(t, c, tenant, id)
	logged := map[string]bool{}
	for _, a := range as {
		switch {
		case a.Sink == skip:
			if a.Outcome != "delivered" {
				t.Fatalf("hook %s: sink %s with allow_private: true: attempt %+v, want delivered", id, skip, a)
			}
		case a.N != 1 || a.Outcome != "dead" || a.Status != 0 || a.Error != errs[a.Sink] || logged[a.Sink]:
			t.Fatalf("hook %s: attempt %+v; want one attempt per sink, outcome dead, status 0, error %q", id, a, errs[a.Sink])
		}
		logged[a.Sink] = true
	}
	if len(logged) != len(ssrfRefusals) {
		t.Fatalf("hook %s: the attempt log covers sinks %v, want all %d: %+v", id, logged, len(ssrfRefusals), as)
	}
}

// waitDead waits until the tenant has want dead letters.
func waitDead(t *testing.T, c *adminClient, tenant string, want int, within time.Duration) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		dead := deadLetters(t, c, tenant)
		if len(dead) >= want {
			return dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant %s: %d dead letters after %v, want %d: %v", tenant, len(dead), within, want, dead)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.tries {
		n += v
	}
	return n
}

// Acceptance 6: sinks without allow_private pointing at 127.0.0.1, a
// private address, the metadata address, [::1] and localhost dead-letter
// a hook at once with an error naming the guard and allow_private, in the
// dead-letter listing and the attempt log, and the receiver listening on
// those loopback addresses gets nothing. With allow_private: true on the
// 127.0.0.1 sink (config rewritten, node restarted) a new hook is
// delivered there, and so is the first one's dead letter once retried.
func TestDispatchSSRFGuard(t *testing.T) {
	recv := newReceiver(t)
	_, port, _ := net.SplitHostPort(recv.addr)
	if ln6, err := net.Listen("tcp", "[::1]:"+port); err != nil {
		t.Logf("no receiver on [::1]:%s (%v): the loop6 sink is checked by its dead letter only", port, err)
	} else {
		go recv.srv.Serve(ln6)
	}

	n := newDispatchConfigNode(t, "edge-ssrf-test", fmt.Sprintf(ssrfSinksYAML, recv.addr, port))
	p := n.serve(t)
	c := newAdminClient(t, n.admin)

	first := postOne(t, n.listen, "acme", "open", []byte(`{"id":"evt_ssrf_1"}`))
	dead := waitDead(t, c, "acme", len(ssrfRefusals), 3*time.Second)
	deadAfter := time.Since(first.at)
	checkSSRFDead(t, c, "acme", first.id, dead, "")
	time.Sleep(300 * time.Millisecond)
	if got := recv.requests(); got != 0 {
		t.Fatalf("the receiver behind the guard got %d requests: %v", got, recv.tries)
	}
	p.stop()

	// allow_private: true on sink a only.
	n.rewriteConfig(t, `format: raw}`, `format: raw, allow_private: true}`)
	p = n.serve(t)
	second := postOne(t, n.listen, "acme", "open", []byte(`{"id":"evt_ssrf_2"}`))
	recv.waitDelivered(t, p, []ack{second}, 10*time.Second, "a")
	dead = waitDead(t, c, "acme", 2*len(ssrfRefusals)-1, 3*time.Second)
	checkSSRFDead(t, c, "acme", second.id, dead, "a")
	if got := recv.requests(); got != 1 {
		t.Fatalf("the receiver got %d requests, want the second hook's one: %v", got, recv.tries)
	}

	// The first hook's dead letter for sink a, retried, goes through now.
	if ans := c.post("/v1/tenants/acme/deliveries/"+first.id+"/a/retry", opsToken); ans.status != http.StatusOK {
		t.Fatalf("retry of %s/a: %d %s", first.id, ans.status, ans.body)
	}
	recv.waitDelivered(t, p, []ack{first}, 10*time.Second, "a")
	if dups := recv.checkClean(t, []ack{first, second}); dups != 0 || recv.requests() != 2 {
		t.Fatalf("%d duplicate deliveries, %d requests; want 2 requests: %v", dups, recv.requests(), recv.tries)
	}
	p.stop()
	t.Logf("5 sinks refused by the guard, dead letters %v after the 201; with allow_private: true on sink a the second hook and the retried first were delivered, nothing else reached the receiver",
		deadAfter.Round(time.Millisecond))
	for _, d := range dead {
		if d["event_id"] == first.id {
			t.Logf("  %s: %s", d["sink"], d["last_error"])
		}
	}
}
