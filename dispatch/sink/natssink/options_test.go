package natssink

import (
	"strings"
	"testing"

	"github.com/ankusa/ankusa/config"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	ok := config.Sink{Type: "nats", URL: "nats://127.0.0.1:4222", Stream: "HOOKS"}
	if err := Check(ok); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	cluster := ok
	cluster.URL = "nats://a:4222, nats://b:4222"
	if err := Check(cluster); err != nil {
		t.Fatalf("a cluster url: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(s *config.Sink)
		want string
	}{
		{"no url", func(s *config.Sink) { s.URL = "" }, "url:"},
		{"http url", func(s *config.Sink) { s.URL = "http://x:1" }, "url:"},
		{"no stream", func(s *config.Sink) { s.Stream = "" }, "stream:"},
		{"stream with a dot", func(s *config.Sink) { s.Stream = "a.b" }, "stream:"},
		{"unknown field", func(s *config.Sink) { s.Subject = "a.{nope}" }, "subject:"},
		{"wildcard subject", func(s *config.Sink) { s.Subject = "a.*.{tenant_id}" }, "subject:"},
		{"empty token", func(s *config.Sink) { s.Subject = "a..{tenant_id}" }, "subject:"},
		{"space", func(s *config.Sink) { s.Subject = "a b.{tenant_id}" }, "subject:"},
		{"bad stream subject", func(s *config.Sink) {
			s.CreateStream = &config.CreateStream{Subjects: []string{"a.>.b"}}
		}, "create_stream.subjects[0]"},
		{"storage", func(s *config.Sink) { s.CreateStream = &config.CreateStream{Storage: "tape"} }, "create_stream.storage"},
		{"url credentials", func(s *config.Sink) { s.URL = "nats://u:p@h:4222" }, "url: give the credentials under auth"},
		{"url token in a list", func(s *config.Sink) { s.URL = "nats://h1:4222,nats://tok@h2:4222" }, "url: give the credentials under auth"},
		{"two auths", func(s *config.Sink) {
			s.Auth = &config.NATSAuth{Token: config.Secret{Ref: "t", Value: "t"}, CredsFile: "/x"}
		}, "auth:"},
		{"missing creds file", func(s *config.Sink) { s.Auth = &config.NATSAuth{CredsFile: "/nonexistent/ankusa.creds"} }, "auth.creds_file"},
		{"missing ca file", func(s *config.Sink) { s.TLS = &config.TLS{CAFile: "/nonexistent/ca.pem"} }, "tls.ca_file"},
		{"format", func(s *config.Sink) { s.Format = "xml" }, "format:"},
		{"rabbitmq key", func(s *config.Sink) { s.Exchange = "x" }, "exchange"},
	} {
		s := ok
		tc.edit(&s)
		err := Check(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), ":p@") {
			t.Errorf("%s: the password is in %v", tc.name, err)
		}
	}
	if _, err := New(Options{Spec: config.Sink{Type: "rabbitmq", URL: "amqp://h/", Stream: "S"}}); err == nil {
		t.Error("New took a rabbitmq spec")
	}
}

func TestWildcardSubject(t *testing.T) {
	t.Parallel()
	for tmpl, want := range map[string]string{
		"ankusa.{tenant_id}.{source_id}": "ankusa.*.*",
		"hooks.t-{tenant_id}.x":          "hooks.*.x",
		"static.subject":                 "static.subject",
		"{tenant_id}.{params.app}.{{x}}": "*.*.{x}",
		"a.{tenant_id}{source_id}.b":     "a.*.b",
	} {
		p, err := config.ParseTemplate(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got := wildcardSubject(p); got != want {
			t.Errorf("%s: %q, want %q", tmpl, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nats://h:4222":                     "nats://h:4222",
		"nats://u:secret@h:4222":            "nats://u:xxxxx@h:4222",
		"nats://tokenvalue@h:4222":          "nats://xxxxx@h:4222",
		"nats://a:1,nats://u:secret@b:2":    "nats://a:1,nats://u:xxxxx@b:2",
		"tls://u:secret@h:4222, nats://c:3": "tls://u:xxxxx@h:4222,nats://c:3",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
