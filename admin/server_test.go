package admin

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/ankusa/ankusa/segment"
)

type failFlag struct{ atomic.Bool }

func (f *failFlag) Failed() bool { return f.Load() }

// The open routes: /metrics, /healthz and /readyz answer without a token;
// /readyz waits for SetReady; both turn 503 once storage failed; /v1 still
// wants a token.
func TestServerOpenRoutes(t *testing.T) {
	var failed failFlag
	s, err := Listen("127.0.0.1:0", Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Health: &failed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr().String()
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/metrics", 200}, {"/healthz", 200}, {"/readyz", 503}, {"/debug/pprof/", 401}, {"/v1/tenants/acme/hooks/x", 401}} {
		if got := get(tc.path); got != tc.want {
			t.Errorf("GET %s before ready: %d, want %d", tc.path, got, tc.want)
		}
	}
	s.SetReady(true)
	if got := get("/readyz"); got != 200 {
		t.Errorf("GET /readyz when ready: %d", got)
	}
	failed.Store(true)
	for _, p := range []string{"/healthz", "/readyz"} {
		if got := get(p); got != 503 {
			t.Errorf("GET %s after a storage failure: %d, want 503", p, got)
		}
	}
	if _, err := Listen(s.Addr().String(), Options{}); err == nil {
		t.Error("a second Listen on a taken address: no error")
	}
}

type spaceFlag struct{ atomic.Pointer[string] }

func (f *spaceFlag) NoSpace() string {
	if p := f.Load(); p != nil {
		return *p
	}
	return ""
}

// TestReadyzDiskFull: while the node refuses hooks for a full disk,
// /readyz is 503 and says so; /healthz stays 200 (the node works and
// recovers by itself); once space returns /readyz is 200 again.
func TestReadyzDiskFull(t *testing.T) {
	var space spaceFlag
	s, err := Listen("127.0.0.1:0", Options{Tokens: testTokens(), Health: &failFlag{}, Storage: &space})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetReady(true)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + s.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	why := `disk full: node.data_dir "/d": free space fell`
	space.Store(&why)
	if code, body := get("/readyz"); code != 503 || body != "not ready: "+why+"\n" {
		t.Errorf("GET /readyz on a full disk: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("GET /healthz on a full disk: %d, want 200", code)
	}
	space.Store(nil)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("GET /readyz once space returned: %d", code)
	}
}

type fakeDamage []segment.Damage

func (f fakeDamage) Damaged() []segment.Damage { return f }

// /readyz names each damaged local segment and its seqs, and stays 200:
// ingest and every other hook are unaffected.
func TestReadyzNamesDamage(t *testing.T) {
	dmg := fakeDamage{{Name: "00000000000000000001-00000000000000000400.seg", FirstSeq: 42, LastSeq: 77, Reason: "block 1: block checksum mismatch at offset 4096"}}
	s, err := Listen("127.0.0.1:0", Options{Tokens: testTokens(), Hooks: &fakeFetcher{}, Damage: dmg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetReady(true)
	resp, err := http.Get("http://" + s.Addr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := "ready\ndamaged: segment 00000000000000000001-00000000000000000400.seg seqs 42..77 damaged (block 1: block checksum mismatch at offset 4096); no archived copy: these hooks cannot be read\n"
	if resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("GET /readyz: %d %q, want 200 %q", resp.StatusCode, body, want)
	}
}
