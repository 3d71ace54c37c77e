package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// createBody is the admin API's body of a source named name that the
// bench creates: verified by nothing, no sinks, so a hook to it costs B
// its WAL append only.
func createBody(name string) string {
	return fmt.Sprintf(`{"name": %q, "verify": {"type": "none"}}`, name)
}

// createSource posts a create of the source name of tenant to n.
func createSource(n *node, tenant, name string) error {
	status, body, err := benchkit.Call(client, "POST", "http://"+n.Admin+"/v1/tenants/"+tenant+"/sources", []byte(createBody(name)),
		"Authorization", "Bearer "+adminToken, "Content-Type", "application/json")
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("POST /v1/tenants/%s/sources (%s) on node %s: %d %s", tenant, name, n.name, status, bytes.TrimSpace(body))
	}
	return err
}

// postHook posts a small JSON hook to the source name of tenant on n,
// with the headers given as name and value in turn.
func postHook(n *node, tenant, name string, header ...string) (int, []byte, error) {
	return benchkit.Call(client, "POST", "http://"+n.Listen+"/webhooks/"+tenant+"/"+name, []byte(hookBody), append([]string{"Content-Type", "application/json"}, header...)...)
}

// hookBody is the body of every hook the bench posts.
const hookBody = `{"type":"bench.fleet"}`

// checkServes posts a hook to the first seeded source, signed with its
// secret (X-Sig, the hex HMAC-SHA256 of the body): a node that serves
// the store (its secrets opened) answers 201.
func checkServes(n *node) error {
	tenant, name := seedTenant(0, 1), seedName(0)
	mac := hmac.New(sha256.New, []byte(seedSecret(name)))
	mac.Write([]byte(hookBody))
	status, body, err := postHook(n, tenant, name, "X-Sig", hex.EncodeToString(mac.Sum(nil)))
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("node %s answered a signed hook to seeded source %q of tenant %q: %d %s, want 201", n.name, name, tenant, status, bytes.TrimSpace(body))
	}
	return err
}

// propagationRun is the propagation of count creates on A to B with
// Stored sources in the store.
type propagationRun struct {
	Stored    int              `json:"stored"`
	Writes    int              `json:"writes"`
	NotServed int              `json:"not_served"` // a create refused, an answer but 404 or 201, or 404 past propagationLimit: must be 0
	Failures  []string         `json:"failures"`   // the first few
	P50       time.Duration    `json:"p50_ns"`
	P99       time.Duration    `json:"p99_ns"`
	P999      time.Duration    `json:"p999_ns"`
	Max       time.Duration    `json:"max_ns"`
	Create    benchkit.Latency `json:"create"`
	// Hook is B's 201 hook alone (the last request of each loop): the
	// floor the propagation figures include.
	Hook  benchkit.Latency `json:"hook_201"`
	Polls int              `json:"hooks_before_201"` // B's 404s while it had not the source yet
	// FirstTry counts the writes whose first hook to B was answered 201:
	// B had the source before the bench could ask.
	FirstTry int `json:"served_at_first_hook"`
}

// propagationLimit is how long B may take to serve a source A created:
// past it the write counts as not propagated (a tick is 1 s; the
// pub/sub message should make it a millisecond).
const propagationLimit = 10 * time.Second

// propagate makes count sequential creates on a (names prefix-0, ...,
// under a random one of tenants tenants); after each 201 it posts hooks
// to b for the new source in a tight loop until b answers 201, and
// times a's 201 to b's.
func propagate(ctx context.Context, a, b *node, prefix string, count, tenants, stored int) propagationRun {
	run := propagationRun{Stored: stored, Writes: count}
	var lat, create, hook []time.Duration
	fail := func(msg string) {
		run.NotServed++
		if len(run.Failures) < 5 {
			run.Failures = append(run.Failures, msg)
		}
	}
	for i := 0; i < count && ctx.Err() == nil; i++ {
		tenant, name := fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("%s-%d", prefix, i)
		t0 := time.Now()
		if err := createSource(a, tenant, name); err != nil {
			fail("create: " + err.Error())
			continue
		}
		created := time.Now()
		for try := 0; ; try++ {
			sent := time.Now()
			status, body, err := postHook(b, tenant, name)
			if err == nil && status == http.StatusCreated {
				lat, create, hook = append(lat, time.Since(created)), append(create, created.Sub(t0)), append(hook, time.Since(sent))
				if try == 0 {
					run.FirstTry++
				}
				break
			}
			if status != http.StatusNotFound || err != nil {
				fail(fmt.Sprintf("hook to node %s /webhooks/%s/%s: %d %s %v", b.name, tenant, name, status, bytes.TrimSpace(body), err))
				break
			}
			run.Polls++
			if time.Since(created) > propagationLimit {
				fail(fmt.Sprintf("node %s answered 404 to /webhooks/%s/%s %s after node %s's 201", b.name, tenant, name, propagationLimit, a.name))
				break
			}
		}
	}
	run.P50, run.P99, run.P999, run.Max = quantile(lat, 0.50), quantile(lat, 0.99), quantile(lat, 0.999), quantile(lat, 1)
	run.Create, run.Hook = benchkit.Percentiles(create), benchkit.Percentiles(hook)
	return run
}

// quantile is benchkit.Percentiles' quantile q of d (the value at index
// ⌊q·n⌋ of the sorted values; 1: the maximum), 0 for none. Percentiles
// has no p99.9, which the propagation reports.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// creates runs clients workers creating sources on n for d, each source
// under a random one of tenants tenants.
func creates(ctx context.Context, n *node, clients, tenants int, d time.Duration) benchkit.CreateRun {
	return benchkit.Creates(ctx, clients, d, func(w, i int) error {
		return createSource(n, fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("c%d-%d-%d", clients, w, i))
	})
}
