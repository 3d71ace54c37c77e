package source

import (
	"errors"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/verify"
)

func TestSnapshotSources(t *testing.T) {
	specs := map[string]config.Source{
		"shared":      {Verify: config.Verify{Type: "none"}},
		"acme-stripe": {TenantID: "acme", Verify: config.Verify{Type: "none"}, MaxBodyBytes: 1024},
		"big":         {TenantID: "acme", Verify: config.Verify{Type: "none"}, MaxBodyBytes: 1 << 30},
		"broken":      {Verify: config.Verify{Type: "standardwebhooks", Secret: config.Secret{Ref: "x", Value: "!!not base64"}}},
	}
	s := NewSnapshot(specs, nil, 4096)
	cases := []struct {
		name    string
		tenant  string
		shared  bool
		maxBody int64
	}{
		{"shared", "default", true, 4096},
		{"acme-stripe", "acme", false, 1024},
		{"big", "acme", false, 4096}, // capped by the node's bound
	}
	for _, c := range cases {
		src := s.Lookup([]byte(c.name))
		if src == nil {
			t.Fatalf("%s: not found", c.name)
		}
		if src.TenantID != c.tenant || src.Shared != c.shared || src.MaxBodyBytes != c.maxBody {
			t.Fatalf("%s: tenant %q shared %v max %d, want %q %v %d", c.name, src.TenantID, src.Shared, src.MaxBodyBytes, c.tenant, c.shared, c.maxBody)
		}
	}
	if s.Lookup([]byte("nope")) != nil {
		t.Fatal("unknown source found")
	}
	// A verifier that cannot be built fails closed.
	b := s.Lookup([]byte("broken"))
	if err := b.Verifier.Verify(nil, []byte("x"), time.Now()); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("broken verifier accepted or wrong error: %v", err)
	}
}

func TestMatchRoute(t *testing.T) {
	s := NewSnapshot(nil, []config.Route{
		{ID: "a", TenantID: "acme", Host: "hooks.example.com", Path: "/catch/:app/:s"},
		{ID: "b", TenantID: "globex", Path: "/catch/:app/:s"},
		{ID: "c", Path: "/webhooks/:s"},
	}, 1024)
	seg := func(parts ...string) [][]byte {
		out := make([][]byte, len(parts))
		for i, p := range parts {
			out[i] = []byte(p)
		}
		return out
	}
	cases := []struct {
		host  string
		segs  [][]byte
		want  string
		param string
	}{
		{"hooks.example.com", seg("catch", "a1", "x"), "a", "a1"},
		{"HOOKS.example.com:443", seg("catch", "a2", "x"), "a", "a2"},
		{"other.example.com", seg("catch", "a3", "x"), "b", "a3"},
		{"any", seg("webhooks", "x"), "c", ""},
		{"any", seg("webhooks", "x", "y"), "", ""},
		{"any", seg("catch", "a1"), "", ""},
	}
	for _, c := range cases {
		var app string
		r := s.MatchRoute([]byte(c.host), c.segs, func(name string, v []byte) {
			if name == "app" {
				app = string(v)
			}
		})
		got := ""
		if r != nil {
			got = r.ID
		}
		if got != c.want || app != c.param {
			t.Fatalf("%s %q: route %q app %q, want %q %q", c.host, c.segs, got, app, c.want, c.param)
		}
	}
	if r := s.MatchRoute([]byte("any"), seg("webhooks", "x"), nil); r == nil || !r.Shared() {
		t.Fatalf("route c should be shared: %+v", r)
	}
}
