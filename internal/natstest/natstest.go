package natstest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultURL is the shared server when ANKUSA_NATS_URL is not set.
const DefaultURL = "nats://127.0.0.1:4222"

// Need skips the test, or fails it when CI=true, saying what is missing:
// CI must not pass by skipping what it was meant to run.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}

// URL is the shared server the tests use, ANKUSA_NATS_URL or DefaultURL,
// once a connection to it has answered a JetStream account info request;
// when it does not, Need.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("ANKUSA_NATS_URL")
	if u == "" {
		u = DefaultURL
	}
	nc, err := nats.Connect(u, nats.Timeout(3*time.Second), nats.Name("ankusa-test/"+t.Name()))
	if err != nil {
		Need(t, "NATS at %s is not reachable: %v (run scripts/ensure-nats.sh)", redacted(u), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		Need(t, "NATS at %s has no JetStream: %v (run nats-server with -js; scripts/ensure-nats.sh)", redacted(u), err)
	}
	return u
}

// Client is a test's own JetStream client of the server at u, closed when
// the test ends, to make streams and read what was stored.
type Client struct {
	t  testing.TB
	NC *nats.Conn
	JS jetstream.JetStream
}

// Connect connects a Client to the server at u (the test fails when it
// cannot).
func Connect(t testing.TB, u string, opts ...nats.Option) *Client {
	t.Helper()
	opts = append([]nats.Option{nats.Timeout(5 * time.Second), nats.Name("ankusa-test/" + t.Name())}, opts...)
	nc, err := nats.Connect(u, opts...)
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", redacted(u), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return &Client{t: t, NC: nc, JS: js}
}

// Names returns a stream name and a subject prefix of the test's own:
// "ankusa-test-<test name>-<random>" and "ankusatest.<random>". Neither
// exists yet; a stream made under the name by anyone is deleted from the
// server at u when the test ends.
func Names(t testing.TB, u string) (stream, subjectPrefix string) {
	t.Helper()
	r := rand.Uint32()
	stream = fmt.Sprintf("ankusa-test-%s-%08x", sanitize(t.Name()), r)
	subjectPrefix = fmt.Sprintf("ankusatest.%08x", r)
	t.Cleanup(func() { DeleteStream(u, stream) })
	return stream, subjectPrefix
}

// DeleteStream deletes stream from the server at u, if it is there;
// errors are ignored (the server may be gone with its test).
func DeleteStream(u, stream string) {
	nc, err := nats.Connect(u, nats.Timeout(2*time.Second))
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = js.DeleteStream(ctx, stream)
}

// CreateStream makes a stream (file storage unless cfg says otherwise)
// and fails the test when it cannot.
func (c *Client) CreateStream(cfg jetstream.StreamConfig) jetstream.Stream {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.JS.CreateStream(ctx, cfg)
	if err != nil {
		c.t.Fatalf("natstest: create stream %s: %v", cfg.Name, err)
	}
	return s
}

// Msgs reads every message of the stream, in sequence order, with the
// direct get API (no consumer): it waits up to 10 s for at least want
// messages and fails the test when fewer are there.
func (c *Client) Msgs(stream string, want int) []*jetstream.RawStreamMsg {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.JS.Stream(ctx, stream)
	if err != nil {
		c.t.Fatalf("natstest: stream %s: %v", stream, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var n uint64
	for {
		info, err := s.Info(ctx)
		if err != nil {
			c.t.Fatalf("natstest: stream %s info: %v", stream, err)
		}
		n = info.State.Msgs
		if n >= uint64(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n < uint64(want) {
		c.t.Fatalf("natstest: stream %s holds %d messages, want at least %d", stream, n, want)
	}
	info, _ := s.Info(ctx)
	out := make([]*jetstream.RawStreamMsg, 0, n)
	if n == 0 {
		return out
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			if strings.Contains(err.Error(), "not found") { // a deleted message
				continue
			}
			c.t.Fatalf("natstest: stream %s message %d: %v", stream, seq, err)
		}
		out = append(out, m)
	}
	return out
}

// redacted is u without its password, for messages.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// sanitize keeps a test name to [a-z0-9_-], which a stream name may hold.
func sanitize(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}
