package edge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/verify"
	"github.com/ankusa/ankusa/wal"
)

// acceptAll is a signed verifier that accepts everything: the family is
// not what is measured here.
type acceptAll struct{}

func (acceptAll) Name() string                                   { return "signed" }
func (acceptAll) Verify(verify.Headers, []byte, time.Time) error { return nil }

// TestRouterEventTypeZeroAllocs: an ordinary hook to a source whose preset
// has an event type and a POST handshake (Slack's) is committed with its
// event type, and the router path still allocates nothing: the handshake's
// pre-check and the event type's read are free.
func TestRouterEventTypeZeroAllocs(t *testing.T) {
	w := &instantWAL{}
	cfg := loadConfig(t, pathConfig)
	st := source.NewStatic(cfg)
	src := st.Snapshot().Lookup([]byte("demo"))
	var err error
	src.Verifier, err = verify.Extend(acceptAll{}, &verify.Preset{Name: "slack", Handshake: "slack", EventType: "header:User-Agent"}, config.Verify{Type: "slack"})
	if err != nil {
		t.Fatal(err)
	}
	p := newTargetCtx(t, storeRouter(t, cfg, st, w), "", 1500)
	var got envelope.Envelope
	w.inspect = func(r *wal.Request) {
		if _, err := envelope.Decode(r.Buf[wal.FrameHeaderSize:], &got); err != nil {
			t.Errorf("committed record does not decode: %v", err)
		}
	}
	if st := p.serve(true); st != fasthttp.StatusCreated {
		t.Fatalf("status %d, want 201: %s", st, p.ctx.Response.Body())
	}
	w.inspect = nil
	if got.EventType != "Stripe/1.0 (+https://stripe.com/docs/webhooks)" || !got.Verification.Verified || got.RemoteAddr == "" {
		t.Fatalf("stored event type %q, verified %v, remote %q", got.EventType, got.Verification.Verified, got.RemoteAddr)
	}
	if raceEnabled {
		return
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if p.serve(true) != fasthttp.StatusCreated {
			panic("not 201")
		}
	})
	if allocs != 0 {
		t.Errorf("router path with an event type and a handshake allocates %.2f times per request, want 0", allocs)
	}
}

// BenchmarkRouterEventType is BenchmarkRouterPath's 4KiB hook to a source
// with nothing more (plain), with Slack's handshake and an event type in
// a header, and with an event type at a JSON path (the body parsed once).
func BenchmarkRouterEventType(b *testing.B) {
	body := []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"note":"` + strings.Repeat("x", 4000) + `"}}}`)
	for _, c := range []struct {
		name   string
		preset *verify.Preset
	}{
		{"plain", nil},
		{"handshake+header", &verify.Preset{Name: "slack", Handshake: "slack", EventType: "header:User-Agent"}},
		{"json", &verify.Preset{Name: "p", EventType: "json:type"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := loadConfig(b, pathConfig)
			st := source.NewStatic(cfg)
			src := st.Snapshot().Lookup([]byte("demo"))
			src.Verifier = acceptAll{}
			if c.preset != nil {
				var err error
				if src.Verifier, err = verify.Extend(acceptAll{}, c.preset, config.Verify{}); err != nil {
					b.Fatal(err)
				}
			}
			p := newTargetCtx(b, storeRouter(b, cfg, st, &instantWAL{}), "", len(body))
			p.body = body
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if p.serve(true) != fasthttp.StatusCreated {
					b.Fatal("not 201")
				}
			}
		})
	}
}
