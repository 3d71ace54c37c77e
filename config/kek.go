package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KEKSize is the size of a key-encryption key (secrets.kek and
// secrets.kek_previous): 256 bits, an AES-256 key (package secrets seals
// with it).
const KEKSize = 32

// kekHint ends every ParseKEK error: what a KEK is and how to make one.
const kekHint = "a KEK is 32 bytes (256 bits), written base64 or hex (openssl rand -base64 32 makes one)"

// ParseKEK decodes a KEK's text, the one parser of secrets.kek and
// secrets.kek_previous: base64 (standard or URL alphabet, padded or not) or
// hex, of exactly KEKSize bytes, spaces around it trimmed. Text of hex
// digits only, of even length, is hex (a 32-byte key in base64 is 43 or 44
// characters and is never that), so 64 hex digits are a key even though they
// are also base64. Errors never hold the text: it is a secret.
func ParseKEK(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("is empty; " + kekHint)
	}
	key, err := decodeKEK(text)
	if err != nil {
		return nil, err
	}
	if len(key) != KEKSize {
		return nil, fmt.Errorf("decodes to %d bytes; %s", len(key), kekHint)
	}
	return key, nil
}

// decodeKEK decodes text as hex or base64, whatever its length.
func decodeKEK(text string) ([]byte, error) {
	if len(text)%2 == 0 && isHex(text) {
		return hex.DecodeString(text)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.Strict().DecodeString(text); err == nil {
			return key, nil
		}
	}
	// Not the decoder's error: it quotes the offending byte.
	return nil, errors.New("is neither base64 nor hex; " + kekHint)
}

// validateSecrets checks the secrets section: each KEK set parses
// (ParseKEK), kek_previous comes with a kek and differs from it. A value
// that did not resolve (an unset env: or file: reference) is already a
// problem of ResolveSecrets and is not checked again.
func validateSecrets(p *Problems, s Secrets) {
	if s.KEKPrevious.IsSet() && !s.KEK.IsSet() {
		p.add("secrets.kek_previous: set without secrets.kek; kek_previous only opens what an earlier key sealed, secrets.kek seals: set secrets.kek too, or leave both out")
	}
	kek := parseKEKAt(p, "secrets.kek", s.KEK)
	previous := parseKEKAt(p, "secrets.kek_previous", s.KEKPrevious)
	if kek != nil && previous != nil && bytes.Equal(kek, previous) {
		p.add("secrets.kek_previous: is the same key as secrets.kek; after a rotation it holds the old key, else leave it out")
	}
}

// parseKEKAt parses the resolved KEK of key, nil when it is not set, did
// not resolve or is a problem (added to p).
func parseKEKAt(p *Problems, key string, s Secret) []byte {
	if s.Value == "" {
		return nil
	}
	k, err := ParseKEK(s.Value)
	if err != nil {
		p.add("%s: %v", key, err)
		return nil
	}
	return k
}
