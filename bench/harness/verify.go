package main

// The -verify mode (`make bench-verify`) measures what checking signatures
// costs the appliance, for issue 6's "the ingest rate with stripe
// verification on stays within 10% of the rate without verification". It
// runs the appliance alone, in two variants of the side by side's closed
// loop run, at each -conns (default 256), -rounds of each:
//
//   - plain: the side by side's command plus -sign stripe -secret
//     benchSecret, to the demo source (verify: none), which stores the
//     signature header and checks nothing;
//   - verified: the same command to the signed source (verify: stripe,
//     the same secret), which checks every hook's Stripe-Signature
//     (timestamp and HMAC-SHA256 over the body) before it answers.
//
// Both variants send the same requests, signed by the same client: the
// difference is the verification alone. (Unsigned plain requests, tried
// first, also measured the client's signing on the shared cores and the
// ~100 bytes of high-entropy header every stored hook then carries.)
//
// Each run gets a fresh appliance process and data directory, as every run
// of every mode does (measure): each then starts from the same state, an
// empty WAL and no segment or dispatch work left over from the run before,
// so neither variant inherits the other's backlog or a bigger heap, and a
// run that fails cannot spoil the next. The start-up costs about a second
// per run, outside the measured window. Within a round the two variants run
// back to back, and the order swaps every round (plain first in odd rounds,
// verified first in even ones): drift on the machine, and whatever a run
// leaves in the page cache and on the disk, falls on both equally.

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/ankusa/ankusa/bench/internal/benchkit"
)

// The variants of the -verify mode.
const (
	plain    = "plain"
	verified = "verified"
)

// verifyWithin is how close to the plain req/s the verified req/s must be.
const verifyWithin = 0.10

// sideBySideOnly are the flags of the side by side that -verify refuses
// rather than ignores.
var sideBySideOnly = []string{"vs-wrk", "min-ratio", "open-frac", "open-conns"}

// verifyFlags refuses the flags that do not apply to -verify.
func verifyFlags(fs *flag.FlagSet) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(sideBySideOnly, f.Name) {
			bad = append(bad, "-"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("-verify: %s apply to the side by side only", strings.Join(bad, ", "))
	}
	return nil
}

// variantOrder is the order of the variants in a round: plain first in odd
// rounds, verified first in even ones.
func variantOrder(round int) []runKey {
	if round%2 == 1 {
		return []runKey{{ankusa, plain}, {ankusa, verified}}
	}
	return []runKey{{ankusa, verified}, {ankusa, plain}}
}

// target is the URL a run of variant posts to on s, and the flags it adds
// to the loadgen command: both sign; only the verified one's source checks.
func target(s *server, variant string) (string, []string) {
	sign := []string{"-sign", "stripe", "-secret", benchSecret}
	if variant == verified {
		return s.origin + signedPath, sign
	}
	return s.url, sign
}

// measureVerify runs every round of both variants.
func measureVerify(ctx context.Context, o *options) (*results, error) {
	res := newResults(o)
	fmt.Fprintf(os.Stderr, "harness: -verify: %d round(s) x %v connections x ankusa %s and %s, %v + %v warm-up each\n",
		o.rounds, o.conns, plain, verified, o.duration, o.warmup)
	if err := measureRounds(ctx, o, res, variantOrder); err != nil {
		return nil, err
	}
	return res, nil
}

// variantSummary is one variant's medians at one connection count, and
// every answer of its runs.
type variantSummary struct {
	summary
	Variant string           `json:"variant"`
	Status  map[string]int64 `json:"status"` // summed over the runs
	Errors  int64            `json:"errors"` // failed requests, summed
}

// verifyRatio compares the variants' median req/s at one connection count.
type verifyRatio struct {
	Conns             int     `json:"connections"`
	VerifiedOverPlain float64 `json:"verified_over_plain"`
	Within            bool    `json:"within"` // of 1, by verifyWithin either way
}

