package envelope

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// BodyClaim is the body_encoding of a hook delivered by reference: its
// body is in a claim pack (DESIGN.md §2.6) and body_claim says where.
const BodyClaim = "claim"

// Claim is a reference to one body in a claim pack: the bytes
// [Offset, Offset+Length) of the object Key in the claim store Store,
// whose SHA-256 is SHA256 (hex). A ranged GET reads it back.
type Claim struct {
	Store  string `json:"store"`
	Key    string `json:"key"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	SHA256 string `json:"sha256"`
}

// AppendJSON appends the claim's JSON form, keys in this order:
//
//	{"store":"packs","key":"claims/tenant=acme/source=stripe/2026/12/05/n1-...pack",
//	 "offset":0,"length":1048576,"sha256":"9f86d0..."}
func (c *Claim) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"store":`...)
	dst = appendJSONString(dst, c.Store)
	dst = append(dst, `,"key":`...)
	dst = appendJSONString(dst, c.Key)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, c.Offset, 10)
	dst = append(dst, `,"length":`...)
	dst = strconv.AppendInt(dst, c.Length, 10)
	dst = append(dst, `,"sha256":`...)
	dst = appendJSONString(dst, c.SHA256)
	return append(dst, '}')
}

// ParseClaim reads a claim's JSON form and checks it: a store and a key,
// a non-negative offset, a positive length and a 64-digit hex SHA-256.
func ParseClaim(b []byte) (Claim, error) {
	var c Claim
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("envelope: claim does not decode: %w", err)
	}
	return c, c.Check()
}

// Check reports what makes c unusable.
func (c *Claim) Check() error {
	switch {
	case c.Store == "" || c.Key == "":
		return fmt.Errorf("envelope: claim has no store or key")
	case c.Offset < 0 || c.Length <= 0:
		return fmt.Errorf("envelope: claim offset %d, length %d: the offset must not be negative and the length must be positive", c.Offset, c.Length)
	case len(c.SHA256) != 64 || !isLowerHex(c.SHA256):
		return fmt.Errorf("envelope: claim sha256 %q is not 64 lower-case hex digits", c.SHA256)
	}
	return nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// AppendRef appends the claim's URL-safe form: its JSON form (AppendJSON)
// in base64url without padding, as the admin API's
// GET /v1/tenants/{t}/claims/{ref} takes it.
func (c *Claim) AppendRef(dst []byte) []byte {
	return base64.RawURLEncoding.AppendEncode(dst, c.AppendJSON(nil))
}

// ParseClaimRef reads a claim's URL-safe form (AppendRef) and checks it.
func ParseClaimRef(ref string) (Claim, error) {
	b, err := base64.RawURLEncoding.DecodeString(ref)
	if err != nil {
		return Claim{}, fmt.Errorf("envelope: claim reference is not base64url without padding: %w", err)
	}
	return ParseClaim(b)
}
