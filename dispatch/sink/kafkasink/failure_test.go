package kafkasink

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/envelope"
)

// countProduces counts the cluster's produce requests and the records
// in them, passing each request on.
func countProduces(c *kfake.Cluster) (reqs, recs *atomic.Int64) {
	reqs, recs = new(atomic.Int64), new(atomic.Int64)
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		reqs.Add(1)
		for _, tp := range kr.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				var b kmsg.RecordBatch
				if b.ReadFrom(p.Records) == nil {
					recs.Add(int64(b.NumRecords))
				}
			}
		}
		return nil, nil, false
	})
	return reqs, recs
}

// deliverAll runs n Delivers from g goroutines, retrying a retryable
// error after a short pause as the dispatcher would (at most tries
// attempts), and returns the ids delivered and the errors seen.
func deliverAll(t *testing.T, s *Sink, n, g, tries int) (ids map[string]bool, perm, retried int) {
	t.Helper()
	var mu sync.Mutex
	ids = map[string]bool{}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				e := testEnvelope()
				for a := 1; ; a++ {
					err := deliver(s, e, a)
					mu.Lock()
					switch {
					case err == nil:
						ids[e.ID.String()] = true
					case asError(t, err).Permanent:
						perm++
						t.Errorf("permanent: %v", err)
					default:
						retried++
					}
					mu.Unlock()
					if err == nil || a >= tries || asError(t, err).Permanent {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	return ids, perm, retried
}

func checkConsumed(t *testing.T, addrs []string, topic string, ids map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range consume(t, addrs, topic, len(ids)) {
		id := headers(t, r)[HeaderEventID]
		if !ids[id] || seen[id] {
			t.Fatalf("record %s: delivered %v, seen before %v", id, ids[id], seen[id])
		}
		seen[id] = true
	}
}

func TestManyInFlightBatch(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(3, "load"))
	reqs, recs := countProduces(c)
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "load", Key: "{event_id}"})
	const n = 2000
	start := time.Now()
	ids, perm, retried := deliverAll(t, s, n, 64, 1)
	took := time.Since(start)
	if len(ids) != n || perm+retried > 0 {
		t.Fatalf("%d of %d delivered, %d permanent, %d retryable errors", len(ids), n, perm, retried)
	}
	// One record per round trip would be 2000 produce requests. Without
	// linger, records that come while a request is in flight go in the
	// next one: 2.7 to 7 records a request here, depending on how busy
	// the machine is (the faster the broker, the smaller the batches).
	t.Logf("%d hooks from 64 goroutines in %v: %d produce requests, %d records (%.1f records per request)",
		n, took, reqs.Load(), recs.Load(), float64(recs.Load())/float64(reqs.Load()))
	if reqs.Load() > n*2/3 {
		t.Errorf("%d produce requests for %d hooks: records are not batched", reqs.Load(), n)
	}
	if took > 10*time.Second {
		t.Errorf("%d hooks took %v", n, took)
	}
	checkConsumed(t, c.ListenAddrs(), "load", ids)
}

