package main

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// demo runs the whole flow for one tenant and prints each step: mint a
// URL, post a signed hook (201), post it unsigned (401), read the hook
// back (the tenant's, verified), revoke the URL, post again (404). Any
// other answer stops it with an error.
func (c *cmd) demo(ctx context.Context, a []string) error {
	tenant := a[0]
	s, err := NewSigner(c.secret)
	if err != nil {
		return usagef("$MINTEDURLS_SECRET: %v", err)
	}
	step := func(format string, args ...any) { fmt.Fprintf(c.out, format+"\n", args...) }

	r, err := c.client.Mint(ctx, tenant, c.source)
	if err != nil {
		return err
	}
	url := c.hooks + r.URLPath
	step("1. minted route %s for %s: %s", r.ID, tenant, url)

	body := fmt.Appendf(nil, `{"type":"demo.ping","tenant":%q,"at":%q}`, tenant, time.Now().UTC().Format(time.RFC3339))
	d, err := c.postWant(ctx, url, s, body, http.StatusCreated)
	if err != nil {
		return err
	}
	step("2. posted a signed hook: %d %s", d.Status, d.EventID)

	u, err := c.postWant(ctx, url, nil, body, http.StatusUnauthorized)
	if err != nil {
		return err
	}
	step("3. the same hook unsigned: %d %s", u.Status, u.Body)

	h, err := c.client.Hook(ctx, tenant, d.EventID)
	if err != nil {
		return err
	}
	if h.TenantID != tenant || h.Body != string(body) || !h.Verification.Verified {
		return fmt.Errorf("hook %s reads back as tenant %q, verified %t, body %q; want %q, true, %q", d.EventID, h.TenantID, h.Verification.Verified, h.Body, tenant, body)
	}
	step("4. read it back: tenant %s, source %s, verified by %s, body %s", h.TenantID, h.SourceID, h.Verification.Verifier, h.Body)

	if err := c.client.Revoke(ctx, tenant, r.ID); err != nil {
		return err
	}
	step("5. revoked route %s", r.ID)

	g, err := c.postWant(ctx, url, s, body, http.StatusNotFound)
	if err != nil {
		return err
	}
	step("6. posted to the revoked URL: %d %s", g.Status, g.Body)
	return nil
}

// postWant posts body to url and requires the answer want.
func (c *cmd) postWant(ctx context.Context, url string, s *Signer, body []byte, want int) (*Delivery, error) {
	d, err := Post(ctx, c.hc, url, s, body)
	if err != nil {
		return nil, err
	}
	if d.Status != want {
		return nil, fmt.Errorf("POST %s: %d %s, want %d", url, d.Status, d.Body, want)
	}
	return d, nil
}
