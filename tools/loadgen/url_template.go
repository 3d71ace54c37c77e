package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// urlTemplate is a compiled -url: literal text with {tenant} and {source}
// placeholders. It is immutable and safe for concurrent use.
type urlTemplate struct {
	parts []urlPart
	// probeAddr is host:port of the first expansion, dialled once at start
	// to tell "nothing listens" apart from errors under load.
	probeAddr string
	tls       bool // https
}

type urlPart struct {
	lit string
	ph  placeholder
}

type placeholder uint8

const (
	phNone placeholder = iota
	phTenant
	phSource
)

// compileURL splits raw into literals and placeholders and checks that an
// expansion with the given sample tenant and source is an http(s) URL.
func compileURL(raw, sampleTenant, sampleSource string) (*urlTemplate, error) {
	t := &urlTemplate{}
	rest := raw
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			t.parts = append(t.parts, urlPart{lit: rest})
			break
		}
		if open > 0 {
			t.parts = append(t.parts, urlPart{lit: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, errors.New("unclosed '{' (placeholders are {tenant} and {source})")
		}
		switch name := rest[open+1 : open+end]; name {
		case "tenant":
			t.parts = append(t.parts, urlPart{ph: phTenant})
		case "source":
			t.parts = append(t.parts, urlPart{ph: phSource})
		default:
			return nil, fmt.Errorf("unknown placeholder {%s} (placeholders are {tenant} and {source})", name)
		}
		rest = rest[open+end+1:]
	}
	sample := string(t.appendTo(nil, sampleTenant, sampleSource))
	u, err := url.Parse(sample)
	if err != nil {
		return nil, fmt.Errorf("not a URL once expanded (%q): %w", sample, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no host")
	}
	t.probeAddr = u.Host
	t.tls = u.Scheme == "https"
	if u.Port() == "" {
		port := map[string]string{"http": "80", "https": "443"}[u.Scheme]
		t.probeAddr = net.JoinHostPort(u.Hostname(), port)
	}
	return t, nil
}

// appendTo appends the URL for tenant and source to dst.
func (t *urlTemplate) appendTo(dst []byte, tenant, source string) []byte {
	for _, p := range t.parts {
		switch p.ph {
		case phTenant:
			dst = append(dst, tenant...)
		case phSource:
			dst = append(dst, source...)
		default:
			dst = append(dst, p.lit...)
		}
	}
	return dst
}

// splitURL splits an expanded absolute URL into its host (the Host header:
// the authority without user info) and its request target (path and
// query, "/" for an empty path; a fragment is never sent).
func splitURL(u []byte) (host, target []byte) {
	if i := bytes.Index(u, schemeSep); i >= 0 {
		u = u[i+len(schemeSep):]
	}
	if i := bytes.IndexByte(u, '#'); i >= 0 {
		u = u[:i]
	}
	end := bytes.IndexAny(u, "/?")
	if end < 0 {
		end = len(u)
	}
	host, target = u[:end], u[end:]
	if i := bytes.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	switch {
	case len(target) == 0:
		return host, slash
	case target[0] == '?':
		// "http://h?q": the target is "/?q". Rare (a -url without a path);
		// the allocation is not on the common path.
		return host, append([]byte("/"), target...)
	}
	return host, target
}

var schemeSep, slash = []byte("://"), []byte("/")
