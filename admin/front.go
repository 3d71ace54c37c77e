package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// front is what stands before the admin listener's mux: it bounds every
// request body, refuses a path that is not plain (rawPathProblem: after
// the 401 for a path that needs a token, so the order of answers is the
// guard's), and answers in JSON what the mux does not match (404
// not_found, 405 method_not_allowed with Allow). It is safe for
// concurrent use.
type front struct {
	mux     *http.ServeMux
	auth    *Auth
	maxBody int64
}

type maxBodyKey struct{}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > f.maxBody {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge, tooLargeMessage(f.maxBody))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, f.maxBody)
	r = r.WithContext(context.WithValue(r.Context(), maxBodyKey{}, f.maxBody))
	if msg := rawPathProblem(r); msg != "" {
		if needsToken(r.URL.EscapedPath()) {
			if _, ok := f.auth.authenticate(w, r); !ok {
				return
			}
		}
		writeError(w, http.StatusBadRequest, codeInvalidName, msg)
		return
	}
	if _, pattern := f.mux.Handler(r); pattern == "" {
		f.mux.ServeHTTP(&unmatchedWriter{ResponseWriter: w, path: r.URL.Path, method: r.Method}, r)
		return
	}
	f.mux.ServeHTTP(w, r)
}

// needsToken reports whether a path is, or would be once cleaned, one of
// the guarded ones (the API and the profiles).
func needsToken(p string) bool {
	p = strings.TrimLeft(p, "/")
	return strings.HasPrefix(p, "v1/") || p == "v1" || strings.HasPrefix(p, "debug/")
}

func tooLargeMessage(max int64) string {
	return fmt.Sprintf("the request body is larger than admin.max_body_bytes (%d bytes)", max)
}

// maxBodyOf is the body bound front set on r, or the default outside a
// front (a bare mux in a test).
func maxBodyOf(r *http.Request) int64 {
	if n, ok := r.Context().Value(maxBodyKey{}).(int64); ok {
		return n
	}
	return defaultMaxBody
}

// unmatchedWriter turns the mux's plain-text 404 and 405 into the JSON
// error bodies (keeping the Allow header of a 405), and passes anything
// else through.
type unmatchedWriter struct {
	http.ResponseWriter
	path, method string
	swallow      bool
}

func (u *unmatchedWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		u.swallow = true
		writeError(u.ResponseWriter, code, codeNotFound, fmt.Sprintf("no admin route %s", u.path))
	case http.StatusMethodNotAllowed:
		u.swallow = true
		writeError(u.ResponseWriter, code, codeNotAllowed, fmt.Sprintf("%s is not a method of %s (Allow: %s)", u.method, u.path, u.Header().Get("Allow")))
	default:
		u.ResponseWriter.WriteHeader(code)
	}
}

func (u *unmatchedWriter) Write(b []byte) (int, error) {
	if u.swallow {
		return len(b), nil
	}
	return u.ResponseWriter.Write(b)
}
