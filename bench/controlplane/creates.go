package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// createRun is one creates/s run at one concurrency.
type createRun struct {
	Clients   int              `json:"clients"`
	Created   int              `json:"created"`
	Seconds   float64          `json:"seconds"`
	PerSecond float64          `json:"creates_per_s"`
	Latency   benchkit.Latency `json:"latency"`
	Refused   int              `json:"refused"`  // answers but 201
	Errors    []string         `json:"errors"`   // the first few refusals and failures
	Existing  int              `json:"existing"` // sources stored when the run began
}

// createSource posts a create of the source name of tenant and returns
// the answer's status (0 and an error for a failed request).
func createSource(n *node, tenant, name string) (int, error) {
	req, err := http.NewRequest("POST", "http://"+n.Admin+"/v1/tenants/"+tenant+"/sources", strings.NewReader(createBody(name)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return resp.StatusCode, fmt.Errorf("POST /v1/tenants/%s/sources (%s): %d %s", tenant, name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return resp.StatusCode, nil
}

// creates runs clients workers creating sources for d, each source under
// a random one of tenants tenants.
func creates(ctx context.Context, n *node, clients, tenants int, d time.Duration, existing int) createRun {
	run := createRun{Clients: clients, Existing: existing}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	began := time.Now()
	end := began.Add(d)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				t0 := time.Now()
				_, err := createSource(n, fmt.Sprintf("t%05d", rand.IntN(tenants)), fmt.Sprintf("c%d-%d-%d", clients, w, i))
				took := time.Since(t0)
				if err != nil {
					mu.Lock()
					run.Refused++
					if len(run.Errors) < 5 {
						run.Errors = append(run.Errors, err.Error())
					}
					mu.Unlock()
					continue
				}
				mine = append(mine, took)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	run.Seconds = time.Since(began).Seconds()
	run.Created = len(lat)
	run.PerSecond = float64(run.Created) / run.Seconds
	run.Latency = benchkit.Percentiles(lat)
	return run
}
