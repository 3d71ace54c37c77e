package verify

import (
	"fmt"
	"net/textproto"
	"strings"

	"github.com/valyala/fastjson"
)

// MaxEventTypeBytes bounds an event type: a longer value is not one (the
// hook has none), so a sender cannot make the node store and deliver an
// arbitrarily large header.
const MaxEventTypeBytes = 256

// eventType reads a hook's event type where a source says: a header's
// value (header:NAME) or a string or number in the JSON body (json:PATH).
type eventType struct {
	header string   // canonical header name, or ""
	path   []string // JSON path segments, or nil
}

// parseEventType parses an event_type spec. Its errors name the key.
func parseEventType(spec string) (*eventType, error) {
	switch {
	case strings.HasPrefix(spec, "header:"):
		name := spec[len("header:"):]
		if name == "" {
			return nil, fmt.Errorf("verify.event_type: %q has an empty header name", spec)
		}
		for i := 0; i < len(name); i++ {
			if !tokenByte(name[i]) {
				return nil, fmt.Errorf("verify.event_type: %q: %q is not a valid header name", spec, name)
			}
		}
		return &eventType{header: textproto.CanonicalMIMEHeaderKey(name)}, nil
	case strings.HasPrefix(spec, "json:"):
		p := spec[len("json:"):]
		if p == "" {
			return nil, fmt.Errorf("verify.event_type: %q has an empty path", spec)
		}
		path := strings.Split(p, ".")
		if len(path) > maxEventTypeDepth {
			return nil, fmt.Errorf("verify.event_type: %q is deeper than %d segments", spec, maxEventTypeDepth)
		}
		for _, seg := range path {
			if seg == "" {
				return nil, fmt.Errorf("verify.event_type: %q has an empty segment in its path (segments are separated by single dots)", spec)
			}
		}
		return &eventType{path: path}, nil
	}
	return nil, fmt.Errorf("verify.event_type: %q must be header:NAME or json:PATH", spec)
}

// maxEventTypeDepth bounds a json: path (a provider's event type is at
// most a few levels down: Zoom's "event", Okta's "data.events.0.eventType").
const maxEventTypeDepth = 16

// AppendEventType appends the hook's event type to dst: the header's value,
// or the value at the JSON path: a string (unescaped) or a number (its
// literal text: Discord's interaction type is 1, 2, ...). A value that is
// absent, empty, longer than MaxEventTypeBytes, of another JSON type, or
// holds a byte outside printable ASCII is no event type (dst comes back
// unchanged): the value is delivered as the x-ankusa-event-type header,
// where a control byte would split the message. A path through an object
// that has one of its keys twice is no event type either, as the
// families refuse it: parsers disagree on which of the two counts.
// Nothing is allocated once the pooled parser states are warm.
func (t *eventType) AppendEventType(dst []byte, h Headers, body []byte) []byte {
	var v []byte
	if t.path == nil {
		v = h.Peek(t.header)
	} else {
		st := getState()
		defer putState(st)
		root := st.json(body)
		if root == nil {
			return dst
		}
		jv := st.walk(root, t.path)
		if jv == nil || st.dup {
			return dst
		}
		switch jv.Type() {
		case fastjson.TypeString:
			v = jv.GetStringBytes()
		case fastjson.TypeNumber:
			// The literal as sent; fastjson keeps it unparsed, and its
			// grammar is printable ASCII.
			st.scratch = jv.MarshalTo(st.scratch[:0])
			v = st.scratch
		default:
			return dst
		}
	}
	if len(v) == 0 || len(v) > MaxEventTypeBytes {
		return dst
	}
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			return dst
		}
	}
	return append(dst, v...)
}

// tokenByte reports whether c may appear in a header name (an RFC 9110
// token).
func tokenByte(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(c))
}
