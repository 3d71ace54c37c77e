package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

// digest is the hex SHA-256 of token, as admin.tokens stores it.
func digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// testTokens are the tokens of the tests: the token of each is "tok-" + name.
func testTokens() []config.AdminToken {
	return []config.AdminToken{
		{Name: "acme", SHA256: digest("tok-acme"), Scopes: []string{"tenant:acme"}},
		{Name: "root", SHA256: strings.ToUpper(digest("tok-root")), Scopes: []string{"tenant:*", "tenants:read", "tenants:write"}},
		{Name: "globex", SHA256: digest("tok-globex"), Scopes: []string{"tenant:globex", "tenant:initech"}},
		{Name: "reader", SHA256: digest("tok-reader"), Scopes: []string{"tenants:read"}},
		{Name: "none", SHA256: digest("tok-none")},
		{Name: "prof", SHA256: digest("tok-prof"), Scopes: []string{"debug"}},
		{Name: "writer", SHA256: digest("tok-writer"), Scopes: []string{"tenants:write"}},
	}
}

func TestValidateTokens(t *testing.T) {
	if err := ValidateTokens(testTokens()); err != nil {
		t.Fatalf("ValidateTokens(good) = %v", err)
	}
	if err := ValidateTokens(nil); err != nil {
		t.Fatalf("ValidateTokens(nil) = %v", err)
	}
	f := func(mod func(ts []config.AdminToken), want ...string) {
		t.Helper()
		ts := testTokens()
		mod(ts)
		err := ValidateTokens(ts)
		if err == nil {
			t.Fatalf("ValidateTokens accepted %+v", ts)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidateTokens = %q, want it to contain %q", err, w)
			}
		}
		// Register refuses the same tokens with the same message.
		if rerr := Register(http.NewServeMux(), Options{Tokens: ts}); rerr == nil || rerr.Error() != err.Error() {
			t.Errorf("Register = %v, want %v", rerr, err)
		}
	}
	f(func(ts []config.AdminToken) { ts[0].SHA256 = "tok-acme" }, "admin.tokens[0] (acme): sha256 must be 64 hex characters")
	f(func(ts []config.AdminToken) { ts[2].SHA256 = digest("x")[:63] }, "admin.tokens[2] (globex): sha256")
	f(func(ts []config.AdminToken) { ts[2].SHA256 = digest("x")[:63] + "g" }, "admin.tokens[2] (globex): sha256")
	f(func(ts []config.AdminToken) { ts[2].SHA256 = "" }, "admin.tokens[2] (globex): sha256")
	f(func(ts []config.AdminToken) { ts[3].SHA256 = strings.ToUpper(ts[0].SHA256) },
		"admin.tokens[3] (reader): sha256 is also the digest of admin.tokens[0] (acme)")
	f(func(ts []config.AdminToken) { ts[1].Scopes = []string{"tenant:*", "admin"} }, `admin.tokens[1] (root): scopes: "admin" is not a scope`)
	f(func(ts []config.AdminToken) { ts[0].Scopes = []string{"tenant:ACME"} }, `admin.tokens[0] (acme): scopes: "tenant:ACME" names no valid tenant`)
	f(func(ts []config.AdminToken) { ts[0].Scopes = []string{"tenant:"} }, `admin.tokens[0] (acme): scopes: "tenant:" names no valid tenant`)
	f(func(ts []config.AdminToken) { ts[0].Scopes = []string{"tenants:*"} }, `admin.tokens[0] (acme): scopes: "tenants:*" is not a scope`)
	f(func(ts []config.AdminToken) { ts[0].Scopes = []string{" tenant:acme"} }, `admin.tokens[0] (acme): scopes: " tenant:acme" is not a scope`)
	f(func(ts []config.AdminToken) { ts[4].Name = "" }, "admin.tokens[4] (): name is required")
	f(func(ts []config.AdminToken) { ts[4].Name = "acme" }, `admin.tokens[4] (acme): name "acme" is also admin.tokens[0]`)
	// Every problem is reported, not only the first.
	f(func(ts []config.AdminToken) {
		ts[0].SHA256 = "x"
		ts[3].Scopes = []string{"nope"}
	}, "admin.tokens[0] (acme): sha256", `admin.tokens[3] (reader): scopes: "nope"`)
}

