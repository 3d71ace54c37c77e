package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client is a SaaS backend's handle on the appliance's admin API: one
// base URL and one bearer token (scope tenant:*). It is safe for
// concurrent use when HTTP is.
type Client struct {
	// Admin is the admin listener's base URL, e.g. http://127.0.0.1:9090.
	Admin string
	// Token is the bearer token itself; the node's config holds its SHA-256.
	Token string
	// HTTP sends the requests; nil is http.DefaultClient.
	HTTP *http.Client
}

// Route is a minted URL as POST /v1/tenants/{t}/routes answers it. Token
// is in this answer only: the node keeps its SHA-256, so a lost token is
// revoked and minted again, never read back.
type Route struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	SourceID string `json:"source_id"`
	Token    string `json:"token"`
	URLPath  string `json:"url_path"`
}

// Hook is the part of a stored hook's JSON form (GET
// /v1/tenants/{t}/hooks/{event_id}) a backend usually reads.
type Hook struct {
	ID           string              `json:"id"`
	TenantID     string              `json:"tenant_id"`
	SourceID     string              `json:"source_id"`
	ReceivedAt   string              `json:"received_at"`
	Headers      map[string][]string `json:"headers"`
	Body         string              `json:"body"`
	BodyEncoding string              `json:"body_encoding"` // utf8 or base64
	Verification struct {
		Verifier string `json:"verifier"`
		Verified bool   `json:"verified"`
	} `json:"verification"`
}

// APIError is an answer other than the one a call expects: its status and
// the error body every endpoint sends, {"error": code, "message": ...}.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is the API's 404: an unknown route or
// hook, or one of another tenant.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Mint creates a route for tenant bound to source with a token the node
// mints (128 random bits): the customer's opaque catch URL path is the
// answer's URLPath.
func (c *Client) Mint(ctx context.Context, tenant, source string) (*Route, error) {
	body, err := json.Marshal(map[string]string{"source_id": source, "token": "auto"})
	if err != nil {
		return nil, err
	}
	var r Route
	if err := c.do(ctx, http.MethodPost, tenantPath(tenant, "routes"), body, http.StatusCreated, &r); err != nil {
		return nil, fmt.Errorf("cannot mint a URL for tenant %q: %w", tenant, err)
	}
	if r.Token == "" || r.URLPath == "" {
		return nil, fmt.Errorf("cannot mint a URL for tenant %q: the answer has no token or url_path (is route_resolver.type token?)", tenant)
	}
	return &r, nil
}

// Hook reads the stored hook eventID of tenant. Another tenant's hook is
// the same 404 as an unknown one (IsNotFound).
func (c *Client) Hook(ctx context.Context, tenant, eventID string) (*Hook, error) {
	var h Hook
	if err := c.do(ctx, http.MethodGet, tenantPath(tenant, "hooks", eventID), nil, http.StatusOK, &h); err != nil {
		return nil, fmt.Errorf("cannot read hook %q of tenant %q: %w", eventID, tenant, err)
	}
	return &h, nil
}

// HookJSON reads the stored hook eventID of tenant as the node sends it.
func (c *Client) HookJSON(ctx context.Context, tenant, eventID string) ([]byte, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, tenantPath(tenant, "hooks", eventID), nil, http.StatusOK, &raw); err != nil {
		return nil, fmt.Errorf("cannot read hook %q of tenant %q: %w", eventID, tenant, err)
	}
	return raw, nil
}

// Revoke deletes tenant's route routeID: from the answer on, a post to
// its URL is the node's one 404.
func (c *Client) Revoke(ctx context.Context, tenant, routeID string) error {
	if err := c.do(ctx, http.MethodDelete, tenantPath(tenant, "routes", routeID), nil, http.StatusNoContent, nil); err != nil {
		return fmt.Errorf("cannot revoke route %q of tenant %q: %w", routeID, tenant, err)
	}
	return nil
}

// tenantPath is /v1/tenants/<tenant>/<parts...>, each part escaped.
func tenantPath(tenant string, parts ...string) string {
	p := "/v1/tenants/" + url.PathEscape(tenant)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// do sends one request and decodes an answer of status want into out
// (nil: none expected); any other status is an *APIError.
func (c *Client) do(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Admin, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("cannot read the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != want {
		e := &APIError{Status: resp.StatusCode}
		if json.Unmarshal(b, &struct {
			Code    *string `json:"error"`
			Message *string `json:"message"`
		}{&e.Code, &e.Message}) != nil {
			e.Message = strings.TrimSpace(string(b))
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("cannot decode the answer to %s %s: %w", method, path, err)
	}
	return nil
}
