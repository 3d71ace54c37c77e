package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// commandLine runs the program's commands against n as the README shows
// them: demo, then mint, post, get, revoke and a post to the revoked URL
// one by one, each reading what the one before printed.
func (n *node) commandLine(t *testing.T) {
	t.Helper()
	env := map[string]string{"ANKUSA_ADMIN_TOKEN": demoToken, "MINTEDURLS_SECRET": testSecret}
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		var out, errw bytes.Buffer
		all := append([]string{"-admin", "http://" + n.admin, "-hooks", "http://" + n.listen}, args...)
		code := run(context.Background(), all, strings.NewReader(`{"from":"stdin"}`), &out, &errw, func(k string) string { return env[k] })
		if code != wantCode {
			t.Fatalf("mintedurls %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, wantCode, out.String(), errw.String())
		}
		return out.String() + errw.String()
	}

	demo := cli(0, "demo", "initech")
	for _, want := range []string{"1. minted route rt-", "2. posted a signed hook: 201 evt_", "3. the same hook unsigned: 401 ",
		"4. read it back: tenant initech, source saas-events, verified by standardwebhooks", "5. revoked route rt-", "6. posted to the revoked URL: 404 "} {
		if !strings.Contains(demo, want) {
			t.Fatalf("demo: no %q in:\n%s", want, demo)
		}
	}

	minted := cli(0, "mint", "initech")
	route := field(t, minted, `(?m)^route  (rt-\S+)$`)
	url := field(t, minted, `(?m)^url    (http://\S+/webhooks/catch/\S+)$`)
	id := field(t, cli(0, "post", url, "-"), `^201 (evt_\S+)\n$`)
	if got := cli(0, "get", "initech", id); !strings.Contains(got, `"tenant_id":"initech"`) || !strings.Contains(got, `"body":"{\"from\":\"stdin\"}"`) {
		t.Fatalf("get initech %s: %s, want the hook with its tenant and the body read from stdin", id, got)
	}
	cli(1, "get", "acme", id)
	if got := cli(0, "revoke", "initech", route); got != "revoked "+route+" of initech\n" {
		t.Fatalf("revoke: %q", got)
	}
	if got := cli(1, "post", strings.TrimPrefix(url, "http://"+n.listen), `{}`); !strings.Contains(got, ": 404 ") {
		t.Fatalf("post to the revoked URL's path: %s, want a 404", got)
	}
}

// field is the first group of re in s.
func field(t *testing.T, s, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	return m[1]
}
