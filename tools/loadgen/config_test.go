package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	const u = "-url=http://127.0.0.1:8080/webhooks/{tenant}/{source}"
	f := func(args []string, check func(c *Config) bool) {
		t.Helper()
		c, err := parseFlags(args, io.Discard)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", args, err)
		}
		if !check(c) {
			t.Fatalf("parseFlags(%q): unexpected config %+v", args, c)
		}
	}
	f([]string{u}, func(c *Config) bool {
		return c.Conns == 64 && c.Rate == 0 && c.Duration == 10*time.Second && c.Requests == 0 &&
			c.Warmup == time.Second && c.Sizes.String() == "1KiB" && c.Kind == "stripe" && c.Sign == "none" &&
			c.Tenants == 1 && c.TenantDist == "uniform" && c.TenantPrefix == "t" &&
			strings.Join(c.Sources, ",") == "demo" && c.Timeout == 10*time.Second && !c.JSON &&
			c.AckedPath == "" && c.MaxErrors == 0 && c.Mode() == "closed"
	})
	f([]string{u, "-c", "8", "-rate", "2000.5", "-n", "100", "-warmup", "0", "-size", "70%1KiB,25%8KiB,5%64KiB",
		"-kind", "mixed", "-sign", "stripe", "-secret", "whsec_x", "-tenants", "1000", "-tenant-dist", "zipf",
		"-tenant-prefix", "acme", "-sources", "a, b,c", "-timeout", "2s", "-json", "-acked", "/tmp/a", "-max-errors", "7"},
		func(c *Config) bool {
			return c.Conns == 8 && c.Rate == 2000.5 && c.Requests == 100 && c.Warmup == 0 &&
				c.Sizes.String() == "70%1KiB,25%8KiB,5%64KiB" && c.Kind == "mixed" && c.Sign == "stripe" &&
				c.Tenants == 1000 && c.TenantDist == "zipf" && c.TenantPrefix == "acme" &&
				strings.Join(c.Sources, ",") == "a,b,c" && c.Timeout == 2*time.Second && c.JSON &&
				c.AckedPath == "/tmp/a" && c.MaxErrors == 7 && c.Mode() == "open"
		})
	f([]string{u, "-sign", "standardwebhooks", "-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, func(c *Config) bool { return c.Sign == "standardwebhooks" })
	f([]string{"-url", "https://example.com/hook", "-d", "2s"}, func(c *Config) bool { return c.tmpl.probeAddr == "example.com:443" })
}

func TestParseFlagsRejects(t *testing.T) {
	const u = "-url=http://127.0.0.1:8080/webhooks/{source}"
	f := func(wantErr string, args ...string) {
		t.Helper()
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("parseFlags(%q): error %v, want one containing %q", args, err, wantErr)
		}
	}
	f("-url is required")
	f("-c 0: need at least one connection", u, "-c", "0")
	f("-rate -5", u, "-rate", "-5")
	f("-d and -n both given", u, "-d", "1s", "-n", "5")
	f("-d 0s", u, "-d", "0")
	f("-warmup -1s", u, "-warmup", "-1s")
	f("-timeout 0s", u, "-timeout", "0")
	f("-spin -1ms", u, "-spin", "-1ms")
	f("-spin 10s: must be 0", u, "-spin", "10s")
	f("-max-errors -1", u, "-max-errors", "-1")
	f(`-size "12": size "12": smaller than 512 bytes`, u, "-size", "12")
	f(`sum to 90, not 100`, u, "-size", "70%1KiB,20%8KiB")
	f(`-kind "slack"`, u, "-kind", "slack")
	f(`-sign "shopify": must be one of none, stripe, github, standardwebhooks`, u, "-sign", "shopify")
	f("-sign stripe needs -secret", u, "-sign", "stripe")
	f("-secret given without -sign", u, "-secret", "s")
	f("whsec_ followed by base64", u, "-sign", "standardwebhooks", "-secret", "whsec_!!!")
	f("-tenants 0", u, "-tenants", "0")
	f(`-tenant-dist "pareto"`, u, "-tenant-dist", "pareto")
	f("-sources: need at least one", u, "-sources", " , ")
	f("unknown placeholder {tenat}", "-url", "http://h/{tenat}")
	f("unclosed '{'", "-url", "http://h/{tenant")
	f(`scheme "ftp"`, "-url", "ftp://h/x")
	f("no host", "-url", "http:///x")
	f(`unexpected argument "extra"`, u, "extra")
	f("flag provided but not defined: -conns", u, "-conns", "3")
	f(`invalid value "fast" for flag -rate`, u, "-rate", "fast")
}

func TestExitCodes(t *testing.T) {
	f := func(want int, wantStderr string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if got := run(args, &stdout, &stderr); got != want || !strings.Contains(stderr.String(), wantStderr) {
			t.Fatalf("run(%q) = %d, stderr %q; want %d and %q", args, got, stderr.String(), want, wantStderr)
		}
	}
	f(exitFlags, "-c 0", "-url", "http://127.0.0.1:1/x", "-c", "0")
	f(exitOK, "Usage of loadgen", "-h")
	f(exitFatal, "cannot connect to", "-url", "http://"+freePort(t)+"/x", "-d", "1s")
}
