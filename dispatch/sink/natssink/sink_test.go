package natssink

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/natstest"
)

func checkHeaders(t *testing.T, got nats.Header, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if vs := got[k]; len(vs) != 1 || vs[0] != v {
			t.Errorf("header %s = %q, want %q", k, vs, v)
		}
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, c := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject})
	if !s.Durable() {
		t.Fatal("Durable() = false")
	}
	if s.o.Spec.Format != "envelope" {
		t.Fatalf("default format %q, want envelope", s.o.Spec.Format)
	}

	e := testEnvelope()
	e.Verification.Flagged = true
	e.RouteParams = append(e.RouteParams, envelope.Param{Key: "region", Value: "eu"})
	if err := deliver(s, e, 3); err != nil {
		t.Fatal(err)
	}
	m := c.Msgs(stream, 1)[0]
	if want := strings.Replace(subject, "{tenant_id}.{source_id}", "acme.stripe", 1); m.Subject != want {
		t.Errorf("subject %q, want %q", m.Subject, want)
	}
	if want := e.AppendJSON(nil); !bytes.Equal(m.Data, want) {
		t.Errorf("data:\n got %s\nwant %s", m.Data, want)
	}
	id := e.ID.String()
	checkHeaders(t, m.Header, map[string]string{
		"Nats-Msg-Id":                id,
		HeaderEventID:                id,
		HeaderTenant:                 "acme",
		HeaderSource:                 "stripe",
		HeaderAttempt:                "3",
		HeaderFlagged:                "true",
		HeaderParamPrefix + "app_id": "a1",
		HeaderParamPrefix + "region": "eu",
		"Content-Type":               "application/json",
	})
	var back envelope.Envelope
	if err := back.UnmarshalJSON(m.Data); err != nil {
		t.Fatalf("the data is not the envelope's JSON form: %v", err)
	}
	if back.ID != e.ID || !bytes.Equal(back.Body, e.Body) {
		t.Errorf("decoded envelope: id %v body %q", back.ID, back.Body)
	}
}

func TestRawRoundTrip(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	c := natstest.Connect(t, u)
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: prefix + ".raw.{tenant_id}.{params.app_id}", Format: "raw"})

	e := testEnvelope()
	e.Body = []byte{0, 1, 2, 0xff, 'a', '\n'} // not UTF-8: raw is bytes
	e.Headers = []envelope.Header{{Name: "X-Other", Value: "1"}, {Name: "content-type", Value: "application/octet-stream"}}
	noType := testEnvelope()
	noType.Headers = nil
	claimed := testEnvelope()
	claimed.Body = nil
	claimed.BodyClaim = &envelope.Claim{Store: "packs", Key: "claims/tenant=acme/source=stripe/2026/12/05/p1", Offset: 4096, Length: 1 << 20,
		SHA256: strings.Repeat("ab", 32)}
	for i, x := range []*envelope.Envelope{e, noType, claimed} {
		if err := deliver(s, x, 1); err != nil {
			t.Fatalf("hook %d: %v", i, err)
		}
	}
	ms := c.Msgs(stream, 3)
	if ms[0].Subject != prefix+".raw.acme.a1" || !bytes.Equal(ms[0].Data, e.Body) {
		t.Errorf("subject %q data %q, want %q %q", ms[0].Subject, ms[0].Data, prefix+".raw.acme.a1", e.Body)
	}
	base := func(x *envelope.Envelope) map[string]string {
		return map[string]string{"Nats-Msg-Id": x.ID.String(), HeaderEventID: x.ID.String(), HeaderTenant: "acme", HeaderSource: "stripe",
			HeaderAttempt: "1", HeaderParamPrefix + "app_id": "a1"}
	}
	want := base(e)
	want["Content-Type"] = "application/octet-stream"
	checkHeaders(t, ms[0].Header, want)
	checkHeaders(t, ms[1].Header, base(noType)) // no Content-Type at all
	if !bytes.Equal(ms[1].Data, noType.Body) {
		t.Errorf("data %q, want %q", ms[1].Data, noType.Body)
	}
	want = base(claimed)
	want["Content-Type"] = "application/json; charset=utf-8"
	want[HeaderBodyClaim] = string(claimed.BodyClaim.AppendJSON(nil))
	checkHeaders(t, ms[2].Header, want)
	if len(ms[2].Data) != 0 {
		t.Errorf("a claimed hook's data is %d bytes, want none", len(ms[2].Data))
	}
	back, err := envelope.ParseClaim([]byte(ms[2].Header.Get(HeaderBodyClaim)))
	if err != nil || back != *claimed.BodyClaim {
		t.Errorf("the claim header reads back as %+v, %v", back, err)
	}

	// In the envelope format a claimed body is the JSON's body_claim.
	s2 := newSink(t, u, config.Sink{ID: "s2", Stream: stream, Subject: prefix + ".env"})
	again := *claimed
	again.ID = testEnvelope().ID // another event: the same id would be a duplicate
	claimed = &again
	if err := deliver(s2, claimed, 2); err != nil {
		t.Fatal(err)
	}
	m := c.Msgs(stream, 4)[3]
	if want := claimed.AppendJSON(nil); !bytes.Equal(m.Data, want) || !bytes.Contains(m.Data, []byte(`"body_claim":{"store":"packs"`)) {
		t.Errorf("data %s, want %s", m.Data, want)
	}
	if m.Header.Get(HeaderBodyClaim) != "" {
		t.Error("the envelope format carries the claim header too")
	}
}

