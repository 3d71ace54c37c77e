package verify

import (
	"fmt"
	"hash/crc32"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fastjson"
)

// Limits on what a preset (or a generic hmac section) may ask of a
// request, so that the work per request is bounded by the configuration,
// never by the sender.
const (
	// maxTmplParts caps a signed-content template's parts ({url} without
	// verify.url counts three: scheme, host, request URI).
	maxTmplParts = 24
	// maxSigs caps the public-key signatures of one header that are
	// checked (each an Ed25519 verification). HMAC signatures are not
	// capped: each costs a decode and a compare against MACs computed
	// once per key, and the header's size bounds them.
	maxSigs = 16
)

// part is literal text or a placeholder of a signed-content template.
type part struct {
	kind byte // 'l' literal, 'b' body, 't' timestamp, 'i' id, 'u' url, 'm' method, 'h' header, 'j' json, 'w' webhook id, 'c' crc32
	lit  []byte
	name string   // header name ('h')
	path []string // JSON path ('j')
}

// parseTemplate splits a template into parts; field names the key in
// errors.
func parseTemplate(field, s string) ([]part, error) {
	var out []part
	for rest := s; len(rest) > 0; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			out = append(out, part{kind: 'l', lit: []byte(rest)})
			break
		}
		if i > 0 {
			out = append(out, part{kind: 'l', lit: []byte(rest[:i])})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%s: %q: unterminated placeholder", field, s)
		}
		ph := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		switch {
		case ph == "body":
			out = append(out, part{kind: 'b'})
		case ph == "timestamp":
			out = append(out, part{kind: 't'})
		case ph == "id":
			out = append(out, part{kind: 'i'})
		case ph == "url":
			out = append(out, part{kind: 'u'})
		case ph == "method":
			out = append(out, part{kind: 'm'})
		case ph == "webhook_id":
			out = append(out, part{kind: 'w'})
		case ph == "crc32":
			out = append(out, part{kind: 'c'})
		case strings.HasPrefix(ph, "header:"):
			src, err := parseSource(field, ph)
			if err != nil {
				return nil, err
			}
			out = append(out, part{kind: 'h', name: src.header})
		case strings.HasPrefix(ph, "json:"):
			src, err := parseSource(field, ph)
			if err != nil {
				return nil, err
			}
			out = append(out, part{kind: 'j', path: src.path})
		default:
			return nil, fmt.Errorf("%s: %q: unknown placeholder {%s} (known: {body} {timestamp} {id} {url} {method} {webhook_id} {crc32} {header:NAME} {json:PATH})", field, s, ph)
		}
	}
	if len(out) == 0 {
		out = []part{{kind: 'b'}}
	}
	n := 0
	for _, p := range out {
		n++
		if p.kind == 'u' {
			n += 2
		}
	}
	if n > maxTmplParts {
		return nil, fmt.Errorf("%s: %q has too many parts (at most %d)", field, s, maxTmplParts)
	}
	return out, nil
}

// hasKind reports whether a template uses a placeholder.
func hasKind(parts []part, k byte) bool {
	for _, p := range parts {
		if p.kind == k {
			return true
		}
	}
	return false
}

// source is where a value is: a header or a JSON path into the body.
type source struct {
	header string
	path   []string
}

func (s source) isSet() bool  { return s.header != "" || s.path != nil }
func (s source) isJSON() bool { return s.path != nil }

// parseSource parses header:NAME or json:PATH.
func parseSource(field, s string) (source, error) {
	switch {
	case strings.HasPrefix(s, "header:"):
		name := s[len("header:"):]
		if name == "" || strings.ContainsAny(name, " :{}\t") {
			return source{}, fmt.Errorf("%s: %q is not a header name", field, s)
		}
		return source{header: textproto.CanonicalMIMEHeaderKey(name)}, nil
	case strings.HasPrefix(s, "json:"):
		p := s[len("json:"):]
		path := strings.Split(p, ".")
		for _, seg := range path {
			if seg == "" {
				return source{}, fmt.Errorf("%s: %q has an empty path segment", field, s)
			}
		}
		return source{path: path}, nil
	}
	return source{}, fmt.Errorf("%s: %q must be header:NAME or json:PATH", field, s)
}

