package config

import (
	"fmt"
	"slices"
	"strings"
)

// Problems is every problem found in a configuration, one per line. Each
// begins with the key it is about ("limits.max_body_bytes: ..."; a token's
// adds the token's name: "admin.tokens[1] (ci): ..."), and never prints a
// secret.
type Problems []string

func (p Problems) Error() string { return strings.Join(p, "\n") }

func (p *Problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// under adds probs, whose keys are relative to the section at, to p.
func (p *Problems) under(at string, probs Problems) {
	for _, q := range probs {
		*p = append(*p, at+"."+q)
	}
}

// stage adds what another stage's check found in the section at at ("" for
// the top), as ValidateOptions describes: each error of err is one
// problem, its text naming its key from at; one at a key that p already
// names, or inside such a key, is dropped.
func (p *Problems) stage(at string, err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	known := len(*p)
	for _, e := range errs {
		line := e.Error()
		if at != "" {
			line = at + "." + line
		}
		if !(*p)[:known].names(keyOf(line)) {
			*p = append(*p, line)
		}
	}
}

// names reports whether p has a problem at key or at a key inside it.
func (p Problems) names(key string) bool {
	for _, line := range p {
		if within(keyOf(line), key) {
			return true
		}
	}
	return false
}

// within reports whether key is at or inside the key at.
func within(key, at string) bool {
	return key == at || strings.HasPrefix(key, at) && strings.ContainsRune(".[", rune(key[len(at)]))
}

// outside returns probs less those at or inside one of the keys of at.
func (p Problems) outside(at []string) Problems {
	if len(at) == 0 {
		return p
	}
	var out Problems
	for _, line := range p {
		k := keyOf(line)
		if !slices.ContainsFunc(at, func(a string) bool { return within(k, a) }) {
			out = append(out, line)
		}
	}
	return out
}

// keyOf is the key a problem begins with.
func keyOf(line string) string {
	if i := strings.IndexAny(line, ": "); i >= 0 {
		return line[:i]
	}
	return line
}
