package filter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// list is a CEL list literal of n ints.
func list(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(itoa(i + 1))
	}
	b.WriteByte(']')
	return b.String()
}

// TestCostLimit: nested comprehensions that would visit 40^4 elements stop
// at the cost limit, with an error, in about a millisecond.
func TestCostLimit(t *testing.T) {
	l := list(40)
	expr := l + `.all(x, ` + l + `.all(y, ` + l + `.all(z, ` + l + `.all(w, x + y + z + w > 0))))`
	p := mustCompile(t, expr)
	e := stripeHook("invoice.paid", 10)
	start := time.Now()
	ok, err := p.Match(e)
	took := time.Since(start)
	if ok || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("Match = %v, %v; want false and the cost limit", ok, err)
	}
	// Generous for a loaded machine and -race; unbounded would be minutes.
	if took > 500*time.Millisecond {
		t.Fatalf("the cost limit stopped the filter after %v", took)
	}
	t.Logf("stopped after %v", took)

	// A body-driven loop is bounded the same way.
	big := `{"items":` + list(30000) + `}`
	p = mustCompile(t, `body.items.exists(i, i == -1)`)
	ok, err = p.Match(&envelope.Envelope{Body: []byte(big)})
	if ok || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("a loop over a 30000-element body = %v, %v; want the cost limit", ok, err)
	}
}

// TestCostRefusedAtCompile: an expression whose least cost is already
// past the limit never gets a program.
func TestCostRefusedAtCompile(t *testing.T) {
	l := list(200)
	_, err := Compile(l + `.map(x, ` + l + `.map(y, x * y)).size() > 0`)
	if err == nil || !strings.Contains(err.Error(), "past the limit of 25000") {
		t.Fatalf("Compile = %v, want the cost refused", err)
	}
}

// TestInterrupted: a comprehension stops when the caller's context ends
// (the node stopping), before the cost limit.
func TestInterrupted(t *testing.T) {
	p := mustCompile(t, list(100)+`.all(x, `+list(100)+`.all(y, x * y > 0))`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := p.Eval(ctx, NewHook(stripeHook("invoice.paid", 10)))
	if ok || err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Eval on a done context = %v, %v; want it interrupted", ok, err)
	}
}

// TestBodyWorkBounded: CEL charges about one unit for reading a body
// array or comparing two objects, whatever their size; what reading the
// body touches is held to WorkLimit, so a loop over a large body that
// reads it again on every turn ends in milliseconds, not seconds.
func TestBodyWorkBounded(t *testing.T) {
	var graph strings.Builder
	graph.WriteString(`{"value":[`)
	for i := 0; graph.Len() < 1<<20; i++ {
		if i > 0 {
			graph.WriteByte(',')
		}
		graph.WriteString(`{"changeType":"created","resource":"users/` + itoa(i) + `"}`)
	}
	graph.WriteString(`]}`)
	ones := `{"items":[` + strings.Repeat("1,", 200_000) + `1]}`
	wide := `{"value":[` + strings.Repeat(`{"a":1,"b":[1,2,3,4,5,6,7,8],"c":"x"},`, 20_000) + `{}]}`
	for _, tc := range []struct{ name, body, expr string }{
		{"array read again each turn", graph.String(), `body.value.all(v, v.changeType == body.value[0].changeType)`},
		{"scalar list read again each turn", ones, `body.items.all(i, i == body.items[0])`},
		{"object equality each turn", wide, `body.value.all(v, v == body.value[0])`},
		{"object iterated each turn", wide, `body.value.all(v, body.value[0].all(k, k != ''))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.expr)
			start := time.Now()
			ok, err := p.Match(&envelope.Envelope{Body: []byte(tc.body)})
			took := time.Since(start)
			t.Logf("%v, %v after %v", ok, err, took)
			if err == nil {
				t.Fatalf("Match = %v with no error; want a limit", ok)
			}
			// Generous for a loaded machine (the parse of a 1 MiB body
			// included; 6–320 ms alone, up to 615 ms under -race alone and
			// 1.1 s under -race beside other packages); unbounded took
			// seconds to minutes, several times that under -race.
			bound := time.Second
			if raceEnabled {
				bound = 5 * time.Second
			}
			if took > bound {
				t.Fatalf("stopped after %v (bound %v)", took, bound)
			}
		})
	}
	// An honest filter over the same large body still works.
	p := mustCompile(t, `body.value[0].changeType == 'created' && size(body.value) > 1000`)
	if ok, err := p.Match(&envelope.Envelope{Body: []byte(graph.String())}); !ok || err != nil {
		t.Fatalf("Match = %v, %v; want true", ok, err)
	}
}
