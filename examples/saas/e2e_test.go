// Package saas is the multi-tenant SaaS on the tenantpath resolver as a
// config: ankusa.yaml and README.md. Its test runs the stock binary on
// that file.
package saas

// TestEndToEnd serves the example's own ankusa.yaml with the stock binary
// (its listen addresses and the backend's address replaced by the test's)
// and drives it as the providers, the SaaS's operators and one customer
// would: the shared sources take signed hooks for any tenant and deliver
// each to its tenant's endpoint (the sink URL's template), a bad signature
// is a 401, acme's token reads acme's hooks and nothing of globex's, a
// source acme creates through the API answers acme's URL only, and a
// tenant past its bucket is a 429 that no other tenant sees; after a
// restart acme's source still answers.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ankusa/ankusa/examples/internal/exampletest"
)

const (
	// The README's demo tokens: the sample holds their SHA-256.
	opsToken  = "saas-ops-demo-token-not-for-production"
	acmeToken = "saas-acme-demo-token-not-for-production"

	stripeSecret   = "whsec_saasPlatformStripeSecretForTests"
	githubSecret   = "saas-github-app-secret-6bc1bee22e409f96"
	deliverySecret = "whsec_c2Fhcy1kZWxpdmVyeS1zaWduaW5nLWtleS0wMDE="
	kek            = "8b1f4c0e7a2d9e3f5c6b7a8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b"
	shopSecret     = "acme-shopify-app-secret-0f1e2d3c"

	// wait bounds one delivery: a first attempt is immediate, so this is
	// slack for two busy cores, not a retry budget.
	wait = 10 * time.Second
)

type saas struct {
	node *exampletest.Node
	hc   *http.Client
	recv *exampletest.Receiver
	seq  int // makes every Stripe event id unique (dedupe is on)
	mu   sync.Mutex
}

