package payload

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Building blocks of generated payloads. Every string they produce is plain
// ASCII without quotes or backslashes, so it needs no JSON escaping.

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var words = []string{
	"account", "amount", "annual", "billing", "build", "change", "charge", "checkout",
	"client", "commit", "customer", "deploy", "design", "docs", "error", "event",
	"feature", "fix", "flaky", "invoice", "issue", "latency", "merge", "migration",
	"monthly", "order", "payment", "plan", "pricing", "quota", "refund", "release",
	"renewal", "retry", "review", "schema", "service", "session", "shipping", "signup",
	"storage", "subscription", "support", "team", "test", "timeout", "trial", "update",
	"upgrade", "usage", "user", "webhook", "when", "with", "the", "and", "for", "after",
}

var (
	firstNames = []string{"ada", "alan", "grace", "linus", "margaret", "ken", "barbara", "dennis", "radia", "edsger"}
	lastNames  = []string{"lovelace", "turing", "hopper", "torvalds", "hamilton", "thompson", "liskov", "ritchie", "perlman", "dijkstra"}
	cities     = []string{"Berlin", "Lisbon", "Austin", "Toronto", "Pune", "Osaka", "Nairobi", "Lyon", "Denver", "Leeds"}
	countries  = []string{"DE", "PT", "US", "CA", "IN", "JP", "KE", "FR", "US", "GB"}
	currencies = []string{"usd", "eur", "gbp", "jpy", "cad", "inr"}
)

func pick(r *rand.Rand, list []string) string { return list[r.IntN(len(list))] }

// appendBase62 appends n random base62 characters.
func appendBase62(dst []byte, r *rand.Rand, n int) []byte {
	for range n {
		dst = append(dst, base62[r.IntN(len(base62))])
	}
	return dst
}

// appendHex appends n random lowercase hex digits.
func appendHex(dst []byte, r *rand.Rand, n int) []byte {
	const hex = "0123456789abcdef"
	for range n {
		dst = append(dst, hex[r.IntN(16)])
	}
	return dst
}

// appendUUID appends a random version-4 UUID.
func appendUUID(dst []byte, r *rand.Rand) []byte {
	dst = appendHex(dst, r, 8)
	dst = append(dst, '-')
	dst = appendHex(dst, r, 4)
	dst = append(dst, "-4"...)
	dst = appendHex(dst, r, 3)
	dst = append(dst, '-', "89ab"[r.IntN(4)])
	dst = appendHex(dst, r, 3)
	dst = append(dst, '-')
	return appendHex(dst, r, 12)
}

// appendWords appends exactly n bytes of space-separated words.
func appendWords(dst []byte, r *rand.Rand, n int) []byte {
	end := len(dst) + n
	for len(dst) < end {
		if len(dst) > end-n {
			dst = append(dst, ' ')
		}
		dst = append(dst, pick(r, words)...)
	}
	return dst[:end]
}

// appendSentence appends a few words, capitalised.
func appendSentence(dst []byte, r *rand.Rand, minWords, maxWords int) []byte {
	start := len(dst)
	for i := range minWords + r.IntN(maxWords-minWords+1) {
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, pick(r, words)...)
	}
	if dst[start] >= 'a' && dst[start] <= 'z' {
		dst[start] -= 'a' - 'A'
	}
	return dst
}

// appendKV appends `,"key":` — the start of a member after the first.
func appendKV(dst []byte, key string) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, key...)
	return append(dst, `":`...)
}

// appendStr appends a JSON string of already safe text.
func appendStr(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendStrKV appends `,"key":"value"`.
func appendStrKV(dst []byte, key, val string) []byte {
	return appendStr(appendKV(dst, key), val)
}

// appendIntKV appends `,"key":n`.
func appendIntKV(dst []byte, key string, n int64) []byte {
	return strconv.AppendInt(appendKV(dst, key), n, 10)
}

// appendBoolKV appends `,"key":true|false`.
func appendBoolKV(dst []byte, key string, b bool) []byte {
	return strconv.AppendBool(appendKV(dst, key), b)
}

// appendID appends `,"key":"<prefix><n base62>"`.
func appendIDKV(dst []byte, r *rand.Rand, key, prefix string, n int) []byte {
	dst = append(appendKV(dst, key), '"')
	dst = append(dst, prefix...)
	return append(appendBase62(dst, r, n), '"')
}

// appendTimeKV appends `,"key":"2024-05-01T12:34:56Z"`.
func appendTimeKV(dst []byte, key string, t time.Time) []byte {
	dst = append(appendKV(dst, key), '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339)
	return append(dst, '"')
}

// pastTime is a random moment in the 30 days before now.
func pastTime(r *rand.Rand, now time.Time) time.Time {
	return now.Add(-time.Duration(r.Int64N(int64(30 * 24 * time.Hour))))
}

// member builds one optional member with a scratch append function.
func member(f func(dst []byte) []byte) []byte { return f(nil) }
