package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/segment"
)

var (
	goodID    = envelope.MakeID(1_764_445_200_123, 7, 42)
	globexID  = envelope.MakeID(1_764_445_200_124, 7, 43)
	goneID    = envelope.MakeID(1_764_445_200_125, 7, 44)
	brokenID  = envelope.MakeID(1_764_445_200_126, 7, 45)
	nilID     = envelope.MakeID(1_764_445_200_127, 7, 46)
	unknownID = envelope.MakeID(1_764_445_200_128, 7, 47)
	removedID = envelope.MakeID(1_764_445_200_129, 7, 48)
	corruptID = envelope.MakeID(1_764_445_200_130, 7, 49)
	errBroken = errors.New("segment 12: checksum mismatch")
	// acmeHook is signed as its source (quarantine_test.go's sources)
	// wants: a release without force verifies it again.
	acmeHook = &envelope.Envelope{Seq: 42, ID: goodID, TenantID: "acme", SourceID: "stripe", ReceivedAt: 1_764_445_200_123_456_789,
		Headers: []envelope.Header{{Name: "Stripe-Signature", Value: stripeSig(penSecret, 1_764_445_200, `{"id":"evt_1"}`)}},
		Body:    []byte(`{"id":"evt_1"}`)}
	globexHook = &envelope.Envelope{Seq: 43, ID: globexID, TenantID: "globex", SourceID: "gh", Body: []byte{0xff}}
)

// fakeFetcher serves acmeHook, globexHook, goneHook (whose ordinal
// fakeEraser says was erased) and penHooks, and an error for each other id
// it knows, as *segment.Store answers.
type fakeFetcher struct {
	mu    sync.Mutex
	calls []string // ids
}

func (f *fakeFetcher) Fetch(id envelope.ID) (*envelope.Envelope, error) {
	f.mu.Lock()
	f.calls = append(f.calls, id.String())
	f.mu.Unlock()
	switch id {
	case goodID:
		return acmeHook, nil
	case globexID:
		return globexHook, nil
	case goneID:
		return goneHook, nil
	case brokenID:
		return nil, errBroken
	case corruptID:
		return nil, &segment.CorruptError{File: "/data/segments/00000001-00000400.seg", Offset: 262144, Reason: "block checksum mismatch"}
	case nilID:
		return nil, nil
	case removedID, penRemovedID:
		return nil, fmt.Errorf("%w (segment 00000007)", segment.ErrRemoved)
	}
	if e, ok := penHooks[id]; ok {
		return e, nil
	}
	return nil, segment.ErrNotFound
}

func newTestMux(t *testing.T) (*http.ServeMux, *fakeFetcher, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	f := &fakeFetcher{}
	mux := http.NewServeMux()
	if err := Register(mux, Options{Tokens: testTokens(), Hooks: f, Logger: zap.New(core), Erase: newFakeEraser()}); err != nil {
		t.Fatal(err)
	}
	return mux, f, logs
}