func TestEndToEnd(t *testing.T) {
	bin := exampletest.Build(t)
	dir := t.TempDir()
	s := &saas{hc: &http.Client{Timeout: 10 * time.Second}, recv: exampletest.NewReceiver(t)}
	t.Cleanup(s.hc.CloseIdleConnections)
	listen, admin := exampletest.FreeAddr(t), exampletest.FreeAddr(t)
	cfg := exampletest.WriteConfig(t, "ankusa.yaml", dir,
		[2]string{"\nlisten: 127.0.0.1:8080", "\nlisten: " + listen},
		[2]string{"\n  listen: 127.0.0.1:9090", "\n  listen: " + admin},
		[2]string{"http://127.0.0.1:8000/", s.recv.URL + "/"},
		[2]string{"level: info", "level: warn"},
	)
	start := func() {
		s.node = exampletest.Start(t, bin, dir, cfg, listen, admin,
			"SAAS_STRIPE_SECRET="+stripeSecret, "SAAS_GITHUB_SECRET="+githubSecret,
			"SAAS_DELIVERY_SECRET="+deliverySecret, "SAAS_KEK="+kek)
	}
	start()

	// The shared sources, for two tenants: each hook is filed under the
	// URL's tenant and delivered to that tenant's endpoint.
	acmeBody, acmeReq := s.stripe("acme", time.Now(), stripeSecret)
	acmeID := s.created(t, "a signed Stripe event for acme", acmeReq)
	s.delivered(t, "acme's Stripe event", acmeID, "acme", "/tenants/acme/hooks/stripe", acmeBody)
	push := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"globex/site"}}`)
	globexID := s.created(t, "a signed GitHub push for globex", s.github("globex", push, exampletest.GitHub(githubSecret, push)))
	s.delivered(t, "globex's GitHub push", globexID, "globex", "/tenants/globex/hooks/github", push)
	_, stale := s.stripe("globex", time.Now().Add(-10*time.Minute), stripeSecret)
	s.want(t, "a Stripe event signed 10 minutes ago", stale, http.StatusUnauthorized)
	_, forged := s.stripe("globex", time.Now(), "whsec_someone-elses-secret")
	s.want(t, "a Stripe event signed with another secret", forged, http.StatusUnauthorized)
	s.want(t, "a GitHub push signed with another secret", s.github("acme", push, exampletest.GitHub("guess", push)), http.StatusUnauthorized)
	s.want(t, "an unknown source", s.request("acme", "paypal", []byte(`{}`)), http.StatusNotFound)

	// Reading hooks: the ops token sees every tenant; acme's token sees
	// acme's and nothing of globex's, whichever way it asks.
	s.readHook(t, "ops reads acme's hook", opsToken, "acme", acmeID, http.StatusOK)
	s.readHook(t, "ops reads globex's hook", opsToken, "globex", globexID, http.StatusOK)
	h := s.readHook(t, "acme reads its hook", acmeToken, "acme", acmeID, http.StatusOK)
	if h.TenantID != "acme" || h.SourceID != "stripe" || h.Body != string(acmeBody) || !h.Verification.Verified || h.Verification.Verifier != "stripe" {
		t.Fatalf("acme's hook %s reads back as %+v, want tenant acme, source stripe, verified by stripe, the body sent", acmeID, h)
	}
	s.readHook(t, "acme's token on globex's path", acmeToken, "globex", globexID, http.StatusForbidden)
	s.readHook(t, "acme's token, globex's hook id under acme", acmeToken, "acme", globexID, http.StatusNotFound)
	if a := s.admin(t, http.MethodGet, "/v1/tenants", acmeToken, ""); a.Status != http.StatusForbidden {
		t.Fatalf("GET /v1/tenants with acme's token: %s, want 403 (it lacks tenants:read)", a)
	}
	if a := s.admin(t, http.MethodGet, "/v1/tenants", opsToken, ""); a.Status != http.StatusOK || !strings.Contains(string(a.Body), `"globex"`) {
		t.Fatalf("GET /v1/tenants with the ops token: %s, want 200 listing globex", a)
	}

	s.tenantSource(t)
	s.rateLimits(t)

	// acme's source, its secret sealed under the kek, is the store's: a
	// restart opens it and it answers as before.
	s.node.Stop(t)
	start()
	id := s.created(t, "a signed order to acme's source after a restart", s.shopOrder("acme", shopSecret))
	s.recv.Wait(t, "acme's order after a restart", wait, func(r exampletest.Received) bool {
		return r.Header.Get("X-Ankusa-Event-Id") == id && r.Path == "/acme/shop"
	})
	s.want(t, "an order signed with another secret after a restart", s.shopOrder("acme", "guess"), http.StatusUnauthorized)
	s.node.Stop(t)
}

// order is the body of the Shopify orders the tests send.
var order = []byte(`{"id":820982911946154508,"email":"jon@example.com","total_price":"199.00"}`)

// shopOrder is a Shopify order for tenant's acme-shop URL, signed with
// secret.
func (s *saas) shopOrder(tenant, secret string) *http.Request {
	req := s.request(tenant, "acme-shop", order)
	req.Header.Set("X-Shopify-Topic", "orders/create")
	req.Header.Set("X-Shopify-Webhook-Id", fmt.Sprintf("b54557e4-%s-%d", tenant, time.Now().UnixNano()))
	req.Header.Set("X-Shopify-Hmac-Sha256", exampletest.Shopify(secret, order))
	return req
}

// tenantSource: acme creates a source of its own with its own token; it
// answers acme's URL, verified with acme's secret, and is the unknown
// source's 404 under any other tenant. acme's token cannot create one for
// globex.
func (s *saas) tenantSource(t *testing.T) {
	t.Helper()
	// The test's receiver is on loopback, which the SSRF guard refuses
	// unless the sink allows private addresses; a tenant's token cannot
	// allow them, an operator's can (see README.md). A customer's real
	// endpoint is on the internet and needs no such key.
	specOf := func(private bool) string {
		return fmt.Sprintf(`{"name":"acme-shop","verify":{"type":"shopify","secret":%q},
		"sinks":[{"id":"shop","type":"http","url":%q,"allow_private":%t}]}`, shopSecret, s.recv.URL+"/acme/shop", private)
	}
	if a := s.admin(t, http.MethodPost, "/v1/tenants/globex/sources", acmeToken, specOf(false)); a.Status != http.StatusForbidden {
		t.Fatalf("acme's token creates a source for globex: %s, want 403", a)
	}
	if a := s.admin(t, http.MethodPost, "/v1/tenants/acme/sources", acmeToken, specOf(true)); a.Status != http.StatusForbidden ||
		!strings.Contains(string(a.Body), "sinks[0].allow_private") {
		t.Fatalf("acme's token turns the SSRF guard off: %s, want 403 naming sinks[0].allow_private", a)
	}
	if a := s.admin(t, http.MethodPost, "/v1/tenants/acme/sources", acmeToken, specOf(false)); a.Status != http.StatusCreated {
		t.Fatalf("acme's token creates acme-shop: %s, want 201", a)
	}
	if a := s.admin(t, http.MethodPut, "/v1/tenants/acme/sources/acme-shop", opsToken, specOf(true)); a.Status != http.StatusOK {
		t.Fatalf("the operator allows acme-shop's private receiver: %s, want 200", a)
	}
	if a := s.admin(t, http.MethodGet, "/v1/tenants/acme/sources/acme-shop", acmeToken, ""); a.Status != http.StatusOK ||
		strings.Contains(string(a.Body), shopSecret) || !strings.Contains(string(a.Body), `"tenant_id":"acme"`) {
		t.Fatalf("GET acme-shop: %s, want 200, tenant acme, its secret not shown", a)
	}
	id := s.created(t, "a signed order to acme's own source", s.shopOrder("acme", shopSecret))
	r := s.recv.Wait(t, "acme's order", wait, func(r exampletest.Received) bool { return r.Header.Get("X-Ankusa-Event-Id") == id })
	if r.Path != "/acme/shop" || string(r.Body) != string(order) || r.Header.Get("X-Ankusa-Tenant") != "acme" || r.Header.Get("X-Ankusa-Source") != "acme-shop" {
		t.Fatalf("acme's order reached %s as tenant %q source %q with %s; want /acme/shop, acme, acme-shop, the body sent",
			r.Path, r.Header.Get("X-Ankusa-Tenant"), r.Header.Get("X-Ankusa-Source"), r.Body)
	}
	s.want(t, "an order signed with another secret", s.shopOrder("acme", "guess"), http.StatusUnauthorized)
	unknown := s.want(t, "an unknown source under globex", s.request("globex", "no-such-source", order), http.StatusNotFound)
	other := s.want(t, "acme's source under globex's URL", s.shopOrder("globex", shopSecret), http.StatusNotFound)
	if string(other.Body) != string(unknown.Body) {
		t.Fatalf("acme's source under globex: 404 %s, want the unknown source's %s (a prober learns nothing)", other.Body, unknown.Body)
	}
}

// rateLimits: initech (no entry: the default, 20/s, burst 40) is sent
// hooks faster than its rate until one is 429 rate_limited; at that
// moment acme and globex are still 201 (their buckets are their own).
func (s *saas) rateLimits(t *testing.T) {
	t.Helper()
	const workers, most = 16, 600
	var (
		mu      sync.Mutex
		limited *exampletest.Answer
		sent    int
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if limited != nil || sent >= most {
					mu.Unlock()
					return
				}
				sent++
				mu.Unlock()
				_, req := s.stripe("initech", time.Now(), stripeSecret)
				resp, err := s.hc.Do(req)
				if err != nil {
					t.Errorf("POST for initech: %v", err)
					return
				}
				a := &exampletest.Answer{Status: resp.StatusCode, Header: resp.Header}
				var buf [512]byte
				n, _ := resp.Body.Read(buf[:])
				a.Body = buf[:n]
				resp.Body.Close()
				switch a.Status {
				case http.StatusCreated:
				case http.StatusTooManyRequests:
					mu.Lock()
					if limited == nil {
						limited = a
					}
					mu.Unlock()
				default:
					t.Errorf("POST for initech: %s, want 201 or 429", a)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if limited == nil {
		t.Fatalf("%d hooks for initech from %d senders, none 429: its default bucket (rate 20, burst 40) is not enforced", sent, workers)
	}
	if !strings.Contains(string(limited.Body), `"rate_limited"`) || limited.Header.Get("Retry-After") == "" {
		t.Fatalf("initech's 429: %s, Retry-After %q; want rate_limited with Retry-After", limited, limited.Header.Get("Retry-After"))
	}
	for _, tenant := range []string{"acme", "globex"} {
		_, req := s.stripe(tenant, time.Now(), stripeSecret)
		s.created(t, "a hook for "+tenant+" while initech is limited", req)
	}
}

// stripe is a Stripe event for tenant's URL with a new event id, signed
// at time at with secret.
func (s *saas) stripe(tenant string, at time.Time, secret string) ([]byte, *http.Request) {
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	body := []byte(fmt.Sprintf(`{"id":"evt_saas_%d","type":"invoice.paid","data":{"object":{"amount_paid":%d}}}`, n, 100*n))
	req := s.request(tenant, "stripe", body)
	req.Header.Set("Stripe-Signature", exampletest.Stripe(secret, at, body))
	return body, req
}

func (s *saas) github(tenant string, body []byte, sig string) *http.Request {
	req := s.request(tenant, "github", body)
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("gh-%s-%d", tenant, time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", sig)
	return req
}

func (s *saas) request(tenant, source string, body []byte) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://"+s.node.Listen+"/webhooks/"+tenant+"/"+source, strings.NewReader(string(body)))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (s *saas) want(t *testing.T, what string, req *http.Request, status int) *exampletest.Answer {
	t.Helper()
	a := exampletest.Do(t, s.hc, req)
	if a.Status != status {
		t.Fatalf("%s: %s, want %d", what, a, status)
	}
	return a
}

// created posts req, requires 201 and returns the hook's id.
func (s *saas) created(t *testing.T, what string, req *http.Request) string {
	t.Helper()
	a := s.want(t, what, req, http.StatusCreated)
	var v struct{ ID string }
	if err := json.Unmarshal(a.Body, &v); err != nil || !strings.HasPrefix(v.ID, "evt_") {
		t.Fatalf("%s: answer %s has no evt_ id (%v)", what, a, err)
	}
	return v.ID
}

// delivered waits for hook id at the backend: at path (the sink URL's
// template expanded for tenant), with the tenant's header, the body as
// sent and the delivery signed with the SaaS's delivery secret.
func (s *saas) delivered(t *testing.T, what, id, tenant, path string, body []byte) {
	t.Helper()
	r := s.recv.Wait(t, what, wait, func(r exampletest.Received) bool { return r.Header.Get("X-Ankusa-Event-Id") == id })
	if r.Path != path || r.Header.Get("X-Saas-Tenant") != tenant || r.Header.Get("X-Ankusa-Tenant") != tenant || string(r.Body) != string(body) {
		t.Fatalf("%s reached %s with x-saas-tenant %q, x-ankusa-tenant %q and %s; want %s, %s, the body sent",
			what, r.Path, r.Header.Get("X-Saas-Tenant"), r.Header.Get("X-Ankusa-Tenant"), r.Body, path, tenant)
	}
	if !exampletest.StandardWebhooks(deliverySecret, r.Header.Get("Webhook-Id"), r.Header.Get("Webhook-Timestamp"), r.Body, r.Header.Get("Webhook-Signature")) {
		t.Fatalf("%s: the delivery's signature %q does not check with the delivery secret", what, r.Header.Get("Webhook-Signature"))
	}
}

func (s *saas) readHook(t *testing.T, what, token, tenant, id string, status int) exampletest.Hook {
	t.Helper()
	a := s.admin(t, http.MethodGet, "/v1/tenants/"+tenant+"/hooks/"+id, token, "")
	var h exampletest.Hook
	if a.Status != status {
		t.Fatalf("%s: GET %s's hook %s: %s, want %d", what, tenant, id, a, status)
	}
	if status == http.StatusOK {
		if err := json.Unmarshal(a.Body, &h); err != nil || h.ID != id || h.TenantID != tenant {
			t.Fatalf("%s: hook %s reads as %s (%v), want its id under %s", what, id, a.Body, err, tenant)
		}
	}
	return h
}

func (s *saas) admin(t *testing.T, method, path, token, body string) *exampletest.Answer {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.node.Admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return exampletest.Do(t, s.hc, req)
}
