package httpsink

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/ankusa/ankusa/dispatch"
)

// The SSRF guard. Unless the sink says allow_private: true, the dial
// function (dial.go) refuses a receiver whose host is one of the names
// below, or is or resolves to an address in one of the ranges below; it
// checks every address the name resolves to and then connects to a
// checked address itself, so a second DNS answer (rebinding) is never
// used.

// blockedNames are host names refused before any DNS lookup: loopback
// names (RFC 6761) and the cloud metadata services' names.
var blockedNames = map[string]string{
	"localhost":                  "a loopback name",
	"metadata":                   "a cloud metadata name",
	"metadata.google.internal":   "a cloud metadata name",
	"metadata.goog":              "a cloud metadata name",
	"instance-data":              "a cloud metadata name",
	"instance-data.ec2.internal": "a cloud metadata name",
}

type blockedRange struct {
	p      netip.Prefix
	reason string
}

// blocked4 are the IPv4 ranges refused; the first match names the
// reason, so 169.254.169.254 comes before the rest of 169.254/16.
var blocked4 = []blockedRange{
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},  // IETF protocol assignments (DS-Lite, Oracle's metadata)
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"}, // benchmarking
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and the broadcast address
}

// blocked6 are the IPv6 ranges refused. IPv4-mapped addresses are
// checked as IPv4; so are the IPv4 addresses inside NAT64, 6to4 and
// IPv4-compatible addresses (embedded4).
var blocked6 = []blockedRange{
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("fc00::/7"), "private"}, // unique local, AWS's metadata fd00:ec2::254 too
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private"}, // local-use NAT64
	{netip.MustParsePrefix("100::/64"), "reserved"},      // discard-only
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	v4compat  = netip.MustParsePrefix("::/96")
)

// blockedReason says why the guard refuses a, or "" when it does not.
func blockedReason(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return match(blocked4, a)
	}
	if r := match(blocked6, a); r != "" {
		return r
	}
	if v4, ok := embedded4(a); ok {
		return match(blocked4, v4)
	}
	return ""
}

func match(ranges []blockedRange, a netip.Addr) string {
	for _, r := range ranges {
		if r.p.Contains(a) {
			return r.reason
		}
	}
	return ""
}

// embedded4 returns the IPv4 address an IPv6 address reaches through a
// translator or tunnel (NAT64, 6to4) or in the deprecated
// IPv4-compatible form.
func embedded4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a), v4compat.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// blockedName says why the guard refuses a host name, or "".
func blockedName(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if r, ok := blockedNames[h]; ok {
		return r
	}
	if strings.HasSuffix(h, ".localhost") {
		return "a loopback name"
	}
	return ""
}

const allowHint = "; set allow_private: true on this sink to allow private targets"

func refuseName(host, reason string) error {
	return &dispatch.Error{Permanent: true, Err: fmt.Errorf("%w: host %q is %s%s", ErrPrivateTarget, host, reason, allowHint)}
}

func refuseLiteral(ip net.IP, reason string) error {
	return &dispatch.Error{Permanent: true, Err: fmt.Errorf("%w: the url's host is %s (%s)%s", ErrPrivateTarget, ip, reason, allowHint)}
}

func refuseResolved(host string, ip net.IP, reason string) error {
	return &dispatch.Error{Permanent: true, Err: fmt.Errorf("%w: host %q resolves to %s (%s)%s", ErrPrivateTarget, host, ip, reason, allowHint)}
}

// checkIPs returns the guard's refusal of the first blocked address of a
// host's addresses, or nil.
func checkIPs(host string, ips []net.IP, literal bool) error {
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return &dispatch.Error{Permanent: true, Err: fmt.Errorf("%w: host %q resolves to a malformed address %v", ErrPrivateTarget, host, []byte(ip))}
		}
		reason := blockedReason(a)
		switch {
		case reason == "":
		case literal:
			return refuseLiteral(ip, reason)
		default:
			return refuseResolved(host, ip, reason)
		}
	}
	return nil
}

// RefusedHost says why the guard refuses a url's host as it is written
// (a blocked name, or an address literal in a blocked range), "" when it
// does not or can tell only after a DNS lookup. check-config holds the
// lifecycle sink's url to it (config.ValidateOptions.RefusedTarget): the
// publisher would retry such an event for ever.
func RefusedHost(host string) string {
	if r := blockedName(host); r != "" {
		return r
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return ""
	}
	if r := blockedReason(a); r != "" {
		return "a " + r + " address"
	}
	return ""
}
