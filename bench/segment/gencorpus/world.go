package main

import (
	"encoding/json"
	"math"
	"time"
)

// world is the state the events are drawn from: the clock, the tenants
// and their entities.
type world struct {
	c           *ctx
	stripeShare float64
	accounts    []*stripeAccount
	orgs        []*githubOrg
	body        []byte
	redrawn     int // events drawn again for passing maxSize
}

func newWorld(seed uint64, stripeShare float64) *world {
	c := newCtx(seed)
	c.at = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	w := &world{c: c, stripeShare: stripeShare}
	for i := range stripeTenants {
		w.accounts = append(w.accounts, newStripeAccount(c, i))
	}
	for i := range githubTenants {
		w.orgs = append(w.orgs, newGithubOrg(c, i))
	}
	return w
}

// next draws the next event; body is valid until the next call.
func (w *world) next() (source, tenant, event string, body []byte) {
	c := w.c
	c.at = c.at.Add(time.Duration(c.r.ExpFloat64() * float64(20*time.Millisecond)))
	stripe := c.r.Float64() < w.stripeShare
	for { // draw again an event too big for maxSize (many labels, reviewers...)
		var tmpl gen
		var lo, hi float64 // the body size drawn, log-uniform
		if stripe {
			a := w.accounts[skewedTenant(c, len(w.accounts))]
			source, tenant, lo, hi = "stripe", a.tenant, minSize, 6<<10
			event, tmpl = stripeEvent(c, a)
		} else {
			o := w.orgs[skewedTenant(c, len(w.orgs))]
			source, tenant, lo, hi = "github", o.tenant, 2<<10, maxSize
			event, tmpl = githubEvent(c, o)
		}
		target := int(lo * math.Pow(hi/lo, c.r.Float64()))
		if w.body = sized(c, tmpl, target, w.body[:0]); len(w.body) <= maxSize {
			break
		}
		w.redrawn++
	}
	if !json.Valid(w.body) {
		panic("BUG: gencorpus: invalid JSON for " + event + ": " + string(w.body))
	}
	return source, tenant, event, w.body
}

// skewedTenant draws a tenant, the first ones much more often (a few big
// senders and a tail of small ones).
func skewedTenant(c *ctx, n int) int {
	return int(float64(n) * math.Pow(c.r.Float64(), 2.5))
}

// sized draws the template once with nothing to fill to learn its bare
// size, then again from the same random state with the lists and texts
// grown to reach target, shrinking them while the body passes maxSize.
// Bodies that cannot grow (no list) keep their natural size, and so does
// a bare body past maxSize (the caller draws another event).
func sized(c *ctx, tmpl gen, target int, b []byte) []byte {
	saved := *c.pcg
	c.fill = 0
	bare := len(tmpl(c, b[:0]))
	for range 8 {
		*c.pcg = saved
		c.fill = max(0, target-bare)
		b = tmpl(c, b[:0])
		if len(b) <= maxSize || target <= bare {
			return b
		}
		target -= len(b) - maxSize + 256
	}
	return b
}
