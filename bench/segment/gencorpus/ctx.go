package main

import (
	"math/rand/v2"
	"time"
)

// ctx is the event being drawn: the random source, the event's clock, the
// size left to fill, and the tenant and entities its template refers to.
type ctx struct {
	pcg  *rand.PCG // r's state, saved and restored to draw an event twice
	r    *rand.Rand
	zipf *rand.Zipf // word ranks for prose
	at   time.Time
	fill int

	// Stripe events.
	acct   *stripeAccount
	cus    *customer
	amount int64
	object string // id of the event's data.object
	flow   *flow  // the payment the event is about

	// GitHub events.
	org    *githubOrg
	repo   *repository
	actor  *ghUser
	number int64
	sha    []byte // the commit being drawn
}

func newCtx(seed uint64) *ctx {
	pcg := rand.NewPCG(seed, seed^0x5bd1e9955bd1e995)
	r := rand.New(pcg)
	return &ctx{pcg: pcg, r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(vocabulary)-1))}
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (c *ctx) base62(b []byte, n int) []byte {
	for range n {
		b = append(b, base62[c.r.IntN(len(base62))])
	}
	return b
}

func (c *ctx) hex(b []byte, n int) []byte {
	for range n {
		b = append(b, "0123456789abcdef"[c.r.IntN(16)])
	}
	return b
}

func (c *ctx) uuid(b []byte) []byte {
	b = append(c.hex(b, 8), '-')
	b = append(c.hex(b, 4), '-', '4')
	b = append(c.hex(b, 3), '-', "89ab"[c.r.IntN(4)])
	return c.hex(append(c.hex(b, 3), '-'), 12)
}

// skewed draws an index below n, low ones more often (the minimum of two
// uniform draws): the first of a list of choices is the common case.
func (c *ctx) skewed(n int) int { return min(c.r.IntN(n), c.r.IntN(n)) }

// jitter is a random duration below d.
func (c *ctx) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(c.r.Int64N(int64(d)))
}

func pick[T any](c *ctx, list []T) T { return list[c.skewed(len(list))] }

// weighted draws one of kinds, each as often as its weight says, and
// returns it with its index.
func weighted[T any](c *ctx, kinds []T, weight func(T) int) (T, int) {
	total := 0
	for _, k := range kinds {
		total += weight(k)
	}
	n := c.r.IntN(total)
	i := 0
	for n >= weight(kinds[i]) {
		n -= weight(kinds[i])
		i++
	}
	return kinds[i], i
}
