package dedupe

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSpecs are the fixed specs every fuzzed body is read with.
var fuzzSpecs = []string{"json:id", "json:data.object.id", "json:items.0.id", "json:0", "json:a.b.1"}

// fuzzHeaders is a Headers over a map.
type fuzzHeaders map[string][]byte

func (m fuzzHeaders) Peek(k string) []byte { return m[k] }

// FuzzExtractJSON: any body, any header value. Key never panics; a key
// is 1..MaxKeyBytes bytes, appended to dst; a body that is not JSON has
// none; and where encoding/json reads the same document unambiguously (no
// duplicate keys, no invalid UTF-8 or lone surrogates), the key is
// exactly what it finds at the path. A failing input is written to
// testdata/fuzz/FuzzExtractJSON/ and replays with go test -run.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"evt_1"}`,
		`{"id":12.5e-3,"data":{"object":{"id":"ch_1"}},"items":[{"id":true}]}`,
		`[{"id":"a"},"b"]`,
		`{"a":{"b":[null,"x"]}}`,
		`{"id":"caf\u00e9 \ud83d\ude00 \ud800 \"q\""}`,
		`{"id":"dup","id":"second"}`,
		`{"id":NaN}`,
		`{"id":01}`,
		"{\"id\":\"\xff\xfe\"}",
		`{"id":"` + strings.Repeat("x", MaxKeyBytes+1) + `"}`,
		strings.Repeat("[", 400),
		``,
	} {
		f.Add([]byte(s))
	}
	xs := make([]*Extractor, len(fuzzSpecs))
	for i, s := range fuzzSpecs {
		xs[i] = mustExtractor(f, s, "none")
	}
	hx := mustExtractor(f, "header:X-Id", "none")
	f.Fuzz(func(t *testing.T, body []byte) {
		valid := json.Valid(body)
		doc, docSure := oracleDoc(body, valid)
		for i, x := range xs {
			dst := []byte("pre")
			key, ok := x.Key(dst, nil, body)
			if !bytes.HasPrefix(key, []byte("pre")) {
				t.Fatalf("%s: dst lost: %q", fuzzSpecs[i], key)
			}
			key = key[3:]
			if !ok {
				if len(key) != 0 {
					t.Fatalf("%s: no key, but dst grew by %q", fuzzSpecs[i], key)
				}
			} else {
				if len(key) == 0 || len(key) > MaxKeyBytes {
					t.Fatalf("%s: key of %d bytes", fuzzSpecs[i], len(key))
				}
				if !valid {
					t.Fatalf("%s: key %q from a body that is not JSON", fuzzSpecs[i], key)
				}
			}
			if !docSure {
				continue
			}
			want, wantOK, sure := oracleKey(doc, strings.Split(fuzzSpecs[i][len("json:"):], "."))
			if !sure {
				continue
			}
			if ok != wantOK || ok && string(key) != want {
				t.Fatalf("%s: Key = %q, %v; encoding/json finds %q, %v", fuzzSpecs[i], key, ok, want, wantOK)
			}
		}
		key, ok := hx.Key(nil, fuzzHeaders{"X-Id": body}, nil)
		if wantOK := len(body) > 0 && len(body) <= MaxKeyBytes; ok != wantOK || ok && !bytes.Equal(key, body) {
			t.Fatalf("header: Key = %q, %v for a value of %d bytes", key, ok, len(body))
		}
	})
}

// oracleDoc decodes a valid body with encoding/json (numbers as their
// text). sure is false where its reading may differ from fastjson's by
// design: an object with duplicate keys (encoding/json keeps the last,
// fastjson the first) or nesting deeper than fastjson parses.
func oracleDoc(body []byte, valid bool) (doc any, sure bool) {
	if !valid || !uniqueKeys(body) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, false
	}
	return doc, true
}

// oracleKey reads the key at path in doc: the value's text if it is a
// non-empty string, a number or a boolean within MaxKeyBytes. sure is
// false for a string encoding/json had to repair (invalid UTF-8, lone
// surrogates: U+FFFD), which fastjson keeps as it was.
func oracleKey(v any, path []string) (key string, ok, sure bool) {
	for _, seg := range path {
		switch t := v.(type) {
		case map[string]any:
			v = t[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(t) {
				return "", false, true
			}
			v = t[n]
		default:
			return "", false, true
		}
	}
	switch t := v.(type) {
	case string:
		if strings.ContainsRune(t, utf8.RuneError) {
			return "", false, false
		}
		key = t
	case json.Number:
		key = string(t)
	case bool:
		key = strconv.FormatBool(t)
	default:
		return "", false, true
	}
	return key, key != "" && len(key) <= MaxKeyBytes, true
}

// uniqueKeys reports whether no object of the document repeats a key,
// and it nests no deeper than fastjson parses (300).
func uniqueKeys(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		keys   map[string]bool
		object bool
		atKey  bool
	}
	var stack []frame
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if k, isStr := tok.(string); isStr && top >= 0 && stack[top].object && stack[top].atKey {
			if stack[top].keys[k] {
				return false
			}
			stack[top].keys[k] = true
			stack[top].atKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, object: true, atKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
		if len(stack) >= 300 {
			return false
		}
		// A value inside an object is followed by a key again.
		if t := len(stack) - 1; t >= 0 && stack[t].object {
			if _, open := tok.(json.Delim); !open || tok == json.Delim('}') || tok == json.Delim(']') {
				stack[t].atKey = true
			}
		}
	}
}
