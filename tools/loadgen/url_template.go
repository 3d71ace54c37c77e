package main

import (
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