// variantRuns are the closed-loop runs of the appliance in variant.
func (res *results) variantRuns(variant string, conns int) []*runResult {
	var out []*runResult
	for _, r := range res.closed(ankusa, conns) {
		if r.Variant == variant {
			out = append(out, r)
		}
	}
	return out
}

// judgeVerify computes each variant's medians and answers, and the ratios
// of the medians, and lists the failures: every run with a problem (an
// answer but 201 among them). A ratio outside verifyWithin is the
// verdict's no, not a failure: the run measured what it set out to.
//
// Within counts both ways: a verified variant faster than the plain one by
// more than verifyWithin says the figures are noise, not that
// verification is free.
func (res *results) judgeVerify(o *options) {
	for _, c := range o.conns {
		by := map[string]variantSummary{}
		for _, v := range []string{plain, verified} {
			runs := res.variantRuns(v, c)
			s := variantSummary{summary: summarize(runs), Variant: v, Status: map[string]int64{}}
			s.Conns, s.Server = c, ankusa
			for _, r := range runs {
				for code, n := range r.Load.Status {
					s.Status[code] += n
				}
				s.Errors += r.Load.Errors
			}
			by[v] = s
			res.Variants = append(res.Variants, s)
		}
		q := div(by[verified].RPS, by[plain].RPS)
		res.Verify = append(res.Verify, verifyRatio{Conns: c, VerifiedOverPlain: q, Within: within(q, verifyWithin)})
	}
	res.judgeRuns()
}

// verifyMarkdown renders the -verify report: a header saying where, when
// and how, the table of both variants, the ratio and verdict at each
// connection count, the notes and the result.
func (res *results) verifyMarkdown(*options) string {
	var b strings.Builder
	name := "make bench-verify"
	if res.Quick {
		name = "bench-harness -verify -quick"
	}
	b.WriteString(res.Machine.Header(name))
	fmt.Fprintf(&b, "- %s\n", unpinned)
	fmt.Fprintf(&b, "- the appliance alone (`ankusa serve`, wal.type disk, default durable settings), a fresh process and data directory per run; %d round(s), each running both variants back to back, in the other order every round; figures are medians of the rounds\n",
		res.Rounds)
	fmt.Fprintf(&b, "- plain: `loadgen -url http://127.0.0.1:PORT%s -c N -d %s -warmup %s -size 1KiB -kind stripe -sign stripe -secret %s` (closed loop) to source demo, verify: none (the signature is stored, not checked); verified: the same requests to %s, source signed, verify: stripe with that secret (each hook's Stripe-Signature timestamp and HMAC-SHA256 checked before the answer)\n",
		loadPath, res.Duration, res.Warmup, benchSecret, signedPath)
	b.WriteString("- CPU: the appliance's utime+stime over the measured window (100% = one core), client CPU the same for loadgen (which signs every request of both variants, on the same cores); hooks/fsync: hooks made durable / fdatasyncs over the window; answers: the status codes of the variant's runs, summed\n\n")

	t := benchkit.Table{Header: []string{"conns", "variant", "req/s", "req/s min–max", "p50", "p99", "p99.9", "CPU", "client CPU", "hooks/fsync", "answers"}, Left: map[int]bool{1: true, 10: true}}
	for _, s := range res.Variants {
		t.Add(append(append([]string{fmt.Sprint(s.Conns), s.Variant}, closedCells(s.summary)...), hooks(s.summary), answers(s.Status, s.Errors))...)
	}
	b.WriteString(t.String())
	for _, q := range res.Verify {
		fmt.Fprintf(&b, "\nverified / plain, median req/s at %d connections: %.3f\nwithin %.0f%%: %s\n", q.Conns, q.VerifiedOverPlain, 100*verifyWithin, yesNo(q.Within))
	}
	b.WriteString(res.closing())
	return b.String()
}

// answers lists status codes with their counts, in order, and the failed
// requests.
func answers(status map[string]int64, failed int64) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(status)) {
		parts = append(parts, code+" ×"+thousands(float64(status[code])))
	}
	if failed > 0 {
		parts = append(parts, thousands(float64(failed))+" failed")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