func TestPrincipalScopes(t *testing.T) {
	a, err := NewAuth(testTokens())
	if err != nil {
		t.Fatal(err)
	}
	principal := func(token string) *Principal {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		p, why := a.Authenticate(r)
		if p == nil {
			t.Fatalf("Authenticate(%s) = %s", token, why)
		}
		return p
	}
	f := func(token, tenant string, want bool) {
		t.Helper()
		if got := principal(token).CanTenant(tenant); got != want {
			t.Errorf("%s CanTenant(%q) = %v, want %v", token, tenant, got, want)
		}
	}
	f("tok-acme", "acme", true)
	f("tok-acme", "globex", false)
	f("tok-acme", "acme2", false)
	f("tok-acme", "", false)
	f("tok-root", "anything", true)
	f("tok-globex", "initech", true)
	f("tok-globex", "acme", false)
	f("tok-reader", "acme", false)
	f("tok-none", "acme", false)
	if p := principal("tok-root"); p.Name != "root" || !p.CanReadTenants() || !p.CanWriteTenants() {
		t.Errorf("root = %+v", p)
	}
	if p := principal("tok-reader"); p.Name != "reader" || !p.CanReadTenants() || p.CanWriteTenants() {
		t.Errorf("reader = %+v", p)
	}
	if p := principal("tok-acme"); p.CanReadTenants() || p.CanWriteTenants() {
		t.Errorf("acme = %+v", p)
	}
}

func TestBearerToken(t *testing.T) {
	f := func(values []string, want string, wantOK bool) {
		t.Helper()
		h := http.Header{}
		for _, v := range values {
			h.Add("Authorization", v)
		}
		got, ok := bearerToken(h)
		if got != want || ok != wantOK {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", values, got, ok, want, wantOK)
		}
	}
	f(nil, "", false)
	f([]string{"Bearer abc"}, "abc", true)
	f([]string{"bearer abc"}, "abc", true)
	f([]string{"BEARER  abc"}, "abc", true)
	f([]string{"Bearer a.b-c_d~e+f/g=="}, "a.b-c_d~e+f/g==", true)
	f([]string{""}, "", false)
	f([]string{"Bearer"}, "", false)
	f([]string{"Bearer "}, "", false)
	f([]string{"Bearer abc def"}, "", false)
	f([]string{"Bearer abc\t"}, "", false)
	f([]string{"Basic YWJjOmRlZg=="}, "", false)
	f([]string{"Bearerabc"}, "", false)
	f([]string{"Bearer abc", "Bearer abc"}, "", false)
}

// TestAuthenticateComparesAll checks that a token is compared with every
// configured digest, whether it matches the first, the last or none.
func TestAuthenticateComparesAll(t *testing.T) {
	tokens := testTokens()
	a, err := NewAuth(tokens)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	compareDigest = func(x, y []byte) int {
		calls++
		if len(x) != sha256.Size || len(y) != sha256.Size {
			t.Errorf("compared %d and %d bytes, want two SHA-256 digests", len(x), len(y))
		}
		return subtle.ConstantTimeCompare(x, y)
	}
	defer func() { compareDigest = subtle.ConstantTimeCompare }()
	for _, c := range []struct{ token, want string }{
		{"tok-acme", "acme"}, {"tok-root", "root"}, {"tok-none", "none"}, {"tok-unknown", ""},
	} {
		calls = 0
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+c.token)
		p, why := a.Authenticate(r)
		switch {
		case c.want == "" && (p != nil || why == ""):
			t.Errorf("%s: Authenticate = %+v, %q; want no principal and a reason", c.token, p, why)
		case c.want != "" && (p == nil || p.Name != c.want):
			t.Errorf("%s: Authenticate = %+v, %q; want %s", c.token, p, why, c.want)
		}
		if calls != len(tokens) {
			t.Errorf("%s: %d comparisons, want one per token (%d)", c.token, calls, len(tokens))
		}
	}
}

func TestNoTokens(t *testing.T) {
	mux := http.NewServeMux()
	if err := Register(mux, Options{Hooks: &fakeFetcher{}}); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/tenants/acme/hooks/"+goodID.String(), nil)
	r.Header.Set("Authorization", "Bearer anything")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("with no tokens: %d, want 401", w.Code)
	}
}

func TestGuardPrincipal(t *testing.T) {
	a, err := NewAuth(testTokens())
	if err != nil {
		t.Fatal(err)
	}
	var seen *Principal
	h := a.Guard(func(p *Principal, r *http.Request) string {
		if !p.CanWriteTenants() {
			return ScopeTenantsWrite
		}
		return ""
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = PrincipalFrom(r.Context()) }))
	for _, c := range []struct {
		token string
		code  int
		body  string
	}{
		{"tok-root", 200, ""},
		{"tok-reader", 403, `{"error":"forbidden","message":"token \"reader\" lacks the scope tenants:write"}` + "\n"},
	} {
		seen = nil
		r := httptest.NewRequest("POST", "/v1/tenants", nil)
		r.Header.Set("Authorization", "Bearer "+c.token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.code || w.Body.String() != c.body {
			t.Errorf("%s: %d %s, want %d %s", c.token, w.Code, w.Body, c.code, c.body)
		}
		if c.code == 200 && (seen == nil || seen.Name != "root") {
			t.Errorf("%s: PrincipalFrom = %+v", c.token, seen)
		}
	}
	if p := PrincipalFrom(httptest.NewRequest("GET", "/", nil).Context()); p != nil {
		t.Errorf("PrincipalFrom outside a guard = %+v", p)
	}
}
