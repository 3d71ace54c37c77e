package secrets

import (
	"slices"
	"testing"
)

// FuzzOpen: Open never panics on arbitrary bytes, refuses with an *Error,
// and opens only what round-trips (a forged blob does not open).
func FuzzOpen(f *testing.F) {
	k, err := NewKeyring(key(0x00), key(0x40))
	if err != nil {
		f.Fatal(err)
	}
	prev, err := NewKeyring(key(0x40), nil)
	if err != nil {
		f.Fatal(err)
	}
	other, err := NewKeyring(key(0x80), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{})
	f.Add([]byte{0x01})
	f.Add(k.Seal(nil, testAD))
	f.Add(k.Seal([]byte("whsec_fuzz"), testAD))
	f.Add(prev.Seal([]byte("from the previous key"), testAD))
	f.Add(other.Seal([]byte("from another key"), testAD))
	v2 := k.Seal([]byte("x"), testAD)
	v2[0] = 0x02
	f.Add(v2)
	f.Fuzz(func(t *testing.T, blob []byte) {
		plain, current, err := k.Open(blob, testAD)
		if err != nil {
			reasonOf(t, err)
			if plain != nil || current {
				t.Fatalf("an error with plaintext %q, current %v", plain, current)
			}
			return
		}
		// Only what k and prev sealed opens, so its contents are known:
		// the seeds above (the version 2 one too, once the fuzzer sets its
		// version byte back to 1) and testdata/fuzz/FuzzOpen/golden_v1,
		// the golden blob of secrets_test.go.
		if !slices.Contains([]string{"", "whsec_fuzz", "from the previous key", "x", "whsec_golden"}, string(plain)) {
			t.Fatalf("a blob opened to %q", plain)
		}
	})
}
