package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ankusa/ankusa/config"
)

// Options of route_resolver.options this resolver reads. Any other key is
// an error, as an unknown config key is.
const (
	// optTokensFile names a JSON object of token -> "source[@tenant]".
	optTokensFile = "tokens_file"
	// optTokenPrefix starts an inline entry: "token.<token>": "source[@tenant]".
	optTokenPrefix = "token."
)

// Token bounds: a token is the only secret in the URL, so it must be long
// enough not to be guessed, and URL-safe without encoding (base64url).
const (
	minTokenLen = 16
	maxTokenLen = 128
)

// target is what a token resolves to. An empty tenant lets the source's own
// tenant decide.
type target struct {
	source string
	tenant string
}

// loadTokens builds the token table from the resolver's options: inline
// token.<token> entries and the entries of tokens_file, read once here (a
// new table takes a restart). Every problem is reported, each naming its
// option; tokens are shown only by their first characters.
func loadTokens(opts map[string]string) (map[string]target, error) {
	table := map[string]target{}
	var errs []error
	add := func(where, tok, spec string) {
		if !validToken(tok) {
			errs = append(errs, fmt.Errorf("%s: token %s must be %d to %d characters of A-Z a-z 0-9 _ -", where, redact(tok), minTokenLen, maxTokenLen))
			return
		}
		t, err := parseTarget(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: token %s: %w", where, redact(tok), err))
			return
		}
		if _, dup := table[tok]; dup {
			errs = append(errs, fmt.Errorf("%s: token %s is listed twice", where, redact(tok)))
			return
		}
		table[tok] = t
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == optTokensFile:
			file, err := readTokensFile(opts[k])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			toks := make([]string, 0, len(file))
			for tok := range file {
				toks = append(toks, tok)
			}
			sort.Strings(toks)
			for _, tok := range toks {
				add(fmt.Sprintf("route_resolver.options.tokens_file %q", opts[k]), tok, file[tok])
			}
		case strings.HasPrefix(k, optTokenPrefix):
			tok := k[len(optTokenPrefix):]
			add("route_resolver.options."+optTokenPrefix+redact(tok), tok, opts[k])
		default:
			errs = append(errs, fmt.Errorf("route_resolver.options.%s: unknown option (%s, or %s<token>)", k, optTokensFile, optTokenPrefix))
		}
	}
	if len(errs) == 0 && len(table) == 0 {
		errs = append(errs, fmt.Errorf("route_resolver.options: resolver %q has no tokens: set %s or %s<token> entries", resolverName, optTokensFile, optTokenPrefix))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return table, nil
}

// readTokensFile reads a JSON object of token -> "source[@tenant]".
func readTokensFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read route_resolver.options.%s %q: %w", optTokensFile, path, err)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cannot parse route_resolver.options.%s %q: want a JSON object of \"token\": \"source[@tenant]\": %w", optTokensFile, path, err)
	}
	return m, nil
}

// parseTarget parses "source" or "source@tenant".
func parseTarget(spec string) (target, error) {
	src, tenant, hasTenant := strings.Cut(spec, "@")
	if !config.ValidName([]byte(src)) {
		return target{}, fmt.Errorf("source %q must match %s", src, config.NameRE)
	}
	if hasTenant && !config.ValidName([]byte(tenant)) {
		return target{}, fmt.Errorf("tenant %q must match %s", tenant, config.NameRE)
	}
	return target{source: src, tenant: tenant}, nil
}

func validToken(tok string) bool {
	if len(tok) < minTokenLen || len(tok) > maxTokenLen {
		return false
	}
	for _, c := range []byte(tok) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// redact shows a token by its first four characters only: error messages
// end up in logs, and the token is the URL's secret.
func redact(tok string) string {
	if len(tok) <= 4 {
		return "…"
	}
	return tok[:4] + "…"
}
