package main

import (
	"strconv"
	"time"
)

// A payload is described as a tree of value generators: obj, arr, str, ...
// Each appends one JSON value to b. Templates read the event being drawn
// (ctx: its tenant, the entities it is about, its clock) so that one id or
// URL shows up wherever the provider repeats it.

// gen appends one JSON value.
type gen func(c *ctx, b []byte) []byte

// field is one member of an object.
type field struct {
	key string
	val gen
}

func f(key string, val gen) field { return field{key, val} }

// obj appends an object of the fields, in order.
func obj(fields ...field) gen {
	return func(c *ctx, b []byte) []byte {
		b = append(b, '{')
		for i, fl := range fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), fl.key...), '"', ':')
			b = fl.val(c, b)
		}
		return append(b, '}')
	}
}

// arr appends an array of lo..hi items.
func arr(lo, hi int, item gen) gen {
	return func(c *ctx, b []byte) []byte {
		b = append(b, '[')
		for i := range lo + c.r.IntN(hi-lo+1) {
			if i > 0 {
				b = append(b, ',')
			}
			b = item(c, b)
		}
		return append(b, ']')
	}
}

// fill appends an array of at least one item, and more while the event
// has size left to fill (ctx.fill): the list that grows with the size.
func fill(item gen) gen {
	return func(c *ctx, b []byte) []byte {
		start := len(b)
		b = item(c, append(b, '['))
		for len(b)-start < c.fill {
			b = item(c, append(b, ','))
		}
		c.fill = 0
		return append(b, ']')
	}
}

// lit appends raw JSON (null, true, 0, {}).
func lit(raw string) gen { return func(_ *ctx, b []byte) []byte { return append(b, raw...) } }

// str appends a constant string.
func str(s string) gen { return func(_ *ctx, b []byte) []byte { return appendStr(b, s) } }

// oneOf appends one of the strings, the first ones more often.
func oneOf(s ...string) gen {
	return func(c *ctx, b []byte) []byte { return appendStr(b, s[c.skewed(len(s))]) }
}

// oneRaw appends one of the raw JSON values, the first ones more often.
func oneRaw(raw ...string) gen {
	return func(c *ctx, b []byte) []byte { return append(b, raw[c.skewed(len(raw))]...) }
}

// num appends an integer in [lo, hi].
func num(lo, hi int64) gen {
	return func(c *ctx, b []byte) []byte { return strconv.AppendInt(b, lo+c.r.Int64N(hi-lo+1), 10) }
}

// chance appends true with probability p.
func chance(p float64) gen {
	return func(c *ctx, b []byte) []byte { return strconv.AppendBool(b, c.r.Float64() < p) }
}

// maybe appends v with probability p, null otherwise.
func maybe(p float64, v gen) gen {
	return func(c *ctx, b []byte) []byte {
		if c.r.Float64() < p {
			return v(c, b)
		}
		return append(b, "null"...)
	}
}

// token appends prefix and n fresh base62 characters: an id seen once.
func token(prefix string, n int) gen {
	return func(c *ctx, b []byte) []byte {
		return append(c.base62(append(append(b, '"'), prefix...), n), '"')
	}
}

// hexStr appends n fresh lowercase hex digits.
func hexStr(n int) gen {
	return func(c *ctx, b []byte) []byte { return append(c.hex(append(b, '"'), n), '"') }
}

// sf appends a string whose content fn appends (ids and URLs built from
// the event's entities).
func sf(fn func(c *ctx, b []byte) []byte) gen {
	return func(c *ctx, b []byte) []byte { return append(fn(c, append(b, '"')), '"') }
}

// nf appends a number fn computes.
func nf(fn func(c *ctx) int64) gen {
	return func(c *ctx, b []byte) []byte { return strconv.AppendInt(b, fn(c), 10) }
}

// unix appends the event's time minus up to back, in unix seconds.
func unix(back time.Duration) gen {
	return func(c *ctx, b []byte) []byte {
		return strconv.AppendInt(b, c.at.Add(-c.jitter(back)).Unix(), 10)
	}
}

// iso appends the event's time minus up to back, as RFC 3339 UTC.
func iso(back time.Duration) gen {
	return func(c *ctx, b []byte) []byte {
		return append(c.at.Add(-c.jitter(back)).UTC().AppendFormat(append(b, '"'), time.RFC3339), '"')
	}
}

// text appends lo..hi words of prose (see prose.go).
func text(lo, hi int) gen {
	return func(c *ctx, b []byte) []byte { return append(c.prose(append(b, '"'), lo+c.r.IntN(hi-lo+1)), '"') }
}

// bigText appends prose of at least lo words and as long as the size left
// to fill asks: the text body that grows with the size.
func bigText(lo int) gen {
	return func(c *ctx, b []byte) []byte {
		words := lo + c.fill/7
		c.fill = 0
		return append(c.prose(append(b, '"'), words), '"')
	}
}

func appendStr(b []byte, s string) []byte { return append(append(append(b, '"'), s...), '"') }

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }
