package amqpsink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/internal/rabbittest"
	"github.com/ankusa/ankusa/internal/sinktest"
)

// BenchmarkDeliver is the sink's own drain rate against the real broker:
// inflight goroutines each deliver hooks one after another (as the
// dispatcher's attempts do at sinks[].concurrency) to a durable queue that
// a cheap consumer (no-ack) keeps empty, over the given channels. It
// reports hooks/s; ns/op is the time per hook over all goroutines.
//
//	go test -run '^$' -bench Deliver -benchtime 20000x ./dispatch/sink/amqpsink/
func BenchmarkDeliver(b *testing.B) {
	for _, c := range []struct{ inflight, channels int }{
		{32, 4}, {128, 4}, {256, 4}, {256, 8},
	} {
		b.Run(fmt.Sprintf("inflight=%d/channels=%d", c.inflight, c.channels), func(b *testing.B) {
			benchDeliver(b, c.inflight, c.channels)
		})
	}
}

func benchDeliver(b *testing.B, inflight, channels int) {
	br := rabbittest.New(b)
	x := br.Exchange("topic")
	q := br.Queue(nil, x, "bench.#")
	msgs, _ := br.Consume(q, 4096, true)
	go func() {
		for range msgs {
		}
	}()
	s, err := New(Options{Spec: config.Sink{Type: "rabbitmq", ID: "s1", URL: rabbittest.URL(), Exchange: x,
		RoutingKey: "bench.{tenant_id}", Channels: channels}, Source: "bench", Node: "n1",
		ConnectionName: "ankusa/" + br.Name("conn")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	// A first delivery connects, outside the timing.
	if err := sinktest.Deliver(s, sinktest.Envelope(), 1, "s1", 10*time.Second); err != nil {
		b.Fatal(err)
	}
	envs := make([]*dispatch.Delivery, b.N)
	for i := range envs {
		envs[i] = &dispatch.Delivery{Envelope: sinktest.Envelope(), Attempt: 1, SinkID: "s1"}
	}
	work := make(chan *dispatch.Delivery, len(envs))
	for _, d := range envs {
		work <- d
	}
	close(work)
	errs := make(chan error, inflight)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range inflight {
		go func() {
			for d := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := s.Deliver(ctx, d)
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range inflight {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "hooks/s")
}
