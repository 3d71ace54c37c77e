package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
)

func TestQuantile(t *testing.T) {
	d := []time.Duration{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 6}, {0.99, 10}, {0.999, 10}, {1, 10}, {0, 1}} {
		if got := quantile(d, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if d[0] != 9 {
		t.Errorf("quantile reordered its input: %v", d)
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile(nil) = %v", got)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil || o.sources != 100000 || o.small != 0 || o.writes != 1000 || len(o.clients) != 2 || o.clients[1] != 16 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, bad := range [][]string{
		{"-tenants", "200000"},
		{"-small", "-1"},
		{"-writes", "0"},
		{"-redis", "http://127.0.0.1:6379"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q): no error", bad)
		}
	}
}

// TestConfigOf: the node's config loads, with the redis store on the
// URL and namespace given, tick_ms 1000 and the kek set.
func TestConfigOf(t *testing.T) {
	cfg, err := config.Load([]byte(configOf(t.TempDir(), "127.0.0.1:1", "127.0.0.1:2", "a", "redis://127.0.0.1:9/0", "ns:")), config.ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.SourceStore; s.Type != "redis" || s.URL != "redis://127.0.0.1:9/0" || s.Namespace != "ns:" || s.TickMs != 1000 || cfg.Secrets.KEK.Value != kek {
		t.Errorf("source_store %+v, kek %q", s, cfg.Secrets.KEK.Value)
	}
	if a, b := newNamespace("x"), newNamespace("x"); a == b || !strings.HasPrefix(a, "bench-fleet-x-") || !strings.HasSuffix(a, ":") {
		t.Errorf("namespaces %q and %q: want fresh ones", a, b)
	}
}
