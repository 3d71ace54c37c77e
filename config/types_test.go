package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	f := func(text string, want Size) {
		t.Helper()
		got, err := ParseSize(text)
		if err != nil {
			t.Fatalf("ParseSize(%q): unexpected error: %v", text, err)
		}
		if got != want {
			t.Fatalf("ParseSize(%q) = %d, want %d", text, got, want)
		}
	}
	f("0", 0)
	f("123", 123)
	f("10B", 10)
	f("16KiB", 16<<10)
	f("1MiB", 1<<20)
	f("64MiB", 64<<20)
	f("1GiB", 1<<30)
	f("3KB", 3<<10) // KB/MB/GB are the binary units too
	f("2MB", 2<<20)
	f("1GB", 1<<30)
	f(" 5 MiB ", 5<<20)
	f("4611686018427387904", 1<<62)
}

func TestParseSizeBad(t *testing.T) {
	f := func(text string) {
		t.Helper()
		got, err := ParseSize(text)
		if err == nil {
			t.Fatalf("ParseSize(%q) = %d, want an error", text, got)
		}
		msg := err.Error()
		if !strings.Contains(msg, `"`+text+`"`) || !strings.Contains(msg, "KiB, MiB or GiB") {
			t.Fatalf("ParseSize(%q): message %q should quote the text and say what is accepted", text, msg)
		}
	}
	f("")
	f("MiB")
	f("1.5MiB")
	f("-1")
	f("-1KiB")
	f("1TiB")
	f("1kib")
	f("1mb")
	f("abc")
	f("1 000")
	f("0x10")
	f("1e6")
	f("4611686018427387905")  // past 1<<62
	f("4294967297GiB")        // past 1<<62 once multiplied
	f("9223372036854775808B") // does not fit int64 at all
}

func TestDurationUnmarshalText(t *testing.T) {
	f := func(text string, want time.Duration) {
		t.Helper()
		var d Duration
		if err := d.UnmarshalText([]byte(text)); err != nil {
			t.Fatalf("Duration(%q): unexpected error: %v", text, err)
		}
		if d.D() != want {
			t.Fatalf("Duration(%q) = %s, want %s", text, d.D(), want)
		}
	}
	f("250ms", 250*time.Millisecond)
	f("72h", 72*time.Hour)
	f("1h30m", 90*time.Minute)
	f("5m", 5*time.Minute)
	f("0s", 0)
	f(" 10s ", 10*time.Second)

	bad := func(text string) {
		t.Helper()
		var d Duration
		err := d.UnmarshalText([]byte(text))
		if err == nil {
			t.Fatalf("Duration(%q) = %s, want an error", text, d.D())
		}
		if !strings.Contains(err.Error(), "250ms or 72h") {
			t.Fatalf("Duration(%q): message %q should say what a duration looks like", text, err)
		}
	}
	bad("")
	bad("5")
	bad("5x")
	bad("-1s")
	bad("1d")
	bad("ten seconds")
}

func TestSecretString(t *testing.T) {
	f := func(ref, want string) {
		t.Helper()
		s := Secret{Ref: ref, Value: "resolved-value-must-not-show"}
		if got := s.String(); got != want {
			t.Fatalf("Secret{Ref: %q}.String() = %q, want %q", ref, got, want)
		}
	}
	f("", "")
	f("env:STRIPE_WHSEC", "env:STRIPE_WHSEC")
	f("file:/run/secrets/x", "file:/run/secrets/x")
	f("whsec_literal", "<redacted>")
}

func TestRateLimitFinite(t *testing.T) {
	f := func(r *RateLimit, want bool) {
		t.Helper()
		if got := r.Finite(); got != want {
			t.Fatalf("%+v.Finite() = %v, want %v", r, got, want)
		}
	}
	f(nil, false)
	f(&RateLimit{}, false)
	f(&RateLimit{Rate: 50}, false)
	f(&RateLimit{Burst: 100}, false)
	f(&RateLimit{Rate: -1, Burst: 100}, false)
	f(&RateLimit{Rate: 50, Burst: 100}, true)
	f(&RateLimit{Rate: 0.5, Burst: 1}, true)
}

func TestValidNameAgreesWithNameRE(t *testing.T) {
	names := []string{
		"", "a", "0", "acme", "acme-billing", "acme.billing", "acme_billing",
		"a..b", "a--", "-a", ".a", "_a", ".", "..", "Acme", "acmE", "a b", "a/b",
		"a%2fb", "ä", "a\x00", "a:b", "a+b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "0" + strings.Repeat("-", 62),
	}
	for _, n := range names {
		re := NameRE.MatchString(n)
		if got := ValidName([]byte(n)); got != re {
			t.Errorf("ValidName(%q) = %v but NameRE says %v", n, got, re)
		}
	}
	// Spot-check the rule itself, not only the agreement.
	for n, want := range map[string]bool{"acme": true, strings.Repeat("a", 63): true, strings.Repeat("a", 64): false, "-a": false, "Acme": false} {
		if got := ValidName([]byte(n)); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", n, got, want)
		}
	}
}
