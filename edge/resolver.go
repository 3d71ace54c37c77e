package edge

import (
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/source"
)

// MaxParams bounds the route parameters of a request (the route guard's
// and the resolver's together).
const MaxParams = config.MaxRouteParams

// Params are a route's parameters, held inline so that resolving allocates
// nothing.
type Params struct {
	n  int
	kv [MaxParams][2]string
}

// Set adds a parameter; past MaxParams it reports false.
func (p *Params) Set(key, value string) bool {
	if p.n == MaxParams {
		return false
	}
	p.kv[p.n] = [2]string{key, value}
	p.n++
	return true
}

// Get returns a parameter's value.
func (p *Params) Get(key string) (string, bool) {
	for i := 0; i < p.n; i++ {
		if p.kv[i][0] == key {
			return p.kv[i][1], true
		}
	}
	return "", false
}

// Len is the number of parameters.
func (p *Params) Len() int { return p.n }

// At returns parameter i.
func (p *Params) At(i int) (key, value string) { return p.kv[i][0], p.kv[i][1] }

// Route is the resolved identity of a request. Its strings are views into
// the request header, valid only while the request is being handled: copy
// what you keep.
type Route struct {
	SourceID string
	TenantID string // empty: the source decides
	Params   Params
}

// Resolver maps a request to a route. Resolve is URL-scheme work only: a pure
// function of the request line and headers (no body, no I/O, no allocation),
// so the edge can run it in fasthttp's HeaderReceived hook and answer 404 or
// 413 before any body byte is read. Resolvers parse the raw request URI and
// must answer false to dot segments, encoded slashes and empty segments.
//
// snap is the snapshot of sources and routes the router serves this
// request from, loaded once per request: a resolver may read it (the token
// resolver looks its token up in it) but must not keep it past the call,
// and gets the same view the source lookup that follows sees. It is never
// nil. A resolver must be safe for concurrent use.
type Resolver interface {
	Resolve(h *fasthttp.RequestHeader, snap *source.Snapshot) (Route, bool)
}

// Snapshot is the view of sources and routes a Resolver is handed: the
// source store's snapshot, named here so that a program implementing its
// own resolver needs nothing but edge (and config) to do so.
type Snapshot = source.Snapshot

// ResolverFactory builds a resolver from the route_resolver config section.
type ResolverFactory func(cfg config.RouteResolver) (Resolver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]ResolverFactory{}
)

// RegisterResolver makes a resolver available to route_resolver.type by
// name. A program that wants its own URL scheme calls it from init or main
// before the appliance starts (see examples/). Registering a name twice
// panics.
func RegisterResolver(name string, f ResolverFactory) {
	if name == "" || f == nil {
		panic(fmt.Sprintf("BUG: edge: RegisterResolver(%q) needs a name and a factory", name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("BUG: edge: resolver %q registered twice", name))
	}
	registry[name] = f
}

// ResolverKnown reports whether name is a registered resolver.
func ResolverKnown(name string) bool {
	registryMu.RLock()
	defer registryMu.RUnlock()
	_, ok := registry[name]
	return ok
}

// Resolvers lists the registered names.
func Resolvers() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewResolver builds the configured resolver.
func NewResolver(cfg config.RouteResolver) (Resolver, error) {
	registryMu.RLock()
	f, ok := registry[cfg.Type]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("route_resolver.type: unknown resolver %q (registered: %v)", cfg.Type, Resolvers())
	}
	res, err := f(cfg)
	if err == nil && res == nil {
		err = fmt.Errorf("route_resolver.type: resolver %q built nothing", cfg.Type)
	}
	return res, err
}

func init() {
	RegisterResolver("path", newPathResolver)
	RegisterResolver("tenantpath", newTenantPathResolver)
	RegisterResolver("host", newHostResolver)
	RegisterResolver("token", newTokenResolver)
}

// b2s views b as a string without copying; the string is valid only while
// b is.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// s2b views s as bytes; the caller must not modify them.
func s2b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// maxSegments bounds how many path segments SplitPath looks at.
const maxSegments = 16

// Segments are the path segments of a request URI.
type Segments struct {
	n int
	s [maxSegments][]byte
}

// Len is the number of segments.
func (s *Segments) Len() int { return s.n }

// At returns segment i.
func (s *Segments) At(i int) []byte { return s.s[i] }

// View returns segment i as a string that views the request's bytes: no
// copy, valid only while the request is handled (what a Route may hold).
func (s *Segments) View(i int) string { return b2s(s.s[i]) }

// HasPrefix reports whether the path starts with the literal segments of
// prefix.
func (s *Segments) HasPrefix(prefix []string) bool { return matchPrefix(s, prefix) }

// SplitPath splits the raw request URI (query dropped) into its segments.
// It refuses, without allocating, everything a resolver must answer 404 to:
// a URI not starting with "/", empty segments ("//", a trailing "/"), dot
// segments, any percent-encoding (no valid name needs it, and an encoded
// slash or dot must not slip through), control characters and more than
// maxSegments segments.
func SplitPath(uri []byte, out *Segments) bool {
	if i := indexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	if i := indexByte(uri, '#'); i >= 0 {
		uri = uri[:i]
	}
	uri = stripAuthority(uri)
	if len(uri) < 2 || uri[0] != '/' {
		return false
	}
	out.n = 0
	start := 1
	for i := 1; i <= len(uri); i++ {
		if i < len(uri) {
			c := uri[i]
			if c == '%' || c <= ' ' || c >= 0x7f || c == '\\' {
				return false
			}
			if c != '/' {
				continue
			}
		}
		seg := uri[start:i]
		if len(seg) == 0 || (len(seg) == 1 && seg[0] == '.') || (len(seg) == 2 && seg[0] == '.' && seg[1] == '.') {
			return false
		}
		if out.n == maxSegments {
			return false
		}
		out.s[out.n] = seg
		out.n++
		start = i + 1
	}
	return true
}

// stripAuthority turns an absolute-form request target
// ("http://host/path", RFC 9112 §3.2.2) into its path; others are returned
// as they are.
func stripAuthority(uri []byte) []byte {
	var rest []byte
	switch {
	case len(uri) > 7 && equalFoldASCII(uri[:7], "http://"):
		rest = uri[7:]
	case len(uri) > 8 && equalFoldASCII(uri[:8], "https://"):
		rest = uri[8:]
	default:
		return uri
	}
	if i := indexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return nil
}

func equalFoldASCII(b []byte, s string) bool {
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// matchPrefix reports whether segs starts with prefix.
func matchPrefix(segs *Segments, prefix []string) bool {
	if segs.n < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if string(segs.s[i]) != p {
			return false
		}
	}
	return true
}
