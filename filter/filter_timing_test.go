package filter

import "testing"

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
