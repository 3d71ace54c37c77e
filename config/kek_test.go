package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// testKEK returns n bytes counting up from first: a KEK when n is KEKSize.
func testKEK(first byte, n int) []byte {
	k := make([]byte, n)
	for i := range k {
		k[i] = first + byte(i)*7
	}
	return k
}

// Every spelling ParseKEK takes decodes to the same 32 bytes.
func TestParseKEKSpellings(t *testing.T) {
	// 0xfb.. bytes make '+' and '/' (or '-' and '_') appear in base64, so
	// the alphabets are told apart.
	want := append(testKEK(0, 28), 0xfb, 0xff, 0xbf, 0xfe)
	spellings := map[string]string{
		"hex lower":      hex.EncodeToString(want),
		"hex upper":      strings.ToUpper(hex.EncodeToString(want)),
		"std base64":     base64.StdEncoding.EncodeToString(want),
		"raw std base64": base64.RawStdEncoding.EncodeToString(want),
		"url base64":     base64.URLEncoding.EncodeToString(want),
		"raw url base64": base64.RawURLEncoding.EncodeToString(want),
		"spaces around":  "  " + base64.StdEncoding.EncodeToString(want) + "\n\t",
		"hex in spaces":  " " + hex.EncodeToString(want) + " ",
	}
	if s := spellings["std base64"]; !strings.ContainsAny(s, "+/") || strings.ContainsAny(spellings["url base64"], "+/") {
		t.Fatalf("the test key does not tell the base64 alphabets apart: %s", s)
	}
	for name, text := range spellings {
		got, err := ParseKEK(text)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s (%q): %x, %v; want %x", name, text, got, err, want)
		}
	}
	// 64 hex digits are also base64 (of 48 bytes): hex wins.
	digits := strings.Repeat("0123456789abcdef", 4)
	if got, err := ParseKEK(digits); err != nil || hex.EncodeToString(got) != digits {
		t.Errorf("ParseKEK(64 hex digits) = %x, %v; want them as hex", got, err)
	}
}

// A value of another length, or not base64 or hex, is refused with a
// message saying what it decodes to, never holding the text.
func TestParseKEKErrors(t *testing.T) {
	type tc struct{ name, text, want string }
	var cases []tc
	for _, n := range []int{1, 16, 31, 33, 48, 64} {
		k := testKEK(0x41, n)
		want := fmt.Sprintf("decodes to %d bytes; a KEK is 32 bytes (256 bits)", n)
		cases = append(cases,
			tc{fmt.Sprintf("%d bytes hex", n), hex.EncodeToString(k), want},
			tc{fmt.Sprintf("%d bytes base64", n), base64.StdEncoding.EncodeToString(k), want},
			tc{fmt.Sprintf("%d bytes raw url base64", n), base64.RawURLEncoding.EncodeToString(k), want})
	}
	neither := "is neither base64 nor hex; a KEK is 32 bytes"
	good := base64.StdEncoding.EncodeToString(testKEK(0, 32))
	cases = append(cases,
		tc{"empty", "", "is empty; a KEK is 32 bytes"},
		tc{"spaces", "   ", "is empty; a KEK is 32 bytes"},
		tc{"punctuation", "do_not_print_me!" + strings.Repeat("x", 30), neither},
		tc{"a passphrase", "correct horse battery staple do_not_print_me", neither},
		tc{"odd hex", hex.EncodeToString(testKEK(0, 32))[1:], neither}, // 63 characters: not base64 either
		tc{"base64 with a space inside", good[:20] + " " + good[20:], neither},
		tc{"mixed alphabets", strings.Replace(base64.URLEncoding.EncodeToString(append(testKEK(0, 28), 0xfb, 0xff, 0xbf, 0xfe)), "_", "/", 1), neither},
		tc{"base64 with non-zero trailing bits", good[:42] + "B=", neither},
	)
	for _, c := range cases {
		key, err := ParseKEK(c.text)
		if err == nil {
			t.Errorf("%s: ParseKEK(%q) = %x, want an error", c.name, c.text, key)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.name, msg, c.want)
		}
		text := strings.TrimSpace(c.text)
		if len(text) > 8 {
			text = text[:8] // a prefix of it is as bad as all of it
		}
		if text != "" && strings.Contains(msg, text) || strings.Contains(msg, "do_not_print_me") {
			t.Errorf("%s: the error holds the text: %q", c.name, msg)
		}
	}
}

