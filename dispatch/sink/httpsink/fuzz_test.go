package httpsink

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzURLCheck: when the sink accepts an expanded url, fasthttp sends
// the request to the host and port Target names (the circuit breaker's
// key is the receiver the request goes to), and parseRetryAfter never
// panics nor passes its cap.
func FuzzURLCheck(f *testing.F) {
	for _, s := range []string{
		"http://example.com/x", "https://Example.COM:8443/a?b#c", "http://u:p@h/", "http://[::1]:80/",
		"http://a@b@c/", "http://h:0/", "http://h:/", "http://[::1/", "http://h/\\@evil", "https://h?x=@y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, url string) {
		u := &urlTemplate{ats: strings.Count(url, "@")}
		if _, auth, ok := splitURL([]byte(url)); ok {
			u.ats = strings.Count(string(auth), "@")
		}
		_ = parseRetryAfter([]byte(url), testNow)
		if _, err := u.check([]byte(url)); err != nil {
			return
		}
		target := string(u.appendTarget(nil, []byte(url)))
		var uri fasthttp.URI
		if err := uri.Parse(nil, []byte(url)); err != nil {
			t.Fatalf("the sink accepts %q, fasthttp does not: %v", url, err)
		}
		host := strings.ToLower(string(uri.Host()))
		if got := target[strings.Index(target, "://")+3:]; !strings.HasPrefix(got, host) {
			t.Fatalf("url %q: Target %q, fasthttp's host %q", url, target, host)
		}
	})
}
