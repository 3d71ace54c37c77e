package edge_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/tenant"
)

// queueConfig: tenant routing; every tenant may hold 2 hooks in the
// pipeline, tenant small 1500 bytes; the node 4 requests of about 1 KiB.
const queueConfig = `node: {name: test}
limits: {max_body_bytes: 1000, max_header_bytes: 1KiB, max_pipeline_bytes: 4200, read_timeout: 3s, write_timeout: 3s, idle_timeout: 3s}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 1000000, burst: 1000000, max_queue: 2}
  tenants: {small: {rate: 1000000, burst: 1000000, max_queue_bytes: 1500}, big: {rate: 1000000, burst: 1000000, max_queue: 100}}
sources:
  open: {verify: {type: none}, trust_url_tenant: true}
`

func withQueues(cfgQueues *tenant.Queues) nodeOption {
	return func(o *edge.Options) { o.Queues = cfgQueues }
}

// gatedQueueNode serves queueConfig with queue caps and a commit loop held
// until the gate opens (at the latest when the test ends).
func gatedQueueNode(t *testing.T) (*node, *gatedWAL, *tenant.Queues) {
	t.Helper()
	cfg := loadConfig(t, queueConfig)
	g := newGatedWAL()
	q := tenant.NewQueues(cfg.RateLimits)
	n := startNode(t, cfg, withQueues(q), func(o *edge.Options) { g.next = o.WAL; o.WAL = g })
	t.Cleanup(g.open)
	return n, g, q
}

// TestTenantQueueCaps: with the commit loop held, a tenant past max_queue
// or max_queue_bytes gets 429 tenant_overload while another tenant is
// still admitted; near the node's bound the tenant holding the most is
// refused first, and only past the bound does anyone get 503.
func TestTenantQueueCaps(t *testing.T) {
	n, g, q := gatedQueueNode(t)
	body := strings.Repeat("q", 900)
	var wg sync.WaitGroup
	held := func(tenant string) {
		t.Helper()
		wg.Add(1)
		go func() {
			defer wg.Done()
			wantAnswer(t, "held hook of "+tenant, roundTrip(t, n.addr, exchange{req: post("/webhooks/"+tenant+"/open", body)}), 201, "")
		}()
		select {
		case <-g.entered:
		case <-time.After(3 * time.Second):
			t.Fatalf("a hook of %s was not admitted", tenant)
		}
	}
	refused := func(name, tenant string, status int, code string) {
		t.Helper()
		r := roundTrip(t, n.addr, exchange{req: post("/webhooks/"+tenant+"/open", body)})
		wantAnswer(t, name, r, status, code)
		wantClose(t, name, r)
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", name)
		}
	}
	held("acme")
	held("acme")
	refused("acme's third hook (max_queue 2)", "acme", 429, "tenant_overload")
	held("small")
	refused("small's second hook (max_queue_bytes 1500)", "small", 429, "tenant_overload")
	// The node holds 3 of its 4: big's first passes 7/8 of the bound, but
	// big holds nothing yet, so it is admitted (a share refuses only a
	// tenant already holding some). Now the node is full: big, holding
	// more than its share, is refused first (429); a tenant holding
	// nothing passes its caps and meets the node's own bound: 503.
	held("big")
	refused("big's second hook: past its share of a full node", "big", 429, "tenant_overload")
	refused("a new tenant's hook: the node is full", "fresh", 503, "overloaded")
	if hooks, _ := q.Totals(); hooks != 4 {
		t.Errorf("%d hooks queued, want 4", hooks)
	}
	g.open()
	wg.Wait()
	wantPipelineIdle(t, n)
	if hooks, bytes := q.Totals(); hooks != 0 || bytes != 0 {
		t.Errorf("after the commits the queues hold %d hooks, %d bytes", hooks, bytes)
	}
}

// TestQueueShareNearTheBound: near the node's bound the tenant holding the
// most gets 429 before any tenant meets the 503.
func TestQueueShareNearTheBound(t *testing.T) {
	n, g, _ := gatedQueueNode(t)
	body := strings.Repeat("q", 900)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roundTrip(t, n.addr, exchange{req: post("/webhooks/big/open", body)})
		}()
		<-g.entered
	}
	r := roundTrip(t, n.addr, exchange{req: post("/webhooks/big/open", body)})
	wantAnswer(t, "big's 4th hook near the bound", r, 429, "tenant_overload")
	wg.Add(1)
	go func() {
		defer wg.Done()
		wantAnswer(t, "another tenant near the bound", roundTrip(t, n.addr, exchange{req: post("/webhooks/acme/open", body)}), 201, "")
	}()
	select {
	case <-g.entered:
	case <-time.After(3 * time.Second):
		t.Fatal("another tenant was not admitted while big held the most")
	}
	g.open()
	wg.Wait()
}

// TestCountersReturnToZero: a storm of aborted uploads, oversize bodies,
// bad framing and client disconnects leaves no reservation behind.
func TestCountersReturnToZero(t *testing.T) {
	cfg := loadConfig(t, queueConfig)
	q := tenant.NewQueues(cfg.RateLimits)
	n := startNode(t, cfg, withQueues(q))
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				tenant := fmt.Sprintf("t%d", (w+i)%5)
				path := "/webhooks/" + tenant + "/open"
				switch i % 5 {
				case 0: // declared too large
					roundTrip(t, n.addr, exchange{req: post(path, strings.Repeat("x", 1001))})
				case 1: // chunked past the bound
					roundTrip(t, n.addr, exchange{req: rawReq("POST "+path+" HTTP/1.1", []string{"Host: h", "Transfer-Encoding: chunked"}, chunked([]byte(strings.Repeat("y", 1500)), 100, true))})
				case 2: // body shorter than declared, then the client goes
					c, err := net.Dial("tcp", n.addr)
					if err != nil {
						t.Error(err)
						return
					}
					fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: h\r\nContent-Length: 800\r\n\r\n%s", path, strings.Repeat("z", 300))
					time.Sleep(time.Millisecond)
					c.Close()
				case 3: // chunked, cut off mid-chunk
					c, err := net.Dial("tcp", n.addr)
					if err != nil {
						t.Error(err)
						return
					}
					fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n64\r\nabc", path)
					c.Close()
				default: // a good one
					roundTrip(t, n.addr, exchange{req: post(path, "{}")})
				}
			}
		}(w)
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		hooks, bytes := q.Totals()
		if hooks == 0 && bytes == 0 && n.router.PipelineBytes() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the storm: queues %d hooks %d bytes, pipeline %d bytes; want all 0", hooks, bytes, n.router.PipelineBytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
