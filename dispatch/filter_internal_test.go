package dispatch

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/filter"
)

// A failing filter logs once per filterLogEvery, the next line counting
// the failures held back; every failure is counted. A filter that does
// not compile (a source that skipped validation) fails the same way.
func TestFilterFailureLogThrottled(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	now := time.Unix(1_800_000_000, 0)
	f := newSinkFilters(zap.New(core), func() time.Time { return now })
	spec := config.Sink{ID: "s1", Filter: `body.data.object.amount > 1000`}
	e := &envelope.Envelope{TenantID: "acme", SourceID: "throttled", Body: []byte(`{"ref":"refs/heads/main"}`)}
	c := f.countersOf("throttled", "s1")
	errs0, skip0 := c.errors.Get(), c.skipped.Get()
	for range 5 {
		var h *filter.Hook
		if f.takes("throttled", &spec, e, &h) {
			t.Fatal("a failing filter matched")
		}
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d lines for 5 failures in one interval, want 1", n)
	}
	now = now.Add(filterLogEvery + time.Second)
	var h *filter.Hook
	f.takes("throttled", &spec, e, &h)
	lines := logs.All()
	if len(lines) != 2 || lines[1].ContextMap()["held_back"] != int64(4) {
		t.Fatalf("after the interval: %d lines, the last %v; want 2, held_back 4", len(lines), lines[len(lines)-1].ContextMap())
	}
	if d := c.errors.Get() - errs0; d != 6 {
		t.Errorf("errors counted %d, want 6", d)
	}
	if d := c.skipped.Get() - skip0; d != 6 {
		t.Errorf("skipped counted %d, want 6", d)
	}

	bad := config.Sink{ID: "s2", Filter: `evnt_type == 'push'`}
	badErrs0 := f.countersOf("throttled", "s2").errors.Get()
	if f.takes("throttled", &bad, e, &h) {
		t.Fatal("a filter that does not compile matched")
	}
	if got := f.countersOf("throttled", "s2").errors.Get() - badErrs0; got != 1 {
		t.Errorf("a filter that does not compile counted %d errors, want 1", got)
	}
	// No filter: every hook, nothing counted, no hook made.
	var none *filter.Hook
	if !f.takes("throttled", &config.Sink{ID: "s3"}, e, &none) || none != nil {
		t.Fatal("a sink without a filter did not take the hook, or made a Hook for it")
	}
}
