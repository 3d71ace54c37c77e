package dedupe

import (
	"encoding/json"
	"fmt"
	"net/textproto"
	"strings"

	"github.com/valyala/fastjson"
)

// MaxKeyBytes is the longest dedupe key: a longer value is not a key (the
// hook goes through undeduplicated), so a sender cannot make the node
// hash and store arbitrarily large keys.
const MaxKeyBytes = 512

// Headers is what extraction reads of a request; *fasthttp.RequestHeader
// satisfies it.
type Headers interface{ Peek(key string) []byte }

// autoKeys is the key spec `auto` stands for, by verifier type: the id each
// scheme gives a delivery, the same on every retry of it.
var autoKeys = map[string]string{
	"standardwebhooks": "header:webhook-id",
	"github":           "header:X-GitHub-Delivery",
	"shopify":          "header:X-Shopify-Webhook-Id",
	"stripe":           "json:id",
}

const autoTypes = "stripe, github, shopify, standardwebhooks"

// Extractor reads a hook's dedupe key as one source's `dedupe.key` says.
// It is built once per source and is safe for concurrent use.
type Extractor struct {
	spec   string   // as resolved: header:NAME or json:PATH
	header string   // canonical header name, or ""
	path   []string // JSON path segments, or nil
}

// jsonParsers are shared by every Extractor: a parser keeps the buffers of
// the largest body it parsed, and one pool reuses them across sources.
var jsonParsers fastjson.ParserPool

// NewExtractor parses a key spec for a source whose verifier type is
// verifierType. The spec is `header:NAME` (the header's value),
// `json:PATH` (a dotted path into the JSON body, e.g. `id`,
// `data.object.id` or `items.0.id`: a segment that is a decimal number
// indexes an array) or `auto` (the verifier's own delivery id: stripe's
// json:id, github's X-GitHub-Delivery, shopify's X-Shopify-Webhook-Id,
// standardwebhooks' webhook-id). Errors name the problem for an operator.
//
// The binary resolves auto through the verifier catalogue instead
// (NewExtractorAuto): this table is the one a build without it knows.
func NewExtractor(spec, verifierType string) (*Extractor, error) {
	return NewExtractorAuto(spec, verifierType, func(t string) (string, bool) {
		r, ok := autoKeys[t]
		return r, ok
	}, strings.Split(autoTypes, ", "))
}

// NewExtractorAuto is NewExtractor with `auto` resolved by auto: the key
// spec (header:NAME or json:PATH) a verifier type's scheme carries, ok
// false when it carries none; autoTypes lists the types that do, for the
// error. The verifier catalogue (verify.AutoDedupeKey) is the binary's, so
// that this package does not depend on it.
func NewExtractorAuto(spec, verifierType string, auto func(verifierType string) (string, bool), autoTypes []string) (*Extractor, error) {
	s := spec
	if s == "auto" {
		r, ok := auto(verifierType)
		if !ok {
			return nil, fmt.Errorf("dedupe.key: auto needs a verifier that carries its own id (%s); this source's is %q", strings.Join(autoTypes, ", "), verifierType)
		}
		s = r
	}
	switch {
	case strings.HasPrefix(s, "header:"):
		name := s[len("header:"):]
		if name == "" {
			return nil, fmt.Errorf("dedupe.key: %q has an empty header name", spec)
		}
		for i := 0; i < len(name); i++ {
			if !isTokenByte(name[i]) {
				return nil, fmt.Errorf("dedupe.key: %q: %q is not a valid header name", spec, name)
			}
		}
		return &Extractor{spec: s, header: textproto.CanonicalMIMEHeaderKey(name)}, nil
	case strings.HasPrefix(s, "json:"):
		p := s[len("json:"):]
		if p == "" {
			return nil, fmt.Errorf("dedupe.key: %q has an empty path", spec)
		}
		path := strings.Split(p, ".")
		for _, seg := range path {
			if seg == "" {
				return nil, fmt.Errorf("dedupe.key: %q has an empty segment in its path (segments are separated by single dots)", spec)
			}
		}
		return &Extractor{spec: s, path: path}, nil
	}
	return nil, fmt.Errorf("dedupe.key: %q must be header:NAME, json:PATH or auto", spec)
}

// String is the spec the Extractor reads, with auto resolved, e.g.
// "header:X-GitHub-Delivery" or "json:id".
func (x *Extractor) String() string { return x.spec }

// Key appends the hook's dedupe key to dst; ok is false when the hook
// carries none (header absent or empty, body not JSON, path absent, value
// null or empty), and then key is dst unchanged.
//
// A header's key is its value as received. A JSON string's key is its
// unescaped text; a number's is its literal text (`1e3` and `1000` are
// different keys); true and false are their text. Objects and arrays are
// not keys, and neither is anything longer than MaxKeyBytes.
//
// The header path allocates nothing when dst has room. The JSON path
// parses the whole body (it must be valid JSON) with a pooled parser.
func (x *Extractor) Key(dst []byte, h Headers, body []byte) (key []byte, ok bool) {
	if x.path == nil {
		v := h.Peek(x.header)
		if len(v) == 0 || len(v) > MaxKeyBytes {
			return dst, false
		}
		return append(dst, v...), true
	}
	p := jsonParsers.Get()
	defer jsonParsers.Put(p)
	// Parse first: the parser refuses nesting deeper than
	// fastjson.MaxDepth, while Validate has no bound and recurses once a
	// level (1 MiB of "[" overflows the stack and kills the process). The
	// parser is lenient (NaN, 1.2.3, bad escapes, control characters):
	// check what it accepted with encoding/json's strict scanner (no
	// recursion; fastjson's own Validate let a raw NUL in a string
	// through, FuzzExtractJSON found), so that only JSON gives a key.
	root, err := p.ParseBytes(body)
	if err != nil || !json.Valid(body) {
		return dst, false
	}
	v := root.Get(x.path...)
	if v == nil {
		return dst, false
	}
	n := len(dst)
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		if len(s) == 0 || len(s) > MaxKeyBytes {
			return dst, false
		}
		// s points into the parser: copy it out before the parser goes back.
		return append(dst, s...), true
	case fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
		key = v.MarshalTo(dst)
		if len(key)-n > MaxKeyBytes {
			return dst, false
		}
		return key, true
	}
	return dst, false // null, object, array
}

// isTokenByte reports whether c may appear in a header name (RFC 9110
// token).
func isTokenByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
