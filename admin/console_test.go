package admin

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/console"
)

// TestConsoleOnListener: the admin listener serves the console's files
// without a token, with the console's headers, redirects /console to
// /console/, answers an unknown file 404 with the same headers, and still
// asks a token of every /v1 call the page makes; the console is no route
// of the API document.
func TestConsoleOnListener(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Options{Tokens: testTokens(), Hooks: &fakeFetcher{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr().String()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	for _, tc := range []struct {
		path   string
		status int
		ctype  string
		holds  string
	}{
		{"/console/", 200, "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"/console/app.js", 200, "text/javascript; charset=utf-8", "import"},
		{"/console/app.css", 200, "text/css; charset=utf-8", "{"},
		{"/console/nope.js", 404, "text/plain; charset=utf-8", "no console file"},
		{"/console", 301, "", ""},
	} {
		resp, body := get(tc.path)
		if resp.StatusCode != tc.status || tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype || !strings.Contains(body, tc.holds) {
			t.Errorf("GET %s: %d %q, want %d %q holding %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.ctype, tc.holds)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != console.CSP {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", tc.path, got, console.CSP)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", tc.path, k, got, want)
			}
		}
		if tc.status == 301 && resp.Header.Get("Location") != "/console/" {
			t.Errorf("GET /console: Location %q, want /console/", resp.Header.Get("Location"))
		}
	}
	// A dot segment is refused by the listener before the console sees it.
	if resp, _ := get("/console/../v1/tenants"); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /console/../v1/tenants: %d, want 400 or 401", resp.StatusCode)
	}
	if resp, _ := get("/v1/tenants/acme/hooks/x"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/... without a token: %d, want 401", resp.StatusCode)
	}
	pats, err := Patterns(Options{Tokens: testTokens()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pats {
		if strings.Contains(p, "/console") {
			t.Errorf("Patterns lists %q: the console is no route of the API document", p)
		}
	}
}
