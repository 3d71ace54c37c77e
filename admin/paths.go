package admin

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ankusa/ankusa/config"
)

// What a path may hold. Every name in an admin path (a tenant, a source, a
// sink, a route id) matches config.NameRE, and an event id is "evt_" and
// Crockford base32: none ever needs a percent-encoded byte, an empty
// segment or a dot segment. A path that holds one is refused with 400
// before it reaches the mux, which would otherwise decode %2F into a
// segment or redirect a dot segment to the path it names (possibly
// another tenant's); a value outside its grammar is refused with 400 by
// the guard, before any scope is looked at, so no scope check ever sees a
// name that is not one.

// eventIDWildcard is the one wildcard whose value is an event id rather
// than a name: event ids are upper case (their text form is
// envelope.ID.AppendText's), names are lower case.
const eventIDWildcard = "event_id"

// checkPathValues returns a message naming the first wildcard of r's
// pattern whose value is outside its grammar, or "" when all are inside.
func checkPathValues(r *http.Request) string {
	pattern := r.Pattern
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = pattern[i+1:]
	}
	for seg := range strings.SplitSeq(pattern, "/") {
		if len(seg) < 2 || seg[0] != '{' || seg[len(seg)-1] != '}' {
			continue
		}
		name := strings.TrimSuffix(seg[1:len(seg)-1], "...")
		v := r.PathValue(name)
		if name == claimRefWildcard {
			if !claimRefText(v) {
				return fmt.Sprintf("%s: a claim reference is base64url without padding, at most %d characters", name, maxClaimRef)
			}
			continue
		}
		if name == eventIDWildcard {
			if !eventIDText(v) {
				return fmt.Sprintf("%s: %q is not an event id (evt_ and 26 letters and digits)", name, v)
			}
			continue
		}
		if !config.ValidName([]byte(v)) {
			return fmt.Sprintf("%s: %q is not a name (names match %s: lower case, at most 63 characters)", name, v, config.NameRE)
		}
	}
	return ""
}

// eventIDText reports whether s is in the grammar of an id: a name's, in
// either case and with _ (an event id is "evt_" and upper-case Crockford
// base32). Whether it parses is the handler's question: one that does not
// is the one 404 of an unknown hook.
func eventIDText(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, c := range []byte(s) {
		alnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alnum && (i == 0 || c != '_' && c != '-' && c != '.') {
			return false
		}
	}
	return true
}

// rawPathProblem says what makes a request path unfit for the admin
// listener, reading it as sent (r.URL.EscapedPath): a percent-encoded
// byte, a backslash, an empty segment or a dot segment; "" when there is
// none.
func rawPathProblem(r *http.Request) string {
	p := r.URL.EscapedPath()
	switch {
	case !strings.HasPrefix(p, "/"):
		return "the path must begin with /"
	case strings.ContainsAny(p, "%\\"):
		return "the path holds a percent-encoded byte or a backslash; no admin path needs one (names match " + config.NameRE.String() + ")"
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		switch {
		case seg == "." || seg == "..":
			return "the path holds a dot segment (. or ..); name the resource directly"
		case seg == "" && i < len(segs)-1:
			return "the path holds an empty segment (//)"
		}
	}
	return ""
}
