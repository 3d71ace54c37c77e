// Package console is the operator's console: a page in the browser, served
// by the admin listener at /console/, that shows and changes what the
// admin API does (tenants, sources, routes and their opaque URLs, stored
// hooks, dead letters, the quarantine pen, and the node's live metrics).
//
// It owns only static files, embedded in the binary (assets/: index.html,
// app.js and the ES modules it imports, app.css; no build step). They hold
// no data and need no token: every piece of data the page shows is an
// admin API call the page makes with the operator's bearer token, kept in
// the tab's sessionStorage, so the console can do nothing the token
// cannot, and each of its changes leaves the API's audit row.
//
// Every answer carries a strict Content-Security-Policy (the page's own
// scripts, styles and API calls only: no inline script or style, no
// third-party resource, no framing; Trusted Types required with no policy,
// so no string can reach an HTML or script sink), X-Content-Type-Options:
// nosniff, Referrer-Policy: no-referrer, Cache-Control: no-store (an
// upgrade of the binary serves its own files at once), X-Frame-Options:
// DENY, Cross-Origin-Opener-Policy and Cross-Origin-Resource-Policy:
// same-origin.
//
// It is a leaf: it imports nothing of this module (ARCHITECTURE.md).
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is the URL path the console is served under.
const Prefix = "/console/"

// CSP is the Content-Security-Policy of every console answer.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// contentTypes are the media types of the files the console serves, by
// extension; a file of any other extension is never served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the console's files under Prefix (Prefix itself is
// index.html) and a 404 for any other path under it; mount it on
// "GET /console/". It is safe for concurrent use.
func Handler() http.Handler { return handler{} }

// Redirect answers GET /console with a redirect to Prefix (a relative URL
// in the page resolves against the directory).
func Redirect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	})
}

type handler struct{}

func (handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setHeaders(h)
	name, ok := assetName(r.URL.Path)
	ctype := contentTypes[path.Ext(name)]
	var b []byte
	if ok && ctype != "" {
		var err error
		b, err = fs.ReadFile(assets, "assets/"+name)
		ok = err == nil
	}
	if !ok || ctype == "" {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("no console file " + r.URL.Path + "\n"))
		return
	}
	h.Set("Content-Type", ctype)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(b)
}

// assetName is the file under assets/ that p names, and false for a path
// outside Prefix or one that is not a plain relative name (no dot
// segment, no empty segment, no backslash).
func assetName(p string) (string, bool) {
	rest, ok := strings.CutPrefix(p, Prefix)
	if !ok {
		return "", false
	}
	if rest == "" {
		return "index.html", true
	}
	if strings.ContainsRune(rest, '\\') || !fs.ValidPath(rest) {
		return "", false
	}
	return rest, true
}

// setHeaders sets the headers every console answer carries.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}