func get(mux http.Handler, path string, auth ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	for _, a := range auth {
		r.Header.Add("Authorization", a)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

const notFoundBody = `{"error":"not_found","message":"no hook with this id"}` + "\n"

func TestHookStatuses(t *testing.T) {
	mux, _, _ := newTestMux(t)
	acmePath := "/v1/tenants/acme/hooks/" + goodID.String()
	acmeJSON := string(acmeHook.AppendJSON(nil)) + "\n"
	f := func(name, path string, auth []string, wantCode int, wantBody string) {
		t.Run(name, func(t *testing.T) {
			w := get(mux, path, auth...)
			if w.Code != wantCode {
				t.Fatalf("GET %s: %d %s, want %d", path, w.Code, w.Body, wantCode)
			}
			if wantBody != "" && w.Body.String() != wantBody {
				t.Fatalf("GET %s: body %s, want %s", path, w.Body, wantBody)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Fatalf("Cache-Control %q", cc)
			}
			wa := w.Header().Get("WWW-Authenticate")
			if (wantCode == http.StatusUnauthorized) != (wa == "Bearer") {
				t.Fatalf("WWW-Authenticate %q with %d", wa, w.Code)
			}
		})
	}
	bearer := func(token string) []string { return []string{"Bearer " + token} }
	unauthorized := func(msg string) string {
		return `{"error":"unauthorized","message":"` + msg + `"}` + "\n"
	}
	f("401 no header", acmePath, nil, 401, unauthorized("send the header Authorization: Bearer <token>"))
	f("401 wrong scheme", acmePath, []string{"Basic dG9rLWFjbWU6"}, 401, unauthorized("send the header Authorization: Bearer <token>"))
	f("401 empty token", acmePath, []string{"Bearer "}, 401, "")
	f("401 two headers", acmePath, []string{"Bearer tok-acme", "Bearer tok-acme"}, 401, "")
	f("401 unknown token", acmePath, bearer("tok-nobody"), 401, unauthorized("the bearer token is not one of admin.tokens"))
	f("401 the digest as the token", acmePath, bearer(digest("tok-acme")), 401, "")
	f("403 other tenant's scope", acmePath, bearer("tok-globex"), 403,
		`{"error":"forbidden","message":"token \"globex\" lacks the scope tenant:acme (or tenant:*)"}`+"\n")
	f("403 tenants:read only", acmePath, bearer("tok-reader"), 403, "")
	f("403 no scopes", acmePath, bearer("tok-none"), 403, "")
	f("200 tenant:acme", acmePath, bearer("tok-acme"), 200, acmeJSON)
	f("200 tenant:*", acmePath, bearer("tok-root"), 200, acmeJSON)
	f("200 scheme in lower case", acmePath, []string{"bearer tok-acme"}, 200, acmeJSON)
	f("200 lower-case id", strings.ToLower(acmePath), bearer("tok-acme"), 200, acmeJSON)
	f("200 binary body", "/v1/tenants/globex/hooks/"+globexID.String(), bearer("tok-globex"), 200,
		string(globexHook.AppendJSON(nil))+"\n")
	f("404 unknown id", "/v1/tenants/acme/hooks/"+unknownID.String(), bearer("tok-acme"), 404, notFoundBody)
	f("404 segment gone from local disk, no archive", "/v1/tenants/acme/hooks/"+removedID.String(), bearer("tok-acme"), 404, notFoundBody)
	f("404 malformed id", "/v1/tenants/acme/hooks/evt_nope", bearer("tok-acme"), 404, notFoundBody)
	f("404 id past 128 bits", "/v1/tenants/acme/hooks/evt_8ZZZZZZZZZZZZZZZZZZZZZZZZZ", bearer("tok-acme"), 404, notFoundBody)
	f("404 other tenant's hook", "/v1/tenants/acme/hooks/"+globexID.String(), bearer("tok-root"), 404, notFoundBody)
	f("400 invalid tenant name", "/v1/tenants/ACME/hooks/"+goodID.String(), bearer("tok-root"), 400,
		`{"error":"invalid_name","message":"tenant: \"ACME\" is not a name (names match ^[a-z0-9][a-z0-9._-]{0,62}$: lower case, at most 63 characters)"}`+"\n")
	f("410 gone", "/v1/tenants/acme/hooks/"+goneID.String(), bearer("tok-acme"), 410,
		`{"error":"gone","message":"this hook's tenant was erased"}`+"\n")
	f("500 internal", "/v1/tenants/acme/hooks/"+brokenID.String(), bearer("tok-acme"), 500,
		`{"error":"internal","message":"the hook could not be read; the node's log says why"}`+"\n")
	f("500 nil hook", "/v1/tenants/acme/hooks/"+nilID.String(), bearer("tok-acme"), 500, "")
	f("500 corrupt", "/v1/tenants/acme/hooks/"+corruptID.String(), bearer("tok-acme"), 500,
		`{"error":"corrupt","message":"the hook's segment 00000001-00000400.seg is damaged at offset 262144 (block checksum mismatch); the node's log says more"}`+"\n")
}

// TestHookNoLeak checks that another tenant's hook, an unknown id and a
// malformed id get byte-identical answers, headers included.
func TestHookNoLeak(t *testing.T) {
	mux, _, _ := newTestMux(t)
	paths := []string{
		"/v1/tenants/acme/hooks/" + globexID.String(),
		"/v1/tenants/acme/hooks/" + unknownID.String(),
		"/v1/tenants/acme/hooks/not-an-id",
	}
	var first *httptest.ResponseRecorder
	for _, p := range paths {
		w := get(mux, p, "Bearer tok-acme")
		if first == nil {
			first = w
			continue
		}
		if w.Code != first.Code || w.Body.String() != first.Body.String() || fmt.Sprint(w.Header()) != fmt.Sprint(first.Header()) {
			t.Errorf("%s: %d %v %s\ndiffers from %s: %d %v %s", p, w.Code, w.Header(), w.Body, paths[0], first.Code, first.Header(), first.Body)
		}
	}
}

func TestHookFetchArguments(t *testing.T) {
	mux, f, _ := newTestMux(t)
	get(mux, "/v1/tenants/acme/hooks/"+strings.ToLower(goodID.String()), "Bearer tok-acme")
	get(mux, "/v1/tenants/acme/hooks/evt_nope", "Bearer tok-acme")           // not parsed: no fetch
	get(mux, "/v1/tenants/ACME/hooks/"+goodID.String(), "Bearer tok-root")   // invalid tenant: no fetch
	get(mux, "/v1/tenants/acme/hooks/"+goodID.String(), "Bearer tok-globex") // forbidden: no fetch
	get(mux, "/v1/tenants/acme/hooks/"+goodID.String())                      // unauthorized: no fetch
	want := []string{goodID.String()}
	if fmt.Sprint(f.calls) != fmt.Sprint(want) {
		t.Fatalf("fetches %q, want %q", f.calls, want)
	}
}

func TestHookInternalErrorLogged(t *testing.T) {
	mux, _, logs := newTestMux(t)
	get(mux, "/v1/tenants/acme/hooks/"+brokenID.String(), "Bearer tok-acme")
	entries := logs.FilterMessage("cannot fetch hook").All()
	if len(entries) != 1 || entries[0].Level != zapcore.ErrorLevel {
		t.Fatalf("log entries %+v, want one error", logs.All())
	}
	fields := entries[0].ContextMap()
	if fields["tenant"] != "acme" || fields["id"] != brokenID.String() || fields["error"] != errBroken.Error() {
		t.Fatalf("log fields %v", fields)
	}
	// Not-found and gone are answers, not failures.
	get(mux, "/v1/tenants/acme/hooks/"+unknownID.String(), "Bearer tok-acme")
	get(mux, "/v1/tenants/acme/hooks/"+goneID.String(), "Bearer tok-acme")
	get(mux, "/v1/tenants/acme/hooks/"+removedID.String(), "Bearer tok-acme")
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d log entries, want 1: %+v", n, logs.All())
	}
}

func TestHookRoutes(t *testing.T) {
	mux, _, _ := newTestMux(t)
	r := httptest.NewRequest("POST", "/v1/tenants/acme/hooks/"+goodID.String(), nil)
	r.Header.Set("Authorization", "Bearer tok-acme")
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", w.Code)
	}
	if w := get(mux, "/v1/tenants/acme/hooks/"+goodID.String()+"/x", "Bearer tok-acme"); w.Code != http.StatusNotFound {
		t.Errorf("extra segment: %d, want 404", w.Code)
	}
	// Without a fetcher the route is left out.
	bare := http.NewServeMux()
	if err := Register(bare, Options{Tokens: testTokens()}); err != nil {
		t.Fatal(err)
	}
	if w := get(bare, "/v1/tenants/acme/hooks/"+goodID.String(), "Bearer tok-acme"); w.Code != http.StatusNotFound {
		t.Errorf("no fetcher: %d, want 404", w.Code)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := Options{Tokens: testTokens()}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o.Tokens[0].Scopes = []string{"root"}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "admin.tokens[0] (acme)") {
		t.Fatalf("Validate = %v", err)
	}
}
