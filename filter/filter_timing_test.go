package filter

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/tools/loadgen/payload"
)

// BenchmarkMatch is what one filter costs the row writer per hook and sink.
func BenchmarkMatch(b *testing.B) {
	e := stripeHook("invoice.paid", 2000)
	for _, expr := range []string{
		`event_type == 'invoice.paid'`,
		`event_type.startsWith('invoice.') && tenant_id in ['acme', 'globex']`,
		`headers['stripe-signature'] != ''`,
		`body.data.object.amount > 1000`,
	} {
		p := mustCompile(b, expr)
		b.Run(expr, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(e.Body)))
			for b.Loop() {
				if ok, err := p.Match(e); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkLoadgenBody is a filter over the bench's body (loadgen -kind
// stripe -size 1KiB), without and with the body, and the parse alone.
func BenchmarkLoadgenBody(b *testing.B) {
	mix, err := payload.ParseSizeMix("1KiB")
	if err != nil {
		b.Fatal(err)
	}
	p, err := payload.NewPool("stripe", mix, 4, 1, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	body := p.Pick(rand.New(rand.NewPCG(1, 2))).Data
	e := &envelope.Envelope{SourceID: "demo", Body: body}
	for _, expr := range []string{`source_id == "demo"`, `body.type.contains(".")`} {
		pr := mustCompile(b, expr)
		b.Run(expr, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, err := pr.Match(e); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
	b.Run("parse only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pp := parsers.Get()
			pp.ParseBytes(body)
			parsers.Put(pp)
		}
	})
}
