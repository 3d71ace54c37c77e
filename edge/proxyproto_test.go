package edge

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// proxyV2 builds a version 2 header: ver/cmd, family, address block and
// TLV bytes.
func proxyV2(verCmd, fam byte, addrs []byte, tlv []byte) []byte {
	b := append([]byte(nil), proxyV2Sig...)
	b = append(b, verCmd, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(len(addrs)+len(tlv)))
	b = append(b, addrs...)
	return append(b, tlv...)
}

func v2TCP4(src string, sport uint16) []byte {
	a := netip.MustParseAddr(src).As4()
	b := append(a[:], 10, 0, 0, 1)
	b = binary.BigEndian.AppendUint16(b, sport)
	return binary.BigEndian.AppendUint16(b, 443)
}

func v2TCP6(src string, sport uint16) []byte {
	a := netip.MustParseAddr(src).As16()
	d := netip.MustParseAddr("2001:db8::2").As16()
	b := append(a[:], d[:]...)
	b = binary.BigEndian.AppendUint16(b, sport)
	return binary.BigEndian.AppendUint16(b, 443)
}

// validProxyHeaders are well-formed headers and the sender each names
// ("" for none).
var validProxyHeaders = []struct {
	name, hdr, src string
}{
	{"v1 tcp4", "PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\n", "203.0.113.7:51234"},
	{"v1 tcp6", "PROXY TCP6 2001:db8::1 2001:db8::2 65535 443\r\n", "[2001:db8::1]:65535"},
	{"v1 unknown", "PROXY UNKNOWN\r\n", ""},
	{"v1 unknown with addresses", "PROXY UNKNOWN ffff:f::1 ffff:f::2 1 2\r\n", ""},
	{"v1 port 0", "PROXY TCP4 1.2.3.4 5.6.7.8 0 80\r\n", "1.2.3.4:0"},
	{"v2 tcp4", string(proxyV2(0x21, 0x11, v2TCP4("198.51.100.9", 40000), nil)), "198.51.100.9:40000"},
	{"v2 tcp6", string(proxyV2(0x21, 0x21, v2TCP6("2001:db8::9", 1), nil)), "[2001:db8::9]:1"},
	{"v2 tcp4 with TLVs", string(proxyV2(0x21, 0x11, v2TCP4("192.0.2.1", 7), []byte{0x04, 0, 3, 'a', 'b', 'c'})), "192.0.2.1:7"},
	{"v2 local", string(proxyV2(0x20, 0x00, nil, nil)), ""},
	{"v2 local with addresses", string(proxyV2(0x20, 0x11, v2TCP4("192.0.2.1", 7), nil)), ""},
	{"v2 unspec", string(proxyV2(0x21, 0x00, nil, nil)), ""},
}

// TestParseProxy: every valid header is read whole, naming its sender,
// with what follows left alone; every proper prefix of one is incomplete.
func TestParseProxy(t *testing.T) {
	for _, tc := range validProxyHeaders {
		b := []byte(tc.hdr + "POST / HTTP/1.1\r\n")
		h, err := parseProxy(b)
		if err != nil || h.n != len(tc.hdr) {
			t.Errorf("%s: parseProxy = %+v, %v; want %d bytes", tc.name, h, err, len(tc.hdr))
			continue
		}
		if got := addrString(h.src); got != tc.src {
			t.Errorf("%s: sender %q, want %q", tc.name, got, tc.src)
		}
		for n := range len(tc.hdr) {
			if _, err := parseProxy([]byte(tc.hdr[:n])); !errors.Is(err, errProxyIncomplete) {
				t.Errorf("%s: the first %d bytes: %v, want incomplete", tc.name, n, err)
			}
		}
	}
}

