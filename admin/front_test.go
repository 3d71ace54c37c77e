package admin

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer serves o on a loopback port until the test ends.
func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	if o.Tokens == nil {
		o.Tokens = testTokens()
	}
	s, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// answer is one response, read whole.
type answer struct {
	code   int
	header http.Header
	body   string
}

// rawDo sends one request with target exactly as given (no client
// cleaning or redirect following) on a connection of its own.
func rawDo(t *testing.T, addr, method, target, token, body string) answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if body != "" || method == "PUT" || method == "POST" {
		req += fmt.Sprintf("Content-Length: %d\r\n", len(body))
	}
	if _, err := io.WriteString(c, req+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func errCode(body string) string {
	_, rest, ok := strings.Cut(body, `{"error":"`)
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, `"`)
	return code
}

// The order of answers of a /v1 request: 401 (no or unknown token) before
// 400 (a name outside the grammar, a path that is not plain) before 403
// (the scope) before the handler's 404.
func TestAuthOrder(t *testing.T) {
	s := startServer(t, Options{Hooks: &fakeFetcher{}})
	addr := s.Addr().String()
	hook := "/hooks/" + goodID.String()
	f := func(target, token string, code int, errc string) {
		t.Helper()
		a := rawDo(t, addr, "GET", target, token, "")
		if a.code != code || errCode(a.body) != errc {
			t.Errorf("GET %s (%s): %d %s, want %d %s", target, token, a.code, a.body, code, errc)
		}
		if code == 401 && a.header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("GET %s: 401 without WWW-Authenticate: Bearer", target)
		}
		if a.code >= 400 && a.header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d with Content-Type %q", target, a.code, a.header.Get("Content-Type"))
		}
	}
	// 401 first, whatever else is wrong.
	for _, p := range []string{"/v1/tenants/acme" + hook, "/v1/tenants/ACME" + hook, "/v1/tenants/a%2F..%2Fb" + hook,
		"/v1/tenants/acme/../globex" + hook, "/v1//tenants/acme" + hook} {
		f(p, "", 401, "unauthorized")
		f(p, "tok-unknown", 401, "unauthorized")
	}
	// 400 before 403: the token has no scope for any of them.
	f("/v1/tenants/ACME"+hook, "tok-none", 400, "invalid_name")
	f("/v1/tenants/a%2F..%2Fb"+hook, "tok-none", 400, "invalid_name")
	f("/v1/tenants/"+strings.Repeat("a", 64)+hook, "tok-none", 400, "invalid_name")
	f("/v1/tenants/acme/hooks/evt%2F1", "tok-none", 400, "invalid_name")
	// 403 naming the scope, then the handler.
	a := rawDo(t, addr, "GET", "/v1/tenants/acme"+hook, "tok-globex", "")
	if a.code != 403 || !strings.Contains(a.body, `lacks the scope tenant:acme (or tenant:*)`) {
		t.Errorf("globex on acme: %d %s", a.code, a.body)
	}
	f("/v1/tenants/acme"+hook, "tok-acme", 200, "")
	f("/v1/tenants/acme/hooks/"+unknownID.String(), "tok-acme", 404, "not_found")
	f("/v1/tenants/acme/hooks/"+globexID.String(), "tok-acme", 404, "not_found")
	f("/v1/tenants/acme/hooks/evt_nope", "tok-acme", 404, "not_found")
}

