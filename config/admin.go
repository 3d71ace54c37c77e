package config

import (
	"fmt"
	"net"
	"time"
)

// Bounds of the admin listener's keys.
const (
	// MaxAdminBodyBytes: an admin request body is a spec, not a hook.
	MaxAdminBodyBytes = 64 << 20
	// MaxAdminConnections keeps the cap a cap.
	MaxAdminConnections = 65536
)

// validateAdmin checks the admin listener's bounds (admin.*); the address
// and the tokens' form are validateNode's.
func validateAdmin(p *Problems, a Admin) {
	for _, d := range []struct {
		key string
		v   Duration
		min time.Duration
	}{
		{"admin.read_timeout", a.ReadTimeout, 100 * time.Millisecond},
		{"admin.read_header_timeout", a.ReadHeaderTimeout, 100 * time.Millisecond},
		{"admin.write_timeout", a.WriteTimeout, time.Second},
		{"admin.idle_timeout", a.IdleTimeout, 100 * time.Millisecond},
	} {
		if d.v.D() < d.min || d.v.D() > 24*time.Hour {
			p.add("%s: %s must be between %s and 24h", d.key, d.v.D(), d.min)
		}
	}
	if a.ReadHeaderTimeout > a.ReadTimeout {
		p.add("admin.read_header_timeout: %s must not exceed admin.read_timeout (%s), which covers the header too", a.ReadHeaderTimeout.D(), a.ReadTimeout.D())
	}
	if a.MaxConnections < 1 || a.MaxConnections > MaxAdminConnections {
		p.add("admin.max_connections: %d must be between 1 and %d", a.MaxConnections, MaxAdminConnections)
	}
	if a.MaxBodyBytes < 1024 || a.MaxBodyBytes > MaxAdminBodyBytes {
		p.add("admin.max_body_bytes: %d must be between 1KiB and 64MiB", a.MaxBodyBytes)
	}
}

// Warnings returns what is allowed but likely a mistake in a valid,
// defaulted configuration, one line each, naming the key. check-config
// prints them and serve logs them; neither refuses to run.
func Warnings(c *Config) []string {
	var w []string
	if host, _, err := net.SplitHostPort(c.Admin.Listen); err == nil && !loopbackHost(host) {
		w = append(w, fmt.Sprintf("admin.listen: %q is not a loopback address: the admin API, /metrics and the health checks answer whoever reaches it (only the bearer tokens guard /v1 and /debug/pprof); put it on 127.0.0.1 or ::1 behind a proxy, or firewall it", c.Admin.Listen))
	}
	return w
}

// loopbackHost reports whether host (of host:port) names only the
// loopback interface: localhost, or a loopback IP. "" and 0.0.0.0 listen
// on every interface.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
