package edge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
)

// The PROXY protocol (haproxy.org/download/2.9/doc/proxy-protocol.txt),
// versions 1 (text) and 2 (binary), read strictly: a header that is not
// exactly one of the forms the spec allows is refused, never guessed at.
// A small parser of our own rather than a library: the edge needs only
// the source address, must refuse rather than pass a connection through
// when in doubt, and reads the header from the caller's buffer without
// allocating.

// proxyV2Sig opens every version 2 header.
var proxyV2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")

const (
	proxyV1Max = 107 // the longest version 1 line, CRLF included
	// proxyV2Max bounds a version 2 header: its 16 fixed bytes and what
	// its length field announces (addresses and TLVs). Load balancers send
	// far less; a longer header is refused rather than buffered.
	proxyV2Max = 16 + 1024
)

var (
	errProxyIncomplete = errors.New("PROXY header incomplete")
	errProxyMalformed  = errors.New("malformed PROXY header")
)

// proxyHeader is what a complete PROXY header said: its length in bytes
// and the sender's address, invalid for a LOCAL (v2) or UNKNOWN (v1)
// header, which name no sender (a health check of the balancer itself):
// the peer's address stands for it.
type proxyHeader struct {
	n   int
	src netip.AddrPort
}

// parseProxy reads a PROXY header at the start of b. errProxyIncomplete:
// b is a prefix of a header that may still be valid; errProxyMalformed:
// no bytes that follow can make it one.
func parseProxy(b []byte) (proxyHeader, error) {
	switch {
	case len(b) == 0:
		return proxyHeader{}, errProxyIncomplete
	case b[0] == 'P':
		return parseProxyV1(b)
	case b[0] == '\r':
		return parseProxyV2(b)
	}
	return proxyHeader{}, errProxyMalformed
}

// proxyPrefix reports whether b starts like a PROXY header (either
// version): complete is false while b is too short to tell.
func proxyPrefix(b []byte) (looks, complete bool) {
	for _, sig := range [][]byte{[]byte("PROXY "), proxyV2Sig} {
		n := min(len(b), len(sig))
		if bytes.Equal(b[:n], sig[:n]) {
			return n == len(sig), n == len(sig)
		}
	}
	return false, true
}

// parseProxyV1 reads "PROXY TCP4|TCP6 src dst sport dport\r\n" or
// "PROXY UNKNOWN ...\r\n".
func parseProxyV1(b []byte) (proxyHeader, error) {
	const sig = "PROXY "
	if n := min(len(b), len(sig)); string(b[:n]) != sig[:n] {
		return proxyHeader{}, errProxyMalformed
	}
	end := bytes.Index(b[:min(len(b), proxyV1Max)], []byte("\r\n"))
	if end < 0 {
		// Incomplete while it may still become a line: short enough, and
		// printable up to a last CR.
		if len(b) >= proxyV1Max || !printable(bytes.TrimSuffix(b, []byte("\r"))) {
			return proxyHeader{}, errProxyMalformed
		}
		return proxyHeader{}, errProxyIncomplete
	}
	if !printable(b[:end]) {
		return proxyHeader{}, errProxyMalformed
	}
	f := bytes.Split(b[:end], []byte(" "))
	if len(f) < 2 || string(f[0]) != "PROXY" {
		return proxyHeader{}, errProxyMalformed
	}
	h := proxyHeader{n: end + 2}
	switch string(f[1]) {
	case "UNKNOWN":
		return h, nil
	case "TCP4", "TCP6":
	default:
		return proxyHeader{}, errProxyMalformed
	}
	if len(f) != 6 {
		return proxyHeader{}, errProxyMalformed
	}
	src, ok1 := parseV1Addr(f[2], string(f[1]) == "TCP4")
	_, ok2 := parseV1Addr(f[3], string(f[1]) == "TCP4")
	sport, ok3 := parseV1Port(f[4])
	_, ok4 := parseV1Port(f[5])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return proxyHeader{}, errProxyMalformed
	}
	h.src = netip.AddrPortFrom(src, sport)
	return h, nil
}

// printable reports whether b is printable US-ASCII, all a version 1
// line may hold before its CRLF.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func parseV1Addr(b []byte, v4 bool) (netip.Addr, bool) {
	a, err := netip.ParseAddr(string(b))
	if err != nil || a.Is4() != v4 || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a, true
}

// parseV1Port reads a port in decimal without leading zeros.
func parseV1Port(b []byte) (uint16, bool) {
	if len(b) == 0 || len(b) > 5 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 16)
	return uint16(n), err == nil
}

// parseProxyV2 reads the binary header: the signature, version 2 with
// command LOCAL or PROXY, a family and protocol byte, a length, then the
// addresses (TCP over IPv4 or IPv6 for PROXY) and TLVs, which are skipped.
func parseProxyV2(b []byte) (proxyHeader, error) {
	n := min(len(b), len(proxyV2Sig))
	if !bytes.Equal(b[:n], proxyV2Sig[:n]) {
		return proxyHeader{}, errProxyMalformed
	}
	if len(b) < 16 {
		if len(b) > 12 && b[12]&0xf0 != 0x20 {
			return proxyHeader{}, errProxyMalformed
		}
		return proxyHeader{}, errProxyIncomplete
	}
	ver, fam := b[12], b[13]
	size := 16 + int(binary.BigEndian.Uint16(b[14:]))
	if ver != 0x20 && ver != 0x21 || size > proxyV2Max {
		return proxyHeader{}, errProxyMalformed
	}
	addrLen := v2AddrLen(fam)
	if ver == 0x21 && addrLen < 0 || size-16 < addrLen {
		return proxyHeader{}, errProxyMalformed
	}
	if len(b) < size {
		return proxyHeader{}, errProxyIncomplete
	}
	h := proxyHeader{n: size}
	if ver == 0x20 || fam == 0x00 {
		return h, nil // LOCAL, or UNSPEC: no sender named
	}
	a := b[16:size]
	if fam == 0x11 {
		h.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[0:4])), binary.BigEndian.Uint16(a[8:]))
	} else {
		h.src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[0:16])), binary.BigEndian.Uint16(a[32:]))
	}
	return h, nil
}

// v2AddrLen is the address block's length for a family and protocol byte:
// TCP over IPv4 or IPv6, or none for UNSPEC; -1 for what the edge does
// not take (UDP, unix sockets, anything else).
func v2AddrLen(fam byte) int {
	switch fam {
	case 0x00:
		return 0
	case 0x11:
		return 12
	case 0x21:
		return 36
	}
	return -1
}
