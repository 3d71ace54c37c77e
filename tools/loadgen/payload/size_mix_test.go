package payload

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseSizeMix(t *testing.T) {
	f := func(in string, want SizeMix) {
		t.Helper()
		got, err := ParseSizeMix(in)
		if err != nil {
			t.Fatalf("parseSizeMix(%q): %v", in, err)
		}
		if len(got) != len(want) {
			t.Fatalf("parseSizeMix(%q) = %v, want %v", in, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("parseSizeMix(%q) = %v, want %v", in, got, want)
			}
		}
	}
	f("1KiB", SizeMix{{1024, 100}})
	f("512", SizeMix{{512, 100}})
	f("512B", SizeMix{{512, 100}})
	f(" 2MiB ", SizeMix{{2 << 20, 100}})
	f("100%4KiB", SizeMix{{4096, 100}})
	f("70%1KiB,25%8KiB,5%64KiB", SizeMix{{1024, 70}, {8192, 25}, {65536, 5}})
	f("50%600, 50%700", SizeMix{{600, 50}, {700, 50}})
	f("33.5%1KiB,66.5%2KiB", SizeMix{{1024, 33.5}, {2048, 66.5}})
}

func TestParseSizeMixRejects(t *testing.T) {
	f := func(in, wantErr string) {
		t.Helper()
		_, err := ParseSizeMix(in)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("parseSizeMix(%q): error %v, want one containing %q", in, err, wantErr)
		}
	}
	f("", "empty size")
	f("1KB", "want a positive whole number of bytes, optionally with B, KiB or MiB")
	f("-1KiB", "want a positive whole number")
	f("0", "want a positive whole number")
	f("1.5KiB", "want a positive whole number")
	f("100", "smaller than 512 bytes")
	f("17MiB", "larger than the 16MiB limit")
	f("70%1KiB,25%8KiB", "percentages sum to 95, not 100")
	f("70%1KiB,25%8KiB,10%64KiB", "percentages sum to 105, not 100")
	f("70%1KiB,8KiB", `mix item "8KiB": write it as PERCENT%SIZE`)
	f("x%1KiB,100%1KiB", `mix item "x%1KiB": the percentage must be a number in (0, 100]`)
	f("0%1KiB,100%2KiB", "the percentage must be a number in (0, 100]")
	f("50%1KiB,50%", `mix item "50%"`)
}

func TestSizeMixPick(t *testing.T) {
	m, err := ParseSizeMix("70%1KiB,25%8KiB,5%64KiB")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var got [3]int
	const n = 100_000
	for range n {
		got[m.pick(r)]++
	}
	for i, want := range []float64{70, 25, 5} {
		if pct := float64(got[i]) * 100 / n; pct < want*0.95 || pct > want*1.05 {
			t.Fatalf("class %d drawn %.2f%% of the time, want %.0f%%", i, pct, want)
		}
	}
}
