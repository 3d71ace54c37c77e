package config

import (
	"errors"
	"slices"
	"testing"
)

// A preset's name is not in VerifierTypes: the build's VerifierKnown
// (the catalogue) accepts it, and without one it is unknown.
func TestVerifierKnownAcceptsPresets(t *testing.T) {
	opts := buildOptions
	opts.VerifierKnown = func(name string) bool { return name == "none" || name == "twilio" }
	yaml := "sources: {s: {verify: {type: twilio, secret: tok}}, u: {verify: {type: acme, secret: x}}}\n"
	want := []string{`sources.u.verify.type: unknown verifier "acme" ([none hmac stripe github shopify slack standardwebhooks], or a preset: ` + "`ankusa presets`" + ` lists them)`}
	if probs := problemsOf(t, yaml, opts); !slices.Equal(probs, want) {
		t.Fatalf("problems %q, want %q", probs, want)
	}
	opts.VerifierKnown = nil
	if probs := problemsOf(t, "sources: {s: {verify: {type: twilio, secret: tok}}}\n", opts); len(probs) != 1 {
		t.Fatalf("without a catalogue twilio is unknown: %q", probs)
	}
}

// verify.url is an absolute http(s) URL, or refused by name.
func TestVerifyURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/in/twilio?x=1", true},
		{"http://10.0.0.1:8080/in", true},
		{"/in/twilio", false},
		{"ftp://hooks.example.com/in", false},
		{"https://", false},
		{"https://hooks.example.com/in#frag", false},
		{"https://hooks.example.com/%zz", false},
	} {
		yaml := "sources: {s: {verify: {type: none, url: '" + tc.url + "'}}}\n"
		probs := problemsOf(t, yaml, buildOptions)
		if tc.ok && len(probs) != 0 {
			t.Errorf("%q: %q", tc.url, probs)
		}
		if !tc.ok && (len(probs) != 1 || !slices.ContainsFunc(probs, func(p string) bool {
			return len(p) > len("sources.s.verify.url:") && p[:len("sources.s.verify.url:")] == "sources.s.verify.url:"
		})) {
			t.Errorf("%q: problems %q, want one sources.s.verify.url", tc.url, probs)
		}
	}
}

// dedupe.key auto on a source whose verify.type is refused is not a second
// problem: there is no verifier whose id it could stand for.
func TestAutoDedupeUnknownVerifierOneProblem(t *testing.T) {
	opts := buildOptions
	opts.CheckDedupe = func(key, vt string) error { return errors.New("dedupe.key: no id for " + vt) }
	yaml := "sources: {u: {verify: {type: acme, secret: x}, dedupe: {key: auto}}, h: {verify: {type: none}, dedupe: {key: auto}}}\n"
	want := []string{
		"sources.h.dedupe.key: no id for none",
		`sources.u.verify.type: unknown verifier "acme" ([none hmac stripe github shopify slack standardwebhooks], or a preset: ` + "`ankusa presets`" + ` lists them)`,
	}
	probs := problemsOf(t, yaml, opts)
	slices.Sort(probs)
	if !slices.Equal(probs, want) {
		t.Fatalf("problems %q, want %q", probs, want)
	}
}
