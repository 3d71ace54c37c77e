package verify

import (
	"github.com/ankusa/ankusa/config"
	"strings"
	"testing"
)

// TestBodyTokenPresetRefused: a token family's signature that cannot mean
// anything is refused when the preset is built, naming the field.
func TestBodyTokenPresetRefused(t *testing.T) {
	for _, c := range []struct {
		p    Preset
		want string
	}{
		{Preset{Family: "token", Signature: "header:X-Token"}, "signature: \"header:X-Token\" must be json:PATH"},
		{Preset{Family: "token", Signature: "json:"}, "must be json:PATH"},
		{Preset{Family: "token", Signature: "json:a..b"}, "empty path segment"},
		{Preset{Family: "token", Signature: "json:*.b"}, "must follow the array's name"},
		{Preset{Family: "token", Signature: "json:a.*"}, "must be followed by the field"},
		{Preset{Family: "token", Signature: "json:a.*.b.*.c"}, "more than one *"},
		{Preset{Family: "token", Signature: "json:" + strings.Repeat("a.", 20) + "a"}, "deeper than"},
		{Preset{Family: "token", Signature: "json:a", Header: "X-Token"}, "takes no header or prefix"},
		{Preset{Family: "token", Signature: "json:a", Prefix: "Bearer "}, "takes no header or prefix"},
		{Preset{Family: "token", Signature: "json:a", Algorithm: "sha1"}, "header and prefix, or signature, only"},
		{Preset{Family: "token"}, "header: required"},
		{Preset{Family: "basic", Signature: "json:a"}, "signature: family basic reads its credential from a header only"},
	} {
		var err error
		if c.p.Family == "basic" {
			_, err = newBasicFamily(&c.p, config.Verify{}, []string{"u:p"}, 0)
		} else {
			_, err = newTokenFamily(&c.p, config.Verify{}, []string{"s"}, 0)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.p, err, c.want)
		}
	}
}
