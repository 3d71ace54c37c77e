package amqpsink

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/rabbittest"
)

// The broker closes the sink's connection in the middle of a stream of
// publishes (rabbitmqctl close_connection, on this sink's connection
// only). Publishing resumes on a new connection; every Deliver that
// answered nil has its message in the queue; those that failed may or may
// not be there (at-least-once) and succeed when retried.
func TestServerClosesConnection(t *testing.T) {
	t.Parallel()
	b := rabbittest.New(t)
	x := b.Exchange("direct")
	q := b.Queue(nil, x, "ankusa.stripe")
	s := newSink(t, b, config.Sink{Exchange: x, Timeout: config.Duration(5 * time.Second)})

	type result struct {
		e   *envelope.Envelope
		err error
	}
	var (
		mu      sync.Mutex
		results []result
	)
	record := func(e *envelope.Envelope, err error) {
		mu.Lock()
		results = append(results, result{e, err})
		mu.Unlock()
	}
	first := testEnvelope()
	err := deliver(s, first, 1)
	record(first, err)
	if err != nil {
		t.Fatal(err)
	}
	conn := rabbittest.FindConn(t, s.o.ConnectionName)

	var oks, oksAfter atomic.Int64
	var closed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt() // also when a check below fails the test
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e := testEnvelope()
				err := deliver(s, e, 1)
				record(e, err)
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the dispatcher backs off too
					continue
				}
				oks.Add(1)
				if closed.Load() {
					oksAfter.Add(1)
				}
			}
		})
	}

	deadline := time.Now().Add(15 * time.Second)
	for oks.Load() < 300 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	conn.Close(t, "ankusa test: closed mid-stream")
	closed.Store(true)
	for oksAfter.Load() < 300 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	halt()
	if oksAfter.Load() < 300 {
		t.Fatalf("publishing did not resume: %d ok after the close", oksAfter.Load())
	}
	if after := rabbittest.FindConn(t, s.o.ConnectionName); after.Name == conn.Name {
		t.Fatalf("still on connection %q after closing it", conn.Name)
	}

	// Retry the failures (the dispatcher would).
	var failed []*envelope.Envelope
	kinds := map[string]int{}
	for _, r := range results {
		if r.err == nil {
			continue
		}
		failed = append(failed, r.e)
		switch {
		case errors.Is(r.err, ErrNoConfirm):
			kinds["no confirm"]++
		case errors.Is(r.err, ErrNotConnected):
			kinds["not connected"]++
		default:
			kinds["publish failed"]++
		}
		if len(failed) <= 3 {
			t.Logf("failed attempt: %v", r.err)
		}
	}
	for _, e := range failed {
		if err := deliver(s, e, 2); err != nil {
			t.Fatalf("retry of %s: %v", e.ID, err)
		}
	}

	n := b.Count(q)
	got := map[string]int{}
	for _, m := range b.Drain(q, n) {
		got[m.MessageId]++
	}
	okFirst, failedPresent := 0, 0
	for _, r := range results {
		if got[r.e.ID.String()] == 0 {
			t.Errorf("%s was delivered (err %v, then retried) but is not in the queue", r.e.ID, r.err)
		}
		if r.err == nil {
			okFirst++
		} else if got[r.e.ID.String()] > 1 {
			failedPresent++ // the failed attempt's message arrived after all
		}
	}
	if len(got) != len(results) {
		t.Errorf("queue holds %d distinct ids, %d were published", len(got), len(results))
	}
	t.Logf("close_connection %s (%q) mid-stream: %d attempts, %d ok (%d before the close, %d after), %d errors %v, all %d retried ok; "+
		"queue: %d messages, %d distinct ids, %d failed attempts whose message arrived anyway (duplicates)",
		conn.PID, conn.Name, len(results), okFirst, okFirst-int(oksAfter.Load()), oksAfter.Load(), len(failed), kinds, len(failed),
		n, len(got), failedPresent)
}
