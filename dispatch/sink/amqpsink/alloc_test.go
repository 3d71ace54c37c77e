//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts mean nothing under it: this file is left out of race builds.

package amqpsink

import (
	"testing"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
)

// The message of a hook costs the strings the confirm goroutine keeps
// (routing key, message id), a route parameter's header name and the
// header values boxed into the table; the message, its buffer and its
// table come back from a pool.
func TestBuildAllocs(t *testing.T) {
	s := offlineSink(t, config.Sink{RoutingKey: "bench.{tenant_id}"})
	d := &dispatch.Delivery{Envelope: testEnvelope(), Attempt: 1}
	for range 4 { // warm the pool
		m, err := s.build(d)
		if err != nil {
			t.Fatal(err)
		}
		m.release()
	}
	got := testing.AllocsPerRun(200, func() {
		m, err := s.build(d)
		if err != nil {
			t.Fatal(err)
		}
		m.release()
	})
	// key, id, the parameter's header name, and the boxed event id,
	// tenant, source and parameter value.
	if want := 7.0; got > want {
		t.Errorf("build+release: %v allocations, want at most %v", got, want)
	}
}