func TestBrokerRestart(t *testing.T) {
	t.Parallel()
	// The same ports and the same data directory: the brokers come back
	// with their log and topic ids, as a restarted Kafka does.
	ports, dir := freePorts(t, 3), t.TempDir()
	c1, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.Ports(ports...), kfake.SeedTopics(2, "hooks"), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	addrs := c1.ListenAddrs()
	s := newSink(t, addrs, config.Sink{Topic: "hooks", Timeout: config.Duration(time.Second)})
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatal(err)
	}
	c1.Close()

	down := testEnvelope()
	down.ReceivedAt = time.Now().Add(-time.Hour).UnixNano() // a retry of an old hook
	err = deliver(s, down, 1)
	de := asError(t, err)
	if de.Permanent || de.Answered {
		t.Fatalf("cluster down: %v (permanent %v, answered %v), want retryable and not answered", err, de.Permanent, de.Answered)
	}
	t.Logf("cluster down: %v", err)

	c2, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.Ports(ports...), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	var last error
	attempts := 1
	for a := 2; a < 40; a++ {
		attempts = a
		if last = deliver(s, down, a); last == nil {
			break
		}
		if asError(t, last).Permanent {
			t.Fatalf("after the restart, attempt %d: permanent %v", a, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("after the restart: %v", last)
	}
	if err := deliver(s, testEnvelope(), 1); err != nil {
		t.Fatalf("a new hook after the restart: %v", err)
	}
	// The hook before the restart, the new one and the retried one: once
	// for the attempt that was acknowledged, and maybe once more for each
	// attempt that timed out while the cluster was away or coming back
	// (its record may have reached the broker after the attempt gave up:
	// at-least-once), never more than the attempts made.
	rs := consumeAtLeast(t, c2.ListenAddrs(), "hooks", 3)
	n := 0
	for _, r := range rs {
		if headers(t, r)[HeaderEventID] == down.ID.String() {
			n++
		}
	}
	t.Logf("after the restart: %d records, the retried hook %d times", len(rs), n)
	if n < 1 || n > attempts || len(rs) != 2+n {
		t.Errorf("%d records, the retried hook %d times in %d attempts; want it 1 to %d times beside the 2 others", len(rs), n, attempts, attempts)
	}
}

// freePorts returns n ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

func TestLeaderMovesUnderLoad(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(6, "moving"))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "moving", Key: "{event_id}"})
	stop := make(chan struct{})
	var moves atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if i%2 == 0 {
				c.ShufflePartitionLeaders()
			} else if err := c.MoveTopicPartition("moving", int32(i%6), int32(i%3)); err != nil {
				t.Errorf("move: %v", err)
			}
			moves.Add(1)
		}
	})
	const n = 1500
	ids, perm, retried := deliverAll(t, s, n, 32, 20)
	close(stop)
	wg.Wait()
	t.Logf("%d hooks, %d leader moves: %d retryable errors, %d permanent", n, moves.Load(), retried, perm)
	if len(ids) != n || perm > 0 {
		t.Fatalf("%d of %d delivered, %d permanent", len(ids), n, perm)
	}
	if moves.Load() < 5 {
		t.Fatalf("only %d leader moves during the load", moves.Load())
	}
	checkConsumed(t, c.ListenAddrs(), "moving", ids)
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 4096
	c := newCluster(t, kfake.SeedTopics(1, "small"), kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(limit)}))
	// A long linger puts the small hooks in the big one's batch.
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "small"})
	big := testEnvelope()
	big.Body = make([]byte, 2*limit)
	_, _ = rand.Read(big.Body) // incompressible
	var wg sync.WaitGroup
	errs := make([]error, 21)
	small := make([]*envelope.Envelope, 20)
	for i := range small {
		small[i] = testEnvelope()
	}
	wg.Go(func() { errs[20] = deliver(s, big, 1) })
	for i := range small {
		wg.Go(func() { errs[i] = deliver(s, small[i], 1) })
	}
	wg.Wait()
	de := asError(t, errs[20])
	if !de.Permanent || !errors.Is(errs[20], ErrRefused) || !strings.Contains(errs[20].Error(), "MESSAGE_TOO_LARGE") {
		t.Fatalf("too large: %v (permanent %v), want a permanent MESSAGE_TOO_LARGE", errs[20], de.Permanent)
	}
	t.Logf("too large: %v", errs[20])
	ids := map[string]bool{}
	for i, err := range errs[:20] {
		if err != nil {
			t.Errorf("small hook %d: %v", i, err)
		}
		ids[small[i].ID.String()] = true
	}
	checkConsumed(t, c.ListenAddrs(), "small", ids)

	// Larger than the client's own batch limit: refused before sending.
	huge := testEnvelope()
	huge.Body = make([]byte, 2<<20)
	if err := deliver(s, huge, 1); !asError(t, err).Permanent {
		t.Fatalf("2 MiB record: %v, want permanent", err)
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	reader := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "authz", Pattern: kmsg.ACLResourcePatternTypeLiteral,
		Operation: kmsg.ACLOperationRead, Allow: true}
	c := newCluster(t, kfake.SeedTopics(1, "authz"), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "ankusa", "right-password"),
		kfake.Superuser("PLAIN", "plainuser", "plain-password"),
		kfake.User("PLAIN", "reader", "reader-password", reader),
		kfake.Superuser("PLAIN", "kafkalike", "kafkalike-password"))
	// A real broker answers a failed SASL authentication with
	// SASL_AUTHENTICATION_FAILED before it closes the connection; kfake
	// closes it at once. For user kafkalike, answer as Kafka does.
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.SASLAuthenticateRequest)
		if !bytes.Contains(req.SASLAuthBytes, []byte("\x00kafkalike\x00")) || bytes.HasSuffix(req.SASLAuthBytes, []byte("\x00kafkalike-password")) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed: Invalid username or password"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	sasl := func(mech, user, pass string) config.Sink {
		return config.Sink{Topic: "authz", Timeout: config.Duration(3 * time.Second),
			SASL: &config.SASL{Mechanism: mech, Username: user, Password: config.Secret{Ref: "env:X", Value: pass}}}
	}
	for _, sp := range []config.Sink{sasl("scram-sha-256", "ankusa", "right-password"), sasl("plain", "plainuser", "plain-password")} {
		if err := deliver(newSink(t, c.ListenAddrs(), sp), testEnvelope(), 1); err != nil {
			t.Fatalf("%s: %v", sp.SASL.Mechanism, err)
		}
	}
	for _, tc := range []struct {
		name     string
		sp       config.Sink
		answered bool
	}{
		// Kafka's answers: retryable, answered (the cluster is up).
		{"SASL_AUTHENTICATION_FAILED", sasl("plain", "kafkalike", "wrong-password"), true},
		{"no WRITE on the topic", sasl("plain", "reader", "reader-password"), true},
		// kfake drops the connection on a wrong password: that reads as
		// a network failure, retryable and not answered.
		{"kfake, wrong scram password", sasl("scram-sha-256", "ankusa", "wrong-password"), false},
		{"kfake, wrong mechanism", sasl("scram-sha-512", "ankusa", "right-password"), false},
	} {
		err := deliver(newSink(t, c.ListenAddrs(), tc.sp), testEnvelope(), 1)
		de := asError(t, err)
		t.Logf("%s: %v (answered %v)", tc.name, err, de.Answered)
		if de.Permanent || de.Answered != tc.answered || tc.answered != errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: %v (permanent %v answered %v), want retryable, answered %v", tc.name, err, de.Permanent, de.Answered, tc.answered)
		}
		if strings.Contains(err.Error(), tc.sp.SASL.Password.Value) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

