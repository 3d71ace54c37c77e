package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks specification's example (its reference Go
// library's TestWebhookSign); verify/standardwebhooks_test.go checks the
// node's verifier against the same one.
func TestSignerSpecExample(t *testing.T) {
	s, err := NewSigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Signature("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want the specification's %s", got, want)
	}
}

func TestNewSignerRefuses(t *testing.T) {
	for _, secret := range []string{"", "whsec_", "whsec_!!not-base64", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS"} {
		if _, err := NewSigner(secret); err == nil || !strings.Contains(err.Error(), "whsec_ followed by base64") {
			t.Errorf("NewSigner(%q): %v, want the whsec_ message", secret, err)
		}
	}
}

// TestUsage: every command line the program cannot run exits 2 naming
// what is wrong, before it sends anything (the addresses are unroutable).
func TestUsage(t *testing.T) {
	const token, secret = "tok-never-printed-7f3a", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	base := []string{"-admin", "http://192.0.2.1:1", "-hooks", "http://192.0.2.1:2"}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "no command"},
		{[]string{"frob"}, nil, `unknown command "frob"`},
		{[]string{"mint"}, nil, "mint takes 1 argument(s), got 0"},
		{[]string{"get", "acme"}, nil, "get takes 2 argument(s), got 1"},
		{[]string{"post", "/x", "{}", "extra"}, nil, "post takes 2 argument(s), got 3"},
		{[]string{"mint", "acme"}, nil, "mint needs the admin token: -token or $ANKUSA_ADMIN_TOKEN"},
		{[]string{"revoke", "acme", "rt-1"}, nil, "revoke needs the admin token"},
		{[]string{"post", "/webhooks/catch/x", "{}"}, nil, "post signs with $MINTEDURLS_SECRET, which is not set"},
		{[]string{"demo", "acme"}, map[string]string{"ANKUSA_ADMIN_TOKEN": token}, "demo signs with $MINTEDURLS_SECRET"},
		{[]string{"post", "/webhooks/catch/x", "{}"}, map[string]string{"MINTEDURLS_SECRET": "whsec_!!"}, "$MINTEDURLS_SECRET: the signing secret must be whsec_ followed by base64"},
		{[]string{"-bogus", "mint", "acme"}, nil, "flag provided but not defined: -bogus"},
		// The usage text never shows the token from the environment.
		{[]string{"-h"}, map[string]string{"ANKUSA_ADMIN_TOKEN": token, "MINTEDURLS_SECRET": secret}, "usage: mintedurls"},
	} {
		var out, errw bytes.Buffer
		getenv := func(k string) string { return tc.env[k] }
		code := run(context.Background(), append(base, tc.args...), strings.NewReader(""), &out, &errw, getenv)
		if code != 2 || !strings.Contains(errw.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2, nothing on stdout, stderr with %q", tc.args, code, out.String(), errw.String(), tc.want)
		}
		if strings.Contains(errw.String(), token) || strings.Contains(errw.String(), secret) {
			t.Errorf("%q: stderr shows the token or the secret:\n%s", tc.args, errw.String())
		}
	}
}