// The secrets section's rules, through Load: each problem names its key,
// a good key in hex or base64 passes, and no problem holds a key.
func TestValidateSecrets(t *testing.T) {
	kekHex := hex.EncodeToString(testKEK(0, 32))
	kekB64 := base64.StdEncoding.EncodeToString(testKEK(0, 32))
	prevB64 := base64.RawURLEncoding.EncodeToString(testKEK(0x80, 32))
	short := base64.StdEncoding.EncodeToString(testKEK(0, 16))
	t.Setenv("ANKUSA_TEST_KEK", kekB64)
	t.Setenv("ANKUSA_TEST_KEK_SHORT", short)
	t.Setenv("ANKUSA_TEST_UNSET", "") // empty is unset to ResolveSecrets
	for _, c := range []struct {
		name, yaml string
		want       []string // each a prefix of one problem, in order, and no others
	}{
		{name: "no secrets section", yaml: ""},
		{name: "kek in hex", yaml: "secrets: {kek: " + kekHex + "}"},
		{name: "kek in base64", yaml: "secrets: {kek: '" + kekB64 + "'}"},
		{name: "kek from the environment", yaml: "secrets: {kek: env:ANKUSA_TEST_KEK}"},
		{name: "kek and kek_previous", yaml: "secrets: {kek: " + kekHex + ", kek_previous: " + prevB64 + "}"},
		{name: "kek_previous empty", yaml: "secrets: {kek: " + kekHex + ", kek_previous: ''}"},
		{name: "kek short",
			yaml: "secrets: {kek: '" + short + "'}",
			want: []string{"secrets.kek: decodes to 16 bytes; a KEK is 32 bytes (256 bits), written base64 or hex"}},
		{name: "kek short from the environment",
			yaml: "secrets: {kek: env:ANKUSA_TEST_KEK_SHORT}",
			want: []string{"secrets.kek: decodes to 16 bytes"}},
		{name: "kek not base64",
			yaml: "secrets: {kek: do_not_print_me!}",
			want: []string{"secrets.kek: is neither base64 nor hex"}},
		{name: "kek_previous short",
			yaml: "secrets: {kek: " + kekHex + ", kek_previous: '" + short + "'}",
			want: []string{"secrets.kek_previous: decodes to 16 bytes"}},
		{name: "kek_previous without kek",
			yaml: "secrets: {kek_previous: " + prevB64 + "}",
			want: []string{"secrets.kek_previous: set without secrets.kek; "}},
		{name: "kek_previous the same key in another spelling",
			yaml: "secrets: {kek: " + kekHex + ", kek_previous: '" + kekB64 + "'}",
			want: []string{"secrets.kek_previous: is the same key as secrets.kek"}},
		{name: "both bad",
			yaml: "secrets: {kek: abc, kek_previous: do_not_print_me!}",
			want: []string{"secrets.kek: decodes to 2 bytes", "secrets.kek_previous: is neither base64 nor hex"}},
		// An unset reference is ResolveSecrets' problem, said once.
		{name: "kek unresolved",
			yaml: "secrets: {kek: env:ANKUSA_TEST_UNSET, kek_previous: " + prevB64 + "}",
			want: []string{"secrets.kek: cannot resolve secret: environment variable ANKUSA_TEST_UNSET is not set"}},
		// The static store stores no secret: a kek would seal nothing.
		{name: "kek with the static store",
			yaml: "source_store: {type: static}\nsecrets: {kek: " + kekHex + "}",
			want: []string{"secrets.kek: source_store.type is static"}},
	} {
		yaml := c.yaml
		if !strings.Contains(yaml, "source_store:") {
			yaml = "source_store: {type: persistent}\n" + yaml
		}
		probs := problemsOf(t, yaml, ValidateOptions{})
		ok := len(probs) == len(c.want)
		for i := 0; ok && i < len(probs); i++ {
			ok = strings.HasPrefix(probs[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s:\n%s\n got  %q\n want %q", c.name, c.yaml, probs, c.want)
		}
		for _, s := range []string{kekHex[:16], kekB64[:16], prevB64[:16], short[:16], "do_not_print_me"} {
			if slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, s) }) {
				t.Errorf("%s: a problem holds a key: %q", c.name, probs)
			}
		}
	}
}