func TestSlowBroker(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "slow"))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "slow", Timeout: config.Duration(300 * time.Millisecond)})
	if err := deliver(s, testEnvelope(), 1); err != nil { // connected, metadata known
		t.Fatal(err)
	}
	release := make(chan struct{})
	var slept atomic.Int64
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-release:
			c.DropControl()
		default:
			slept.Add(1)
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	e := testEnvelope()
	start := time.Now()
	err := deliver(s, e, 1)
	took := time.Since(start)
	de := asError(t, err)
	if de.Permanent || de.Answered || !errors.Is(err, ErrNoAck) || !strings.Contains(err.Error(), "may still be at the broker") {
		t.Fatalf("slow broker: %v (permanent %v answered %v), want a retryable ErrNoAck", err, de.Permanent, de.Answered)
	}
	if took > 2*time.Second || slept.Load() == 0 {
		t.Fatalf("the attempt took %v (timeout 300ms), %d produce requests slept", took, slept.Load())
	}
	close(release)
	var last error
	for a := 2; a < 30; a++ {
		if last = deliver(s, e, a); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("after the broker woke: %v", last)
	}
	// The first hook, the slept attempt (it was written when the broker
	// woke: at-least-once) and the retry, or the retry alone.
	rs := consume(t, c.ListenAddrs(), "slow", 3)
	n := 0
	for _, r := range rs {
		if headers(t, r)[HeaderEventID] == e.ID.String() {
			n++
		}
	}
	if n < 1 {
		t.Fatal("the retried hook is not in the topic")
	}
}

func TestUnknownTopic(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kfake.SeedTopics(1, "exists"))
	s := newSink(t, c.ListenAddrs(), config.Sink{Topic: "missing", Timeout: config.Duration(10 * time.Second)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := s.Deliver(ctx, &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1})
	de := asError(t, err)
	t.Logf("missing topic: %v", err)
	if de.Permanent || !de.Answered || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("missing topic: %v (permanent %v answered %v), want retryable and answered", err, de.Permanent, de.Answered)
	}
}
