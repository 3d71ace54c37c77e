package httpsink

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch/tmpl"
	"github.com/ankusa/ankusa/envelope"
)

// urlTemplate is the sink's url: a template over the envelope whose
// expansion is checked before each attempt, so a template field cannot
// move the request to another host (a route parameter holding '@' would
// turn "https://api.example.com{params.x}/" into a url whose host is the
// parameter's).
type urlTemplate struct {
	t *config.Template
	// ats is the number of '@' in the template's authority: an expansion
	// with more has had its userinfo/host split moved by a field.
	ats int
	// static and target are the expansion and Target of a template with
	// no fields, computed once.
	static []byte
	target string
}

func parseURL(s string) (*urlTemplate, error) {
	t, err := config.ParseTemplate(s)
	if err != nil {
		return nil, err
	}
	scheme, auth, ok := splitURL([]byte(s))
	if !ok || !isHTTPScheme(scheme) {
		return nil, fmt.Errorf("%q must start with http:// or https://", s)
	}
	u := &urlTemplate{t: t, ats: bytes.Count(auth, []byte{'@'})}
	if t.Static() {
		u.static = []byte(s)
		if _, err := u.check(u.static); err != nil {
			return nil, err
		}
		u.target = string(u.appendTarget(nil, u.static))
	}
	return u, nil
}

// expand appends the url for e to dst and checks its host.
func (u *urlTemplate) expand(dst []byte, e *envelope.Envelope) ([]byte, error) {
	if u.static != nil {
		return append(dst, u.static...), nil
	}
	dst = tmpl.AppendTo(dst, u.t, e)
	_, err := u.check(dst)
	return dst, err
}

// hostPort is the receiver's address in an expanded url.
type hostPort struct {
	scheme, host, port []byte
	bracket            bool // an IPv6 literal, written in brackets
}

// check parses the authority of an expanded url: [userinfo@]host[:port],
// host being a DNS name, an IPv4 address or a bracketed IPv6 address.
func (u *urlTemplate) check(url []byte) (hostPort, error) {
	scheme, auth, ok := splitURL(url)
	if !ok || !isHTTPScheme(scheme) {
		return hostPort{}, errors.New("the url does not start with http:// or https://")
	}
	if bytes.Count(auth, []byte{'@'}) != u.ats {
		return hostPort{}, errors.New("a template field of the url holds '@' and would change the receiver's host")
	}
	if i := bytes.IndexFunc(url, isCTLOrSpace); i >= 0 {
		return hostPort{}, fmt.Errorf("the url holds the byte %q, which cannot be sent", url[i])
	}
	if i := bytes.LastIndexByte(auth, '@'); i >= 0 {
		if !validUserinfo(auth[:i]) {
			return hostPort{}, errors.New("the url's userinfo holds a byte that must be percent-encoded")
		}
		auth = auth[i+1:]
	}
	hp, err := parseHostPort(auth)
	if err != nil {
		return hostPort{}, err
	}
	hp.scheme = scheme
	return hp, nil
}

func parseHostPort(auth []byte) (hostPort, error) {
	var hp hostPort
	rest := auth
	if len(auth) > 0 && auth[0] == '[' {
		end := bytes.IndexByte(auth, ']')
		if end < 0 {
			return hp, fmt.Errorf("host %q has no closing ']'", auth)
		}
		hp.host, rest, hp.bracket = auth[1:end], auth[end+1:], true
		a, err := netip.ParseAddr(string(hp.host))
		if err != nil || !a.Is6() {
			return hp, fmt.Errorf("host %q is not an IPv6 address", auth)
		}
		if a.Zone() != "" {
			// A zone names an interface of this machine (link-local): no
			// receiver's address, and fasthttp reads its % as an escape.
			return hp, fmt.Errorf("host %q names an IPv6 zone, which a receiver's url cannot use", auth)
		}
	} else {
		hp.host, rest = auth, nil
		if i := bytes.LastIndexByte(auth, ':'); i >= 0 {
			hp.host, rest = auth[:i], auth[i:]
		}
		if !validHostName(hp.host) {
			return hp, fmt.Errorf("host %q is not a valid host name", auth)
		}
	}
	if len(rest) > 0 {
		if rest[0] != ':' || !validPort(rest[1:]) {
			return hp, fmt.Errorf("host %q has an invalid port", auth)
		}
		hp.port = rest[1:]
	}
	return hp, nil
}

// splitURL returns the scheme and the authority of url.
func splitURL(url []byte) (scheme, auth []byte, ok bool) {
	i := bytes.Index(url, []byte("://"))
	if i <= 0 {
		return nil, nil, false
	}
	rest := url[i+3:]
	if end := bytes.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return url[:i], rest, true
}

func isHTTPScheme(s []byte) bool {
	return bytes.EqualFold(s, []byte("http")) || bytes.EqualFold(s, []byte("https"))
}

func isHTTPS(s []byte) bool { return bytes.EqualFold(s, []byte("https")) }

// validHostName accepts the bytes of DNS names and IPv4 addresses;
// anything else (spaces, '%', '\', control bytes) is refused.
func validHostName(h []byte) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, c := range h {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

func isCTLOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// validUserinfo accepts RFC 3986 userinfo (unreserved, sub-delims, ':',
// percent-encoding), as fasthttp does.
func validUserinfo(b []byte) bool {
	for _, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			bytes.IndexByte([]byte("-._~!$&'()*+,;=:%@"), c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

func validPort(p []byte) bool {
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n >= 1 && n <= 65535
}

// appendTarget appends the dispatcher's circuit-breaker key for an
// expanded url: scheme://host:port, lower-case, with the default port
// filled in. An invalid url gives its scheme and authority as they are:
// Deliver refuses it anyway.
func (u *urlTemplate) appendTarget(dst, url []byte) []byte {
	hp, err := u.check(url)
	if err != nil {
		scheme, auth, _ := splitURL(url)
		dst = append(dst, scheme...)
		dst = append(dst, "://"...)
		return append(dst, auth...)
	}
	dst = appendLower(dst, hp.scheme)
	dst = append(dst, "://"...)
	if hp.bracket {
		dst = append(dst, '[')
	}
	dst = appendLower(dst, hp.host)
	if hp.bracket {
		dst = append(dst, ']')
	}
	dst = append(dst, ':')
	switch {
	case hp.port != nil:
		return append(dst, hp.port...)
	case isHTTPS(hp.scheme):
		return append(dst, "443"...)
	}
	return append(dst, "80"...)
}

func appendLower(dst, s []byte) []byte {
	for _, c := range s {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
