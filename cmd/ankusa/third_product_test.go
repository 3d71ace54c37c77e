package main

// Issue 15, acceptance 3: the third product of the seed, "a product
// minting opaque per-integration URLs ... at runtime", on a running node:
// the token resolver, the persistent store, one shared source with a real
// verifier, 1,000 minted URLs for 100 tenants, half revoked, kill -9.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// thirdYAML: opaque catch URLs (the token resolver), API-managed sources
// and routes, the ops token (tenant:*). No source in the config.
const thirdYAML = `node: {name: third-product, data_dir: %s}
listen: %s
admin:
  listen: %s
  tokens:
    - {name: ops, sha256: %s, scopes: ["tenant:*"]}
route_resolver: {type: token, path: /webhooks/catch/:token}
rate_limits:
  default: {rate: 100000, burst: 100000}
source_store: {type: persistent}
log: {level: warn, format: json}
`

const (
	thirdSecret  = "whsec-third-product-8d1e"
	thirdTenants = 100
	thirdURLs    = 1000
)

// minted is one opaque URL: its route, tenant and token.
type minted struct {
	idx                        int
	tenant, route, token, path string
	revoked                    bool
}

// routeAnswer is the part of a route's answer the test reads.
type routeAnswer struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	SourceID string `json:"source_id"`
	Token    string `json:"token"`
	URLPath  string `json:"url_path"`
	Tokens   []struct {
		ID string `json:"id"`
	} `json:"tokens"`
}

func TestThirdProductOpaqueURLs(t *testing.T) {
	n := &apiNode{testNode: newTestNode(t), t: t, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(n.c.CloseIdleConnections)
	writeConfig(t, n.testNode, fmt.Sprintf(thirdYAML, n.dataDir, n.listen, n.admin, sha256Hex(opsToken)))
	p := n.serve(t)
	src := `{"name":"shared-src","verify":{"type":"hmac","header":"X-Signature","algorithm":"sha256","encoding":"hex","secret":"` + thirdSecret + `"}}`
	wantStatus(t, "POST shared-src", n.do("POST", sourcesOf("default"), opsToken, src), http.StatusCreated)

	urls := mintURLs(t, n)
	unknown := n.hookAt("/webhooks/catch/"+strings.Repeat("a", len(urls[0].token)), `{}`)
	wantStatus(t, "an unknown token", unknown, http.StatusNotFound)
	wantStatus(t, "an unsigned hook to a minted URL", n.hookAt(urls[0].path, `{"unsigned":true}`), http.StatusUnauthorized)
	parallel(t, urls, func(u *minted) error { return postAndFetch(n, u, "first") })

	parallel(t, urls, func(u *minted) error {
		// Half of every tenant's URLs: those of its even rounds.
		if u.revoked = (u.idx/thirdTenants)%2 == 0; !u.revoked {
			return nil
		}
		if a, err := n.tryDo("DELETE", "/v1/tenants/"+u.tenant+"/routes/"+u.route, opsToken, ""); err != nil || a.status != http.StatusNoContent {
			return fmt.Errorf("DELETE route %s of %s: %v %d %s, want 204", u.route, u.tenant, err, a.status, a.body)
		}
		return checkRevoked(n, u, unknown, "the very next post after the DELETE")
	})
	revoked := 0
	for _, u := range urls {
		if u.revoked {
			revoked++
		}
	}
	if revoked != thirdURLs/2 {
		t.Fatalf("%d of %d revoked, want half", revoked, thirdURLs)
	}
	rot := rotate(t, n, urls[thirdTenants], unknown)

	p.kill9()
	p = n.serve(t)
	parallel(t, urls, func(u *minted) error {
		if u.revoked {
			return checkRevoked(n, u, unknown, "after kill -9")
		}
		return postAndFetch(n, u, "after kill -9")
	})
	checkRevoked404(t, n, rot.old, unknown)
	if err := postAndFetch(n, &rot.new, "the rotated token after kill -9"); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d URLs for %d tenants; %d revoked, %d still serving after kill -9", thirdURLs, thirdTenants, revoked, thirdURLs-revoked)
	p.stop()
}

// mintURLs mints thirdURLs opaque URLs, thirdURLs/thirdTenants for each
// tenant t<k>, from 16 clients at once; every token is new.
func mintURLs(t *testing.T, n *apiNode) []*minted {
	t.Helper()
	urls := make([]*minted, thirdURLs)
	for i := range urls {
		urls[i] = &minted{idx: i, tenant: fmt.Sprintf("t%d", i%thirdTenants)}
	}
	parallel(t, urls, func(u *minted) error {
		a, err := n.tryDo("POST", "/v1/tenants/"+u.tenant+"/routes", opsToken, `{"source_id":"shared-src","token":"auto"}`)
		var r routeAnswer
		if err == nil {
			err = json.Unmarshal(a.body, &r)
		}
		if err != nil || a.status != http.StatusCreated || r.TenantID != u.tenant || r.SourceID != "shared-src" || r.ID == "" ||
			len(r.Token) < 22 || r.URLPath != "/webhooks/catch/"+r.Token {
			return fmt.Errorf("POST routes of %s: %v %d %s, want 201 with a token of >= 128 bits and its url_path", u.tenant, err, a.status, a.body)
		}
		u.route, u.token, u.path = r.ID, r.Token, r.URLPath
		return nil
	})
	seen := map[string]bool{}
	for _, u := range urls {
		if seen[u.token] || seen[u.route+"@"+u.tenant] {
			t.Fatalf("token %s or route %s minted twice", u.token, u.route)
		}
		seen[u.token], seen[u.route+"@"+u.tenant] = true, true
	}
	return urls
}

// postAndFetch posts a signed hook to u and reads it back: 201, stored
// under the route's tenant and the shared source, verified.
func postAndFetch(n *apiNode, u *minted, phase string) error {
	body := fmt.Sprintf(`{"tenant":%q,"route":%q,"phase":%q}`, u.tenant, u.route, phase)
	a, err := n.tryHookAt(u.path, body, "X-Signature", hmacHex(thirdSecret, body))
	var v struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(a.body, &v)
	}
	if err != nil || a.status != http.StatusCreated || v.ID == "" {
		return fmt.Errorf("%s: POST %s (route %s of %s): %v %d %s, want 201", phase, u.path, u.route, u.tenant, err, a.status, a.body)
	}
	f, err := n.tryDo("GET", hookPath(u.tenant, v.ID), opsToken, "")
	var h hookJSON
	if err == nil {
		err = json.Unmarshal(f.body, &h)
	}
	if err != nil || f.status != http.StatusOK || h.TenantID != u.tenant || h.SourceID != "shared-src" || h.Body != body || !h.Verification.Verified {
		return fmt.Errorf("%s: GET hook %s of %s: %v %d %s, want tenant %s, source shared-src, verified, the body sent", phase, v.ID, u.tenant, err, f.status, f.body, u.tenant)
	}
	if strings.Contains(string(f.body), u.token) {
		return fmt.Errorf("%s: the stored hook %s holds its URL's token: %s", phase, v.ID, f.body)
	}
	return nil
}