// 2000 hooks from 64 goroutines: each acked once and in the stream once.
func TestConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, c := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject})

	const workers, total = 64, 2000
	envs := make([]*envelope.Envelope, total)
	for i := range envs {
		envs[i] = testEnvelope()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, total)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				if err := deliver(s, envs[i], 1); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("delivery failed: %v", err)
	}
	t.Logf("%d acked deliveries from %d goroutines in %v", total, workers, time.Since(start))
	ms := c.Msgs(stream, total)
	if len(ms) != total {
		t.Fatalf("stream holds %d, want %d", len(ms), total)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		id := m.Header.Get("Nats-Msg-Id")
		if seen[id] {
			t.Fatalf("duplicate %s", id)
		}
		seen[id] = true
	}
	for _, e := range envs {
		if !seen[e.ID.String()] {
			t.Fatalf("%s acked but not in the stream", e.ID)
		}
	}
}

// A retried publish of one event id within the duplicate window is acked
// (Duplicate) and stored once.
func TestDuplicateWithinWindow(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, c := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage, Duplicates: time.Minute})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject})
	e, other := testEnvelope(), testEnvelope()
	before := duplicateTotal.Get()
	for attempt := 1; attempt <= 3; attempt++ {
		if err := deliver(s, e, attempt); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	if err := deliver(s, other, 1); err != nil {
		t.Fatal(err)
	}
	if d := duplicateTotal.Get() - before; d < 2 {
		t.Errorf("duplicate acks counted %d, want at least 2", d)
	}
	ms := c.Msgs(stream, 2)
	if len(ms) != 2 || ms[0].Header.Get(HeaderEventID) != e.ID.String() || ms[1].Header.Get(HeaderEventID) != other.ID.String() {
		t.Fatalf("stream holds %d messages, want the hook once and the other one", len(ms))
	}
	if ms[0].Header.Get(HeaderAttempt) != "1" {
		t.Errorf("the stored copy is attempt %s, want the first", ms[0].Header.Get(HeaderAttempt))
	}
}

// create_stream makes a missing stream with the keys given, subjects
// defaulting to the subject template with wildcards.
func TestCreateStream(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	s := newSink(t, u, config.Sink{Stream: stream, Subject: prefix + ".{tenant_id}.{source_id}",
		CreateStream: &config.CreateStream{Storage: "memory", MaxBytes: 1 << 20, MaxAge: config.Duration(time.Hour),
			DuplicateWindow: config.Duration(30 * time.Second)}})
	e := testEnvelope()
	if err := deliver(s, e, 1); err != nil {
		t.Fatal(err)
	}
	c := natstest.Connect(t, u)
	st, err := c.JS.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if len(cfg.Subjects) != 1 || cfg.Subjects[0] != prefix+".*.*" || cfg.Storage != jetstream.MemoryStorage || cfg.Replicas != 1 ||
		cfg.MaxBytes != 1<<20 || cfg.MaxAge != time.Hour || cfg.Duplicates != 30*time.Second {
		t.Errorf("created stream: subjects %v storage %v replicas %d max_bytes %d max_age %v duplicates %v",
			cfg.Subjects, cfg.Storage, cfg.Replicas, cfg.MaxBytes, cfg.MaxAge, cfg.Duplicates)
	}
	if ms := c.Msgs(stream, 1); ms[0].Header.Get(HeaderEventID) != e.ID.String() {
		t.Errorf("message %v", ms[0].Header)
	}
}

// An operator's stream is never changed by create_stream.
func TestCreateStreamKeepsExisting(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, c := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage, MaxAge: time.Hour, Duplicates: time.Minute})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject,
		CreateStream: &config.CreateStream{Storage: "file", Subjects: []string{"other.>"}, MaxAge: config.Duration(2 * time.Hour)}})
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	st, err := c.JS.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxAge != time.Hour || cfg.Storage != jetstream.MemoryStorage || len(cfg.Subjects) != 1 || cfg.Subjects[0] == "other.>" {
		t.Errorf("the existing stream was changed: %+v", cfg)
	}
}