func addrString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// malformedProxyHeaders are refused whatever follows them.
var malformedProxyHeaders = []struct{ name, hdr string }{
	{"http request", "POST /webhooks/demo HTTP/1.1\r\n"},
	{"lower case", "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n"},
	{"v1 no family", "PROXY \r\n"},
	{"v1 bad family", "PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"},
	{"v1 tcp4 with ipv6", "PROXY TCP4 2001:db8::1 2001:db8::2 1 2\r\n"},
	{"v1 tcp6 with ipv4", "PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n"},
	{"v1 missing port", "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"},
	{"v1 extra field", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n"},
	{"v1 double space", "PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n"},
	{"v1 leading zero port", "PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n"},
	{"v1 port too big", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"},
	{"v1 signed port", "PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n"},
	{"v1 bad address", "PROXY TCP4 1.2.3.400 5.6.7.8 1 2\r\n"},
	{"v1 zoned address", "PROXY TCP6 fe80::1%eth0 fe80::2 1 2\r\n"},
	{"v1 bare LF", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"},
	{"v1 CR before CRLF", "PROXY UNKNOWN \r\r\n"},
	{"v1 control byte", "PROXY UNKNOWN \x01\r\n"},
	{"v1 non-ASCII", "PROXY UNKNOWN caf\xe9\r\n"},
	{"v1 CR inside", "PROXY TCP4 1.2.3.4\r5.6.7.8 1 2\r\n"},
	{"v1 too long", "PROXY UNKNOWN " + strings.Repeat("x", proxyV1Max) + "\r\n"},
	{"v2 bad signature", "\r\n\r\n\x00\r\nQUIT\r"},
	{"v2 version 1", string(proxyV2(0x11, 0x11, v2TCP4("1.2.3.4", 1), nil))},
	{"v2 bad command", string(proxyV2(0x22, 0x11, v2TCP4("1.2.3.4", 1), nil))},
	{"v2 udp", string(proxyV2(0x21, 0x12, v2TCP4("1.2.3.4", 1), nil))},
	{"v2 unix", string(proxyV2(0x21, 0x31, make([]byte, 216), nil))},
	{"v2 short addresses", string(proxyV2(0x21, 0x11, v2TCP4("1.2.3.4", 1)[:8], nil))},
	{"v2 too long", string(proxyV2(0x21, 0x11, v2TCP4("1.2.3.4", 1), make([]byte, proxyV2Max)))},
}

func TestParseProxyMalformed(t *testing.T) {
	for _, tc := range malformedProxyHeaders {
		if h, err := parseProxy([]byte(tc.hdr)); !errors.Is(err, errProxyMalformed) {
			t.Errorf("%s: parseProxy(%q) = %+v, %v; want malformed", tc.name, tc.hdr, h, err)
		}
	}
}

// TestProxyPrefix: only a whole signature is a PROXY header; a prefix of
// one is undecided; an HTTP request is decided at once.
func TestProxyPrefix(t *testing.T) {
	for _, tc := range []struct {
		in              string
		looks, complete bool
	}{
		{"", false, false},
		{"PROX", false, false},
		{"PROXY ", true, true},
		{"PROPFIND / HTTP/1.1", false, true},
		{"POST / HTTP/1.1", false, true},
		{"\r\n\r\n", false, false},
		{string(proxyV2Sig), true, true},
		{"\r\n\r\nX", false, true},
	} {
		looks, complete := proxyPrefix([]byte(tc.in))
		if looks != tc.looks || complete != tc.complete {
			t.Errorf("proxyPrefix(%q) = %v, %v; want %v, %v", tc.in, looks, complete, tc.looks, tc.complete)
		}
	}
}

// FuzzParseProxy: whatever the bytes, parseProxy does not panic, and a
// header it accepts lies within them, parses the same alone, and is
// incomplete (never accepted, never malformed) when cut short.
func FuzzParseProxy(f *testing.F) {
	for _, tc := range validProxyHeaders {
		f.Add([]byte(tc.hdr))
	}
	for _, tc := range malformedProxyHeaders {
		f.Add([]byte(tc.hdr))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseProxy(b)
		if err != nil {
			if !errors.Is(err, errProxyMalformed) && !errors.Is(err, errProxyIncomplete) {
				t.Fatalf("parseProxy(%q): unexpected error %v", b, err)
			}
			return
		}
		if h.n <= 0 || h.n > len(b) {
			t.Fatalf("parseProxy(%q) read %d bytes", b, h.n)
		}
		again, err := parseProxy(b[:h.n])
		if err != nil || again != h {
			t.Fatalf("parseProxy(%q) = %+v, alone %+v, %v", b, h, again, err)
		}
		if _, err := parseProxy(b[:h.n-1]); !errors.Is(err, errProxyIncomplete) {
			t.Fatalf("parseProxy(%q) cut by one byte: %v, want incomplete", b[:h.n-1], err)
		}
	})
}
