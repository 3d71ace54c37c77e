package console

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// get answers a request for p from the handler the admin listener mounts
// for it (straight, not through a mux, which would clean the path: the
// handler must refuse an unclean one by itself).
func get(t *testing.T, method, p string) *http.Response {
	t.Helper()
	h := Handler()
	if p == "/console" {
		h = Redirect()
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(method, "/", nil)
	r.URL.Path = p
	h.ServeHTTP(w, r)
	return w.Result()
}

// checkHeaders: every console answer carries the strict policy and the
// no-sniff, no-referrer, no-store, no-framing and cross-origin isolation
// headers.
func checkHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy":      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'",
		"X-Content-Type-Options":       "nosniff",
		"Referrer-Policy":              "no-referrer",
		"Cache-Control":                "no-store",
		"X-Frame-Options":              "DENY",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got, want)
		}
	}
}

// assetFiles lists the embedded files by their name under Prefix.
func assetFiles(t *testing.T) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, "assets/"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestConsoleFiles: every embedded file is served under /console/ with its
// bytes, its media type and the headers; /console/ is index.html.
func TestConsoleFiles(t *testing.T) {
	names := assetFiles(t)
	for _, want := range []string{"index.html", "app.js", "app.css"} {
		if !contains(names, want) {
			t.Fatalf("assets/ lacks %s (it holds %v)", want, names)
		}
	}
	wantType := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, name := range append(names, "") {
		p := Prefix + name
		file := name
		if name == "" {
			file = "index.html"
		}
		want, err := fs.ReadFile(assets, "assets/"+file)
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, "GET", p)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("GET %s: %d and %d bytes, want 200 and the %d bytes of %s", p, resp.StatusCode, len(body), len(want), file)
		}
		if ct := resp.Header.Get("Content-Type"); ct != wantType[path.Ext(file)] {
			t.Errorf("GET %s: Content-Type %q, want %q", p, ct, wantType[path.Ext(file)])
		}
		checkHeaders(t, "GET "+p, resp)
		head := get(t, "HEAD", p)
		if head.StatusCode != http.StatusOK || head.Header.Get("Content-Type") != wantType[path.Ext(file)] {
			t.Errorf("HEAD %s: %d %q", p, head.StatusCode, head.Header.Get("Content-Type"))
		}
		checkHeaders(t, "HEAD "+p, head)
	}
}

// TestConsoleNotFound: a path under /console/ that is not an embedded file
// of a served type is 404, with the same headers; nothing outside assets/
// is reachable.
func TestConsoleNotFound(t *testing.T) {
	for _, p := range []string{
		"/console/nope.js", "/console/app.js/", "/console/assets/app.js", "/console/index.htm",
		"/console/.", "/console/./app.js", "/console/a//b.js", "/console/app.js.map", "/console/x\\app.js",
	} {
		resp := get(t, "GET", p)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q, want text/plain", p, ct)
		}
		checkHeaders(t, "GET "+p, resp)
	}
	if _, ok := assetName("/consolex/app.js"); ok {
		t.Error("assetName accepts a path outside /console/")
	}
}

// TestConsoleRedirect: /console sends the browser to /console/ (the page's
// relative URLs resolve against the directory).
func TestConsoleRedirect(t *testing.T) {
	resp := get(t, "GET", "/console")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != Prefix {
		t.Fatalf("GET /console: %d Location %q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), Prefix)
	}
	checkHeaders(t, "GET /console", resp)
}

// TestConsoleIndexNoInline parses index.html: no inline script, no event
// handler attribute, no style element or attribute, no javascript: URL
// (the CSP would block each, so the page would break), and every script
// and style sheet is one of the console's own files.
func TestConsoleIndexNoInline(t *testing.T) {
	b, err := fs.ReadFile(assets, "assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	z := html.NewTokenizer(bytes.NewReader(b))
	var scripts, sheets []string
	inScript := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.TextToken:
			if inScript && strings.TrimSpace(tok.Data) != "" {
				t.Errorf("index.html holds an inline script: %q", tok.Data)
			}
		case html.EndTagToken:
			if tok.Data == "script" {
				inScript = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Key] = a.Val
				if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
					t.Errorf("index.html: <%s> has the inline attribute %s=%q", tok.Data, a.Key, a.Val)
				}
				if strings.HasPrefix(strings.TrimSpace(strings.ToLower(a.Val)), "javascript:") {
					t.Errorf("index.html: <%s %s> is a javascript: URL", tok.Data, a.Key)
				}
			}
			switch tok.Data {
			case "script":
				inScript = tt == html.StartTagToken
				if attr["src"] == "" {
					t.Error("index.html: a <script> without src (inline)")
				}
				scripts = append(scripts, attr["src"])
			case "style":
				t.Error("index.html holds a <style> element")
			case "link":
				if attr["rel"] == "stylesheet" {
					sheets = append(sheets, attr["href"])
				}
			}
		}
	}
	if len(scripts) == 0 || len(sheets) == 0 {
		t.Fatalf("index.html loads scripts %v and style sheets %v, want its own of each", scripts, sheets)
	}
	for _, ref := range append(scripts, sheets...) {
		if resp := get(t, "GET", Prefix+ref); resp.StatusCode != http.StatusOK {
			t.Errorf("index.html loads %q, which the console does not serve (%d): a third-party or missing file", ref, resp.StatusCode)
		}
	}
}

// TestConsoleScriptsSafe: the scripts build the page from text, never from
// markup (no innerHTML, outerHTML, insertAdjacentHTML, document.write or
// eval), set no style attribute (the CSP blocks it), load nothing from
// another origin, and import only the console's own modules.
func TestConsoleScriptsSafe(t *testing.T) {
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("style"|"style":|\bstyle=`)
	url := regexp.MustCompile(`https?://[^"'\s)]+`)
	imports := regexp.MustCompile(`(?m)^import .* from "([^"]+)";`)
	for _, name := range assetFiles(t) {
		b, _ := fs.ReadFile(assets, "assets/"+name)
		if m := banned.Find(b); m != nil && path.Ext(name) == ".js" {
			t.Errorf("%s uses %q", name, m)
		}
		for _, u := range url.FindAll(b, -1) {
			if string(u) != "http://www.w3.org/2000/svg" {
				t.Errorf("%s names another origin: %s", name, u)
			}
		}
		for _, m := range imports.FindAllSubmatch(b, -1) {
			dep := string(m[1])
			if !strings.HasPrefix(dep, "./") || !contains(assetFiles(t), strings.TrimPrefix(dep, "./")) {
				t.Errorf("%s imports %q, not one of the console's files", name, dep)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
