package verify

import (
	"strings"
	"testing"
)

// TestJWSPresetFields: the loader refuses a jws or rsa entry with a field
// its family does not read, and {webhook_id} or {crc32} outside family rsa.
func TestJWSPresetFields(t *testing.T) {
	base := "- name: acme\n  title: T\n  docs: https://example.com/docs\n  header: X-Sig\n"
	for _, tc := range []struct{ name, data, want string }{
		{"jws signs no template", base + "  family: jws\n  signed: \"{body}\"\n", "signed: family jws does not read it"},
		{"rsa has no claim", base + "  family: rsa\n  claim: sha256\n", "claim: family rsa does not read it"},
		{"hmac has no alg_header", base + "  family: hmac\n  alg_header: X-Alg\n", "alg_header: family hmac does not read it"},
		{"hmac has no webhook id", base + "  family: hmac\n  signed: \"{webhook_id}.{body}\"\n", "{webhook_id}"},
		{"ed25519 has no crc32", base + "  family: ed25519\n  signed: \"{crc32}\"\n", "{crc32}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadPresets([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestRSADER: a JWS r||s becomes the DER the standard library reads,
// leading zeros dropped and a zero added before a high bit.
func TestRSADER(t *testing.T) {
	r := make([]byte, 32)
	s := make([]byte, 32)
	r[0] = 0x80
	s[31] = 0x05
	var dst [72]byte
	got := rsToDER(&dst, r, s)
	want := append([]byte{0x30, 0x26, 0x02, 0x21, 0x00}, r...)
	want = append(want, 0x02, 0x01, 0x05)
	if string(got) != string(want) {
		t.Fatalf("rsToDER = %x, want %x", got, want)
	}
}
