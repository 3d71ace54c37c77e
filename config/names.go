package config

import "regexp"

// NameRE is what tenant and source names match: they end up in meta keys,
// S3 keys, Redis keys and file paths.
var NameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidName reports whether b is a valid tenant or source name, without
// allocating (the edge calls it per request).
func ValidName(b []byte) bool {
	if len(b) == 0 || len(b) > 63 {
		return false
	}
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// validSegment reports whether s is a path segment a resolver can match
// literally: no slash, no dot segment, no percent-encoding.
func validSegment(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		if c == '/' || c == '%' || c <= ' ' || c >= 0x7f || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
