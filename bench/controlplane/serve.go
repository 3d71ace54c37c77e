package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// serveRun is the write-to-serve run: creates each followed at once by a
// signed hook to the new source.
type serveRun struct {
	Clients   int              `json:"clients"`
	Creates   int              `json:"creates"`
	NotServed int              `json:"not_201_first_try"` // must be 0
	Failures  []string         `json:"failures"`          // the first few
	Latency   benchkit.Latency `json:"admin_201_to_edge_201"`
	Create    benchkit.Latency `json:"create"`
}

// writeToServe makes count creates over clients workers; after each 201 it
// posts one hook to the source's catch URL (/webhooks/<tenant>/<name>),
// signed as the source's verifier wants, and times the admin 201 to the
// edge's answer.
func writeToServe(ctx context.Context, n *node, count, clients, tenants int) serveRun {
	run := serveRun{Clients: clients}
	var next atomic.Int64
	var mu sync.Mutex
	var lat, create []time.Duration
	fail := func(msg string) {
		mu.Lock()
		run.NotServed++
		if len(run.Failures) < 5 {
			run.Failures = append(run.Failures, msg)
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < count && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				tenant, name := fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("w2s-%d", i)
				t0 := time.Now()
				if _, err := createSource(n, tenant, name); err != nil {
					fail("create: " + err.Error())
					continue
				}
				answered := time.Now()
				status, body, err := postHook(n, tenant, name)
				served := time.Since(answered)
				if err != nil || status != http.StatusCreated {
					fail(fmt.Sprintf("hook to /webhooks/%s/%s right after its 201: %d %s %v", tenant, name, status, body, err))
					continue
				}
				mu.Lock()
				lat, create = append(lat, served), append(create, answered.Sub(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	run.Creates = count
	run.Latency, run.Create = benchkit.Percentiles(lat), benchkit.Percentiles(create)
	return run
}

// postHook posts a small JSON hook to the source name of tenant, signed
// with its secret: X-Sig is the hex HMAC-SHA256 of the body (verify's
// generic hmac, no prefix).
func postHook(n *node, tenant, name string) (int, string, error) {
	body := []byte(fmt.Sprintf(`{"id":"evt_%s","type":"bench.created"}`, name))
	mac := hmac.New(sha256.New, []byte(hookSecret(name)))
	mac.Write(body)
	req, err := http.NewRequest("POST", "http://"+n.Listen+"/webhooks/"+tenant+"/"+name, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Sig", hex.EncodeToString(mac.Sum(nil)))
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b)), nil
}
