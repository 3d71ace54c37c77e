package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/sinktest"
)

// newCluster starts an in-process Kafka cluster (kfake) of three brokers
// with the given options and closes it at the end of the test.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newSink builds a sink of spec against addrs (spec.Brokers when set),
// closed at the end of the test. Timeouts are short: tests wait for them.
func newSink(t *testing.T, addrs []string, spec config.Sink) *Sink {
	t.Helper()
	spec.Type = "kafka"
	if spec.Brokers == nil {
		spec.Brokers = addrs
	}
	if spec.ID == "" {
		spec.ID = "k1"
	}
	if spec.Timeout == 0 {
		spec.Timeout = config.Duration(5 * time.Second)
	}
	if spec.ConnectTimeout == 0 {
		spec.ConnectTimeout = config.Duration(time.Second)
	}
	s, err := New(Options{Spec: spec, Source: "stripe", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testEnvelope is a hook with a unique id.
func testEnvelope() *envelope.Envelope { return sinktest.Envelope() }

func deliver(s *Sink, e *envelope.Envelope, attempt int) error {
	return sinktest.Deliver(s, e, attempt, "k1", 20*time.Second)
}

// consume reads n records of topic from the start, failing the test when
// they do not come within 15 s or more come than n.
func consume(t *testing.T, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	return consumeWith(t, addrs, topic, n)
}

// consumeWith is consume with more client options.
func consumeWith(t *testing.T, addrs []string, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	out := consumeAtLeast(t, addrs, topic, n, opts...)
	if len(out) != n {
		t.Fatalf("topic %s: %d records, want %d", topic, len(out), n)
	}
	return out
}

// consumeAtLeast reads at least n records of topic from the start, and
// those that follow within a short poll.
func consumeAtLeast(t *testing.T, addrs []string, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("topic %s: %d records within 15 s, want %d", topic, len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	// Anything beyond n (a duplicate) shows up within a short poll.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	return append(out, cl.PollFetches(short).Records()...)
}

// headers returns a record's headers as a map; a repeated name fails the
// test.
func headers(t *testing.T, r *kgo.Record) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, h := range r.Headers {
		if _, dup := m[h.Key]; dup {
			t.Errorf("header %s twice", h.Key)
		}
		m[h.Key] = string(h.Value)
	}
	return m
}

func checkHeaders(t *testing.T, r *kgo.Record, want map[string]string) {
	t.Helper()
	got := headers(t, r)
	if len(got) != len(want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("header %s = %q (present %v), want %q", k, g, ok, v)
		}
	}
}

// asError returns err's *dispatch.Error, failing the test when it is
// nil or another type.
func asError(t *testing.T, err error) *dispatch.Error {
	t.Helper()
	de, ok := err.(*dispatch.Error)
	if !ok {
		t.Fatalf("error %T %v, want a *dispatch.Error", err, err)
	}
	return de
}
