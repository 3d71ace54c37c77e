package admin

import (
	_ "embed" // the OpenAPI document
	"net/http"
)

// router is what registering a route needs of a mux: the listener's
// *http.ServeMux serves them, a *patternList only records their patterns
// (Patterns). Requests never pass through it.
type router interface {
	Handle(pattern string, h http.Handler)
}

// patternList records the patterns registered on it.
type patternList []string

func (l *patternList) Handle(pattern string, _ http.Handler) { *l = append(*l, pattern) }

// Patterns lists the http.ServeMux pattern of every route the admin
// listener serves under o ("GET /v1/tenants/{tenant}/sources"), in the
// order they are registered: the /v1 routes o's stages serve, and the
// open ones and the profiles Listen adds. The OpenAPI document
// (openapi.json) describes each of them; a test holds the two to each
// other. It fails as Listen does when o is invalid.
func Patterns(o Options) ([]string, error) {
	auth, err := NewAuth(o.Tokens)
	if err != nil {
		return nil, err
	}
	var l patternList
	if err := register(&l, auth, o); err != nil {
		return nil, err
	}
	(&Server{}).registerOpen(&l, auth)
	return l, nil
}

// openAPIDoc is the OpenAPI 3.1 document of the admin API, kept beside
// the handlers it describes.
//
//go:embed openapi.json
var openAPIDoc []byte

// serveOpenAPI serves GET /v1/openapi.json, to anyone who reaches the
// listener: it describes the API and holds no data. It may be cached for
// a minute (it changes only with the binary).
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDoc)
}
