package verify_test

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// jsonPathString reads a dotted path's string from a JSON body (a numeric
// segment indexes an array).
func jsonPathString(body []byte, path string) (string, bool) {
	v, err := fastjson.ParseBytes(body)
	if err != nil {
		return "", false
	}
	for _, seg := range splitDots(path) {
		if n, err := strconv.Atoi(seg); err == nil && v.Type() == fastjson.TypeArray {
			a := v.GetArray()
			if n >= len(a) {
				return "", false
			}
			v = a[n]
			continue
		}
		if v = v.Get(seg); v == nil {
			return "", false
		}
	}
	b, err := v.StringBytes()
	return string(b), err == nil
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
