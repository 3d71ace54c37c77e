package main

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func drawTenants(t *testing.T, dist string, tenants, n int) []int {
	t.Helper()
	cfg := &Config{Tenants: tenants, TenantDist: dist, TenantPrefix: "t", Sources: []string{"a"}}
	p := newTargets(cfg).picker(rand.New(rand.NewPCG(3, 4)))
	counts := make([]int, tenants)
	for range n {
		counts[p.tenant()]++
	}
	return counts
}

func TestTenantDistributions(t *testing.T) {
	const n = 200_000
	zipf := drawTenants(t, "zipf", 1000, n)
	sorted := slices.Clone(zipf)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if share := float64(zipf[0]) / n; share < 0.10 || share > 0.30 {
		t.Fatalf("zipf: t0 drew %.1f%% of requests, want 10-30%%", share*100)
	}
	if zipf[0] < 50*max(median, 1) || zipf[0] < zipf[1] || zipf[1] < zipf[10] || zipf[10] < zipf[500] {
		t.Fatalf("zipf: counts t0 %d, t1 %d, t10 %d, t500 %d, median %d: want steeply decreasing", zipf[0], zipf[1], zipf[10], zipf[500], median)
	}
	uniform := drawTenants(t, "uniform", 100, n)
	for i, c := range uniform {
		if c < n/100*85/100 || c > n/100*115/100 {
			t.Fatalf("uniform: t%d drew %d of %d, want about %d", i, c, n, n/100)
		}
	}
	if one := drawTenants(t, "zipf", 1, 10); one[0] != 10 {
		t.Fatalf("one tenant: %v", one)
	}
}

func TestTargetNamesAndURLs(t *testing.T) {
	ts := startServer(t, &testServer{})
	mustRun(t, "-url", ts.url+"/webhooks/{tenant}/{source}?x=1", "-c", "2", "-n", "600", "-warmup", "0",
		"-tenants", "3", "-tenant-prefix", "acme", "-sources", "stripe,github")
	if len(ts.paths) != 6 {
		t.Fatalf("paths %v, want the 6 tenant/source pairs", ts.paths)
	}
	for _, tenant := range []string{"acme0", "acme1", "acme2"} {
		for _, source := range []string{"stripe", "github"} {
			if c := ts.paths["/webhooks/"+tenant+"/"+source]; c < 50 {
				t.Fatalf("/webhooks/%s/%s got %d of 600 requests: %v", tenant, source, c, ts.paths)
			}
		}
	}
}

func TestCompileURL(t *testing.T) {
	f := func(raw, want, wantProbe string) {
		t.Helper()
		tmpl, err := compileURL(raw, "t0", "demo")
		if err != nil {
			t.Fatalf("compileURL(%q): %v", raw, err)
		}
		if got := string(tmpl.appendTo(nil, "t7", "gh")); got != want || tmpl.probeAddr != wantProbe {
			t.Fatalf("compileURL(%q) expands to %q, probes %q; want %q, %q", raw, got, tmpl.probeAddr, want, wantProbe)
		}
	}
	f("http://127.0.0.1:8080/webhooks/{tenant}/{source}", "http://127.0.0.1:8080/webhooks/t7/gh", "127.0.0.1:8080")
	f("http://h/{source}/{source}", "http://h/gh/gh", "h:80")
	f("https://{tenant}.example.com/in", "https://t7.example.com/in", "t0.example.com:443")
	f("http://[::1]:9/x", "http://[::1]:9/x", "[::1]:9")
}