// A tenant:acme token never reaches globex's hook, however the path is
// spelled: every trick is a 400, 403 or 404, never a 2xx or a redirect.
func TestPathTricks(t *testing.T) {
	s := startServer(t, Options{Hooks: &fakeFetcher{}})
	addr := s.Addr().String()
	g := globexID.String()
	tricks := []string{
		"/v1/tenants/acme/../globex/hooks/" + g,
		"/v1/tenants/acme/%2E%2E/globex/hooks/" + g,
		"/v1/tenants/acme/%2e%2e/globex/hooks/" + g,
		"/v1/tenants/acme%2F..%2Fglobex/hooks/" + g,
		"/v1/tenants/acme%2f..%2fglobex/hooks/" + g,
		"/v1/tenants/globex%2F/hooks/" + g,
		"/v1/tenants//globex/hooks/" + g,
		"/v1//tenants/globex/hooks/" + g,
		"//v1/tenants/globex/hooks/" + g,
		"/v1/tenants/./globex/hooks/" + g,
		"/v1/tenants/acme/hooks/../../globex/hooks/" + g,
		"/v1/tenants/GLOBEX/hooks/" + g,
		"/v1/tenants/Globex/hooks/" + g,
		"/v1/tenants/%67lobex/hooks/" + g,
		"/v1/tenants/globex/hooks/" + g,
		"/v1/tenants/acme/hooks/" + g,
		"/v1/tenants/acme\\..\\globex/hooks/" + g,
		"/v1/tenants/acme/hooks/%2E%2E%2F%2E%2E%2Fglobex%2Fhooks%2F" + g,
	}
	for _, p := range tricks {
		for _, tok := range []string{"tok-acme", ""} {
			a := rawDo(t, addr, "GET", p, tok, "")
			switch {
			case a.code < 400:
				t.Errorf("GET %s (%s): %d %s, want a 4xx", p, tok, a.code, a.body)
			case tok == "" && a.code != 401:
				t.Errorf("GET %s without a token: %d, want 401", p, a.code)
			case tok != "" && a.code != 400 && a.code != 403 && a.code != 404:
				t.Errorf("GET %s: %d %s", p, a.code, a.body)
			}
		}
	}
}

// The profiles need the debug scope; the open routes need nothing.
func TestDebugScope(t *testing.T) {
	s := startServer(t, Options{Hooks: &fakeFetcher{}, Listener: ListenerOptions{WriteTimeout: 3 * time.Second}})
	addr := s.Addr().String()
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1", "/debug/pprof/allocs",
		"/debug/pprof/symbol", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=0.1", "/debug/pprof/threadcreate"} {
		if a := rawDo(t, addr, "GET", p, "", ""); a.code != 401 {
			t.Errorf("GET %s without a token: %d", p, a.code)
		}
		if a := rawDo(t, addr, "GET", p, "tok-root", ""); a.code != 403 || !strings.Contains(a.body, "lacks the scope debug") {
			t.Errorf("GET %s with tenants:* but not debug: %d %s", p, a.code, a.body)
		}
		if a := rawDo(t, addr, "GET", p, "tok-prof", ""); a.code != 200 {
			t.Errorf("GET %s with debug: %d %s", p, a.code, a.body)
		}
	}
	// A profile longer than write_timeout could not be sent: 400 naming it.
	for _, p := range []string{"/debug/pprof/profile?seconds=3", "/debug/pprof/profile", "/debug/pprof/profile?seconds=x", "/debug/pprof/profile?seconds=0.5", "/debug/pprof/trace?seconds=-1"} {
		if a := rawDo(t, addr, "GET", p, "tok-prof", ""); a.code != 400 || errCode(a.body) != "invalid_query" || !strings.Contains(a.body, "seconds: ") {
			t.Errorf("GET %s: %d %s, want 400 invalid_query naming seconds", p, a.code, a.body)
		}
	}
	for _, p := range []string{"/metrics", "/healthz"} {
		if a := rawDo(t, addr, "GET", p, "", ""); a.code != 200 {
			t.Errorf("GET %s: %d", p, a.code)
		}
	}
}

// What the mux does not match is a JSON error, not net/http's text.
func TestUnmatchedJSON(t *testing.T) {
	s := startServer(t, Options{Hooks: &fakeFetcher{}})
	addr := s.Addr().String()
	for _, c := range []struct {
		method, path string
		code         int
		errc, allow  string
	}{
		{"GET", "/v1/nope", 404, "not_found", ""},
		{"GET", "/nope", 404, "not_found", ""},
		{"GET", "/v1/tenants/acme/hooks/" + goodID.String() + "/x", 404, "not_found", ""},
		{"DELETE", "/v1/tenants/acme/hooks/" + goodID.String(), 405, "method_not_allowed", "GET, HEAD"},
		{"POST", "/metrics", 405, "method_not_allowed", "GET, HEAD"},
	} {
		a := rawDo(t, addr, c.method, c.path, "tok-root", "")
		if a.code != c.code || errCode(a.body) != c.errc || a.header.Get("Content-Type") != "application/json" || a.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %v %s, want %d %s Allow %q", c.method, c.path, a.code, a.header, a.body, c.code, c.errc, c.allow)
		}
	}
}