// A missing stream is a clear retryable error naming stream and url, the
// server answered; once the stream is made the sink delivers.
func TestMissingStream(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	s := newSink(t, u, config.Sink{Stream: stream, Subject: prefix + ".{tenant_id}"})
	e := testEnvelope()
	err := deliver(s, e, 1)
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrNoStream) || de.Permanent || !de.Answered || !strings.Contains(err.Error(), stream) ||
		!strings.Contains(err.Error(), "does not exist at "+u) {
		t.Fatalf("err = %v (permanent %v answered %v), want a retryable answered ErrNoStream naming %s and %s", err, de.Permanent, de.Answered, stream, u)
	}
	c := natstest.Connect(t, u)
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".*"}, Storage: jetstream.MemoryStorage})
	if n, err := deliverUntil(s, e, 5*time.Second); err != nil {
		t.Fatalf("after the stream was made, %d attempts: %v", n, err)
	}
	c.Msgs(stream, 1)
}

// The stream is there but does not hold the subject: no responders, a
// retryable error with the server up (Answered).
func TestNoStreamForSubject(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	c := natstest.Connect(t, u)
	c.CreateStream(jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".held.>"}, Storage: jetstream.MemoryStorage})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: prefix + ".elsewhere.{tenant_id}"})
	err := deliver(s, testEnvelope(), 1)
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrNoStream) || de.Permanent || !de.Answered || !strings.Contains(err.Error(), prefix+".elsewhere.acme") {
		t.Fatalf("err = %v (permanent %v answered %v), want a retryable answered ErrNoStream naming the subject", err, de.Permanent, de.Answered)
	}
	t.Log(err)
}

// A subject bound to another stream: the PubAck names it, and that is not
// an ok for this sink.
func TestPubAckFromAnotherStream(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	other, subject, _ := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage})
	mine, _, _ := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage})
	s := newSink(t, u, config.Sink{Stream: mine, Subject: subject})
	err := deliver(s, testEnvelope(), 1)
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrRefused) || de.Permanent || !de.Answered || !strings.Contains(err.Error(), other) {
		t.Fatalf("err = %v, want a retryable answered ErrRefused naming stream %s", err, other)
	}
}

// A stream at max_bytes with discard new refuses: retryable, answered;
// once it is purged the next attempt is stored.
func TestStreamFull(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, c := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.FileStorage, MaxBytes: 4096, Discard: jetstream.DiscardNew})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject})
	var err error
	stored := 0
	for ; stored < 100; stored++ {
		if err = deliver(s, testEnvelope(), 1); err != nil {
			break
		}
	}
	de := dispatch.AsError(err)
	if !errors.Is(err, ErrRefused) || de.Permanent || !de.Answered || !strings.Contains(err.Error(), "full") {
		t.Fatalf("after %d stored: err = %v, want a retryable answered ErrRefused (stream full)", stored, err)
	}
	t.Logf("%d stored, then: %v", stored, err)
	st, err := c.JS.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := deliver(s, testEnvelope(), 2); err != nil {
		t.Fatalf("after a purge: %v", err)
	}
}

// A message over the stream's max_msg_size is never taken: permanent.
func TestOverMaxMsgSize(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, subject, _ := streamOn(t, u, jetstream.StreamConfig{Storage: jetstream.MemoryStorage, MaxMsgSize: 2048})
	s := newSink(t, u, config.Sink{Stream: stream, Subject: subject, Format: "raw"})
	e := testEnvelope()
	e.Body = bytes.Repeat([]byte("x"), 4096)
	err := deliver(s, e, 1)
	if !errors.Is(err, ErrTooLarge) || !dispatch.AsError(err).Permanent || !strings.Contains(err.Error(), "max_msg_size") {
		t.Fatalf("err = %v, want a permanent ErrTooLarge naming max_msg_size", err)
	}
	t.Log(err)
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatalf("a small hook after it: %v", err)
	}
}

// A subject that a hook's route parameter makes invalid is permanent.
func TestInvalidSubject(t *testing.T) {
	t.Parallel()
	u := natstest.URL(t)
	stream, prefix := natstest.Names(t, u)
	s := newSink(t, u, config.Sink{Stream: stream, Subject: prefix + ".{params.app_id}"})
	for _, v := range []string{"", "a b", "*", "x..y"} {
		e := testEnvelope()
		e.RouteParams = []envelope.Param{{Key: "app_id", Value: v}}
		err := deliver(s, e, 1)
		if err == nil || !dispatch.AsError(err).Permanent || !strings.Contains(err.Error(), "subject") {
			t.Errorf("param %q: err = %v, want a permanent error naming the subject", v, err)
		}
	}
}