// checkRevoked: a signed post to a revoked URL is the unknown token's 404.
func checkRevoked(n *apiNode, u *minted, unknown answer, phase string) error {
	body := `{"revoked":true}`
	a, err := n.tryHookAt(u.path, body, "X-Signature", hmacHex(thirdSecret, body))
	if err != nil || a.status != http.StatusNotFound || string(a.body) != string(unknown.body) {
		return fmt.Errorf("%s: POST %s (revoked route %s of %s): %v %d %s, want the unknown token's 404 %s", phase, u.path, u.route, u.tenant, err, a.status, a.body, unknown.body)
	}
	return nil
}

func checkRevoked404(t *testing.T, n *apiNode, u minted, unknown answer) {
	t.Helper()
	if err := checkRevoked(n, &u, unknown, "a token revoked by rotation"); err != nil {
		t.Fatal(err)
	}
}

// rotation is one route's token before and after a rotation.
type rotation struct{ old, new minted }

// rotate gives u's route (kept, not revoked) a second token: both serve;
// then keeps only the new one: the old one is the 404 at once.
func rotate(t *testing.T, n *apiNode, u *minted, unknown answer) rotation {
	t.Helper()
	if u.revoked {
		t.Fatalf("the rotation needs a kept route; %s was revoked", u.route)
	}
	path := "/v1/tenants/" + u.tenant + "/routes/" + u.route
	a := n.do("PUT", path, opsToken, `{"source_id":"shared-src","token":"auto"}`)
	var r routeAnswer
	wantStatus(t, "PUT a second token", a, http.StatusOK)
	decode(t, "PUT a second token", a, &r)
	if len(r.Tokens) != 2 || r.Token == "" || r.Token == u.token || r.URLPath != "/webhooks/catch/"+r.Token {
		t.Fatalf("PUT a second token: %s, want two tokens and the new one with its url_path", a.body)
	}
	rot := rotation{old: *u, new: minted{tenant: u.tenant, route: u.route, token: r.Token, path: r.URLPath}}
	for _, m := range []*minted{&rot.old, &rot.new} {
		if err := postAndFetch(n, m, "during the rotation"); err != nil {
			t.Fatal(err)
		}
	}
	got := n.do("GET", path, opsToken, "")
	wantStatus(t, "GET the route", got, http.StatusOK)
	if strings.Contains(string(got.body), u.token) || strings.Contains(string(got.body), r.Token) {
		t.Fatalf("GET the route shows a token: %s", got.body)
	}
	newID := r.Tokens[len(r.Tokens)-1].ID
	a = n.do("PUT", path, opsToken, `{"source_id":"shared-src","tokens":["`+newID+`"]}`)
	wantStatus(t, "PUT keeping only the new token", a, http.StatusOK)
	decode(t, "PUT keeping only the new token", a, &r)
	if len(r.Tokens) != 1 || r.Tokens[0].ID != newID {
		t.Fatalf("PUT keeping token %s: %s", newID, a.body)
	}
	checkRevoked404(t, n, rot.old, unknown)
	if err := postAndFetch(n, &rot.new, "after the rotation"); err != nil {
		t.Fatal(err)
	}
	*u = rot.new
	return rot
}

// parallel runs f on every item from 16 goroutines and fails the test
// with the first few errors.
func parallel(t *testing.T, items []*minted, f func(*minted) error) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
		next = make(chan *minted)
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				if err := f(u); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for _, u := range items {
		next <- u
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d failed; the first:\n%s", len(errs), len(items), strings.Join(errs[:min(5, len(errs))], "\n"))
	}
}
