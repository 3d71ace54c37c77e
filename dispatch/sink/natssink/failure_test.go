package natssink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/natstest"
)

// The server goes away and comes back (its store kept): while it is down
// Deliver fails fast and retryably, the breaker may count it (not
// Answered); after the restart every hook retried is in the stream, once.
func TestServerDown(t *testing.T) {
	t.Parallel()
	srv := natstest.StartServer(t, natstest.ServerOptions{})
	stream, subject, _ := streamOn(t, srv.URL(), jetstream.StreamConfig{Storage: jetstream.FileStorage})
	s := newSink(t, srv.URL(), config.Sink{Stream: stream, Subject: subject})

	var envs []*envelope.Envelope
	for range 5 {
		e := testEnvelope()
		envs = append(envs, e)
		if err := deliver(s, e, 1); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	// A hook sent before the client has read the server's close goes out
	// on the dying connection and times out waiting for its PubAck (a
	// retryable error too, "may still be in the stream"): what this test
	// holds is the answer once the client knows the server is gone.
	sc, err := s.conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); sc.nc.IsConnected(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client did not notice the server's stop in 10s")
		}
	}
	var pending []*envelope.Envelope
	for i := range 5 {
		e := testEnvelope()
		envs = append(envs, e)
		pending = append(pending, e)
		start := time.Now()
		err := deliver(s, e, 1)
		de := dispatch.AsError(err)
		if err == nil || de.Permanent || de.Answered || !errors.Is(err, ErrNotConnected) {
			t.Fatalf("hook %d with the server down: err = %v (permanent %v answered %v), want a retryable ErrNotConnected", i, err, de.Permanent, de.Answered)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Deliver with the server down took %v", d)
		}
		if i == 0 {
			t.Log(err)
		}
	}
	srv.Start()
	for i, e := range pending {
		if n, err := deliverUntil(s, e, 15*time.Second); err != nil {
			t.Fatalf("hook %d after the restart, %d attempts: %v", i, n, err)
		}
	}
	c := natstest.Connect(t, srv.URL())
	ms := c.Msgs(stream, len(envs))
	if len(ms) != len(envs) {
		t.Fatalf("stream holds %d, want %d", len(ms), len(envs))
	}
	for i, m := range ms {
		if want := envs[i].AppendJSON(nil); !bytes.Equal(m.Data, want) {
			t.Errorf("message %d: %s, want %s", i, m.Data, want)
		}
	}
}

// A server that holds the connection and answers nothing (SIGSTOP): no
// PubAck within the timeout, retryable, the message may be there.
func TestSlowServer(t *testing.T) {
	t.Parallel()
	srv := natstest.StartServer(t, natstest.ServerOptions{})
	stream, subject, _ := streamOn(t, srv.URL(), jetstream.StreamConfig{Storage: jetstream.FileStorage})
	s := newSink(t, srv.URL(), config.Sink{Stream: stream, Subject: subject, Timeout: config.Duration(500 * time.Millisecond)})
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	e := testEnvelope()
	start := time.Now()
	err := deliver(s, e, 1)
	took := time.Since(start)
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrNoAck) || de.Permanent || de.Answered || !strings.Contains(err.Error(), "may still be in the stream") {
		t.Fatalf("err = %v, want a retryable ErrNoAck", err)
	}
	if took < 400*time.Millisecond || took > 2*time.Second {
		t.Errorf("Deliver took %v with a 500ms timeout", took)
	}
	t.Log(err)
	srv.Resume()
	if n, err := deliverUntil(s, e, 10*time.Second); err != nil {
		t.Fatalf("after SIGCONT, %d attempts: %v", n, err)
	}
	// The first attempt's message may have reached the stream once the
	// server ran again: the retry is then a duplicate, stored once.
	c := natstest.Connect(t, srv.URL())
	if ms := c.Msgs(stream, 2); len(ms) != 2 {
		t.Fatalf("stream holds %d, want 2", len(ms))
	}
}