// reqState is one request's view of what templates read: the parsed JSON
// body (parsed once, only when something needs it) and room for numbers'
// text. Pooled, so that reading the body allocates nothing once warm.
type reqState struct {
	p       fastjson.Parser
	root    *fastjson.Value
	parsed  bool
	jsonErr bool
	dup     bool // a path met a duplicate key (walk)
	scratch []byte
}

var reqStates = sync.Pool{New: func() any { return &reqState{scratch: make([]byte, 0, 256)} }}

func getState() *reqState {
	st := reqStates.Get().(*reqState)
	st.root, st.parsed, st.jsonErr, st.dup, st.scratch = nil, false, false, false, st.scratch[:0]
	return st
}

func putState(st *reqState) {
	st.root = nil
	reqStates.Put(st)
}

// json returns the parsed body, or nil when it is not JSON.
func (st *reqState) json(body []byte) *fastjson.Value {
	if !st.parsed {
		st.parsed = true
		v, err := st.p.ParseBytes(body)
		if err != nil {
			st.jsonErr = true
		} else {
			st.root = v
		}
	}
	return st.root
}

// lookup reads a source's value; ok is false when it is absent (or null).
// A JSON string's value is its unescaped text, a number's its literal
// text, true and false their text; objects and arrays are absent.
func (st *reqState) lookup(src source, h Headers, body []byte) ([]byte, bool) {
	if !src.isJSON() {
		v := h.Peek(src.header)
		return v, len(v) > 0
	}
	root := st.json(body)
	if root == nil {
		return nil, false
	}
	v := st.walk(root, src.path)
	if v == nil {
		return nil, false
	}
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return b, true
	case fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
		start := len(st.scratch)
		st.scratch = v.MarshalTo(st.scratch)
		return st.scratch[start:len(st.scratch):len(st.scratch)], true
	}
	return nil, false
}

// walk follows a dotted path (a decimal segment indexes an array). An
// object that has a segment's key more than once is a parser
// differential, not a value: this parser reads the first, others the
// last, so a signed first value could vouch for an unsigned last one. It
// answers nil and marks the request (dup), which the families refuse.
func (st *reqState) walk(v *fastjson.Value, path []string) *fastjson.Value {
	for _, seg := range path {
		switch v.Type() {
		case fastjson.TypeObject:
			o, _ := v.Object()
			var next *fastjson.Value
			n := 0
			o.Visit(func(k []byte, val *fastjson.Value) {
				if string(k) == seg {
					if n == 0 {
						next = val
					}
					n++
				}
			})
			if n > 1 {
				st.dup = true
				return nil
			}
			v = next
		case fastjson.TypeArray:
			a, _ := v.Array()
			i, ok := parseDigits([]byte(seg), 6)
			if !ok || int(i) >= len(a) {
				return nil
			}
			v = a[i]
		default:
			return nil
		}
		if v == nil {
			return nil
		}
	}
	return v
}

var (
	httpsScheme = []byte("https://")
)

// reqFields is what one request gives a template beyond its body.
type reqFields struct {
	ts, id []byte
	url    []byte // the configured verify.url, or nil
	wid    []byte // the configured verify.webhook_id, or nil
}

// fill resolves a template into dst; ok false: a {url} or {method} on
// headers that are not a Request (ErrMissing).
func fill(dst *[maxTmplParts][]byte, parts []part, st *reqState, f *reqFields, h Headers, body []byte) ([][]byte, bool) {
	n := 0
	for _, p := range parts {
		switch p.kind {
		case 'l':
			dst[n] = p.lit
		case 'b':
			dst[n] = body
		case 't':
			dst[n] = f.ts
		case 'i':
			dst[n] = f.id
		case 'w':
			dst[n] = f.wid
		case 'c':
			// The decimal CRC32 (IEEE) of the body, PayPal's: written
			// into the request's scratch, so it allocates nothing.
			start := len(st.scratch)
			st.scratch = strconv.AppendUint(st.scratch, uint64(crc32.ChecksumIEEE(body)), 10)
			dst[n] = st.scratch[start:len(st.scratch):len(st.scratch)]
		case 'h':
			dst[n] = h.Peek(p.name)
		case 'j':
			v, _ := st.lookup(source{path: p.path}, h, body)
			dst[n] = v
		case 'm':
			r, ok := h.(Request)
			if !ok {
				return nil, false
			}
			dst[n] = r.Method()
		case 'u':
			if f.url != nil {
				dst[n] = f.url
				break
			}
			r, ok := h.(Request)
			if !ok {
				return nil, false
			}
			dst[n] = httpsScheme
			dst[n+1] = r.Host()
			dst[n+2] = r.RequestURI()
			n += 2
		}
		n++
	}
	return dst[:n], true
}

// tsSpec is a scheme's signed timestamp: where, in what unit, how old.
type tsSpec struct {
	src   source
	list  bool // in the signature header's list
	unit  string
	check bool
	tol   time.Duration
}

// parseTS reads a timestamp in its unit; ok false: malformed.
func (t *tsSpec) parse(b []byte) (time.Time, bool) {
	switch t.unit {
	case "ms":
		n, ok := parseDigits(b, 15)
		return time.UnixMilli(n), ok
	case "rfc3339":
		if len(b) > 40 {
			return time.Time{}, false
		}
		tm, err := time.Parse(time.RFC3339, string(b))
		return tm, err == nil
	default:
		n, ok := parseUnix(b)
		return time.Unix(n, 0), ok
	}
}

// within reports whether tm is within the tolerance of now, both ways.
func (t *tsSpec) within(tm, now time.Time) bool {
	if !t.check {
		return true
	}
	// In milliseconds, not a time.Duration: now.Sub saturates past 292
	// years, and the negated minimum stays negative, which would take a
	// timestamp centuries away for one within the tolerance.
	d := now.UnixMilli() - tm.UnixMilli()
	if d < 0 {
		d = -d
	}
	// Whole seconds: a timestamp in seconds at the edge of the
	// tolerance is accepted.
	return d/1000 <= int64(t.tol/time.Second)
}

// newTSSpec builds a preset's timestamp; tol is verify.tolerance when set
// (zero otherwise).
func newTSSpec(p *Timestamp, tol time.Duration) (*tsSpec, error) {
	if p == nil {
		return nil, nil
	}
	t := &tsSpec{unit: p.Unit, check: true}
	switch p.Unit {
	case "", "s", "ms", "rfc3339":
	default:
		return nil, fmt.Errorf("timestamp.unit: %q must be s, ms or rfc3339", p.Unit)
	}
	if p.From == "list" {
		t.list = true
	} else {
		src, err := parseSource("timestamp.from", p.From)
		if err != nil {
			return nil, err
		}
		t.src = src
	}
	switch p.Tolerance {
	case "":
		t.tol = DefaultTolerance
	case "none":
		t.check = false
	default:
		d, err := time.ParseDuration(p.Tolerance)
		if err != nil || d < time.Second {
			return nil, fmt.Errorf("timestamp.tolerance: %q must be a duration of a second or more, or none", p.Tolerance)
		}
		t.tol = d
	}
	if tol != 0 {
		t.tol, t.check = tol, true
	}
	return t, nil
}

// parseDigits parses at most max decimal digits without allocating.
func parseDigits(b []byte, max int) (int64, bool) {
	if len(b) == 0 || len(b) > max {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