// A message over the server's max_payload is refused by the client before
// it is sent: permanent.
func TestOverMaxPayload(t *testing.T) {
	t.Parallel()
	srv := natstest.StartServer(t, natstest.ServerOptions{MaxPayload: 4096})
	stream, subject, _ := streamOn(t, srv.URL(), jetstream.StreamConfig{Storage: jetstream.FileStorage})
	s := newSink(t, srv.URL(), config.Sink{Stream: stream, Subject: subject, Format: "raw"})
	e := testEnvelope()
	e.Body = bytes.Repeat([]byte("x"), 8192)
	err := deliver(s, e, 1)
	if !errors.Is(err, ErrTooLarge) || !dispatch.AsError(err).Permanent || !strings.Contains(err.Error(), "max_payload of 4096") {
		t.Fatalf("err = %v, want a permanent ErrTooLarge naming max_payload", err)
	}
	t.Log(err)
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatalf("a small hook after it: %v", err)
	}
}

// Wrong credentials: retryable, logged as an error (without the
// password), and the sink never stops trying; right ones deliver, given
// under auth or in the url.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	const user, pw = "ankusa", "right-horse-battery"
	srv := natstest.StartServer(t, natstest.ServerOptions{User: user, Password: pw})
	adminURL := "nats://" + user + ":" + pw + "@" + srv.Addr()
	stream, subject, _ := streamOn(t, adminURL, jetstream.StreamConfig{Storage: jetstream.FileStorage})

	core, logs := observer.New(zapcore.InfoLevel)
	const wrong = "wrong-staple-9876"
	s, err := New(Options{Spec: config.Sink{ID: "s1", Type: "nats", URL: srv.URL(), Stream: stream, Subject: subject,
		Auth: &config.NATSAuth{Username: user, Password: config.Secret{Ref: "env:X", Value: wrong}}},
		Source: "test", Node: "n1", Logger: zap.New(core), ReconnectWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	// Every attempt fails, retryably, without the password; within a
	// moment (the first refusal reaches the client asynchronously) the
	// error names the authorization failure.
	e := testEnvelope()
	deadline := time.Now().Add(5 * time.Second)
	for attempt := 1; ; attempt++ {
		err := deliver(s, e, attempt)
		de := dispatch.AsError(err)
		if !errors.Is(err, ErrNotConnected) || de.Permanent {
			t.Fatalf("attempt %d: err = %v, want a retryable ErrNotConnected", attempt, err)
		}
		if strings.Contains(err.Error(), wrong) {
			t.Fatalf("the password is in the error: %v", err)
		}
		if strings.Contains(strings.ToLower(err.Error()), "authorization violation") && strings.Contains(err.Error(), "fix auth") {
			t.Log(err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d attempts the error does not name the authorization failure: %v", attempt, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a few more refusals, at ReconnectWait 100ms
	authLogs := logs.FilterMessageSnippet("refuses the sink's credentials").All()
	if len(authLogs) == 0 || authLogs[0].Level != zapcore.ErrorLevel {
		t.Fatalf("no error logged for the refused credentials; logs: %v", logs.All())
	}
	for _, l := range logs.All() {
		for _, f := range l.Context {
			if strings.Contains(f.String, wrong) {
				t.Fatalf("the password is in the log: %v", l)
			}
		}
	}
	if d := authLogs[len(authLogs)-1].ContextMap()["times"]; d == nil {
		t.Errorf("log without a count: %v", authLogs[0].ContextMap())
	}

	good := newSink(t, srv.URL(), config.Sink{ID: "s2", Stream: stream, Subject: subject,
		Auth: &config.NATSAuth{Username: user, Password: config.Secret{Ref: "env:X", Value: pw}}})
	if err := deliver(good, e, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Spec: config.Sink{ID: "s3", Type: "nats", URL: adminURL, Stream: stream, Subject: subject}}); err == nil ||
		!strings.Contains(err.Error(), "url: give the credentials under auth") || strings.Contains(err.Error(), pw) {
		t.Fatalf("credentials in the url: %v, want a refusal naming url, without the password", err)
	}
}

// The token form of auth.
func TestTokenAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cr3t-token-value"
	srv := natstest.StartServer(t, natstest.ServerOptions{Token: token})
	stream, subject, _ := streamOn(t, "nats://"+token+"@"+srv.Addr(), jetstream.StreamConfig{Storage: jetstream.FileStorage})
	s := newSink(t, srv.URL(), config.Sink{Stream: stream, Subject: subject, Auth: &config.NATSAuth{Token: config.Secret{Ref: "env:T", Value: token}}})
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	bad := newSink(t, srv.URL(), config.Sink{ID: "s2", Stream: stream, Subject: subject, Auth: &config.NATSAuth{Token: config.Secret{Ref: "env:T", Value: "nope-nope"}}})
	if err := deliver(bad, testEnvelope(), 1); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("wrong token: err = %v", err)
	}
}

// New does not connect; a server down at boot makes Deliver fail fast and
// retryably, and the sink connects once the server is there.
func TestDownAtBoot(t *testing.T) {
	t.Parallel()
	srv := natstest.StartServer(t, natstest.ServerOptions{})
	stream, subject, _ := streamOn(t, srv.URL(), jetstream.StreamConfig{Storage: jetstream.FileStorage})
	srv.Stop()
	s, err := New(Options{Spec: config.Sink{ID: "s1", Type: "nats", URL: srv.URL(), Stream: stream, Subject: subject,
		ConnectTimeout: config.Duration(time.Second)}, Source: "src", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if s.o.ConnectionName != "ankusa/n1/src/s1" {
		t.Errorf("connection name %q", s.o.ConnectionName)
	}
	e := testEnvelope()
	for i := range 3 {
		start := time.Now()
		err := deliver(s, e, i+1)
		if !errors.Is(err, ErrNotConnected) || dispatch.AsError(err).Permanent {
			t.Fatalf("err = %v, want a retryable ErrNotConnected", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Deliver took %v", d)
		}
	}
	srv.Start()
	if n, err := deliverUntil(s, e, 10*time.Second); err != nil {
		t.Fatalf("after the server started, %d attempts: %v", n, err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := deliver(s, testEnvelope(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// Credentials that may not publish to the subject: the server drops the
// message, the sink logs the permissions violation as an error and the
// attempt ends without a PubAck, retryably.
func TestPublishPermissionDenied(t *testing.T) {
	t.Parallel()
	srv := natstest.StartServer(t, natstest.ServerOptions{Authorization: `  users: [
    {user: admin, password: adminpw}
    {user: ankusa, password: ankusapw, permissions: {publish: {allow: ["$JS.API.>"]}, subscribe: {allow: ["_INBOX.>"]}}}
  ]`})
	adminURL := "nats://admin:adminpw@" + srv.Addr()
	stream, subject, _ := streamOn(t, adminURL, jetstream.StreamConfig{Storage: jetstream.FileStorage})
	core, logs := observer.New(zapcore.InfoLevel)
	s, err := New(Options{Spec: config.Sink{ID: "s1", Type: "nats", URL: srv.URL(), Stream: stream, Subject: subject,
		Auth:    &config.NATSAuth{Username: "ankusa", Password: config.Secret{Ref: "ankusapw", Value: "ankusapw"}},
		Timeout: config.Duration(500 * time.Millisecond)}, Source: "test", Node: "n1", Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	err = deliver(s, testEnvelope(), 1)
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrNoAck) || de.Permanent {
		t.Fatalf("err = %v, want a retryable ErrNoAck", err)
	}
	t.Log(err)
	// Once the violation is known, the next attempt's error names it.
	if err := deliver(s, testEnvelope(), 1); !errors.Is(err, ErrNoAck) || !strings.Contains(err.Error(), "permission to publish") {
		t.Fatalf("second attempt: err = %v, want ErrNoAck naming the permission", err)
	} else {
		t.Log(err)
	}
	var l []observer.LoggedEntry
	if !waitForErr(func() bool { l = logs.FilterMessageSnippet("refuses the sink's credentials").All(); return len(l) > 0 }) {
		t.Fatalf("no error logged for the permissions violation; logs: %v", logs.All())
	}
	if l[0].Level != zapcore.ErrorLevel || !strings.Contains(strings.ToLower(l[0].ContextMap()["error"].(string)), "permissions violation") {
		t.Fatalf("log %v", l[0])
	}
	if strings.Contains(fmt.Sprint(logs.All()), "ankusapw") {
		t.Fatal("the password is in the log")
	}
}
