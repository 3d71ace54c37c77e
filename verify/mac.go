package verify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"sync"
)

// macKey is one secret with a pool of HMAC states keyed by it.
type macKey struct {
	pool sync.Pool // of *macState
}

// macState is a keyed HMAC and room for its sum, pooled together so that
// computing a MAC allocates nothing.
type macState struct {
	h   hash.Hash
	sum [64]byte
}

func newMacKey(newHash func() hash.Hash, key []byte) *macKey {
	k := append([]byte(nil), key...)
	m := &macKey{}
	m.pool.New = func() any { return &macState{h: hmac.New(newHash, k)} }
	return m
}

// equal reports (1 or 0, in constant time) whether sig is the MAC of the
// concatenated parts.
func (m *macKey) equal(sig []byte, parts ...[]byte) int {
	st, mac := m.mac(parts...)
	eq := subtle.ConstantTimeCompare(mac, sig)
	m.release(st)
	return eq
}

// mac computes the MAC of the concatenated parts. The MAC lives in st: the
// caller may compare it against any number of signatures, then must hand
// st back with release and not use the MAC after that.
func (m *macKey) mac(parts ...[]byte) (st *macState, mac []byte) {
	st = m.pool.Get().(*macState)
	st.h.Reset()
	for _, p := range parts {
		st.h.Write(p)
	}
	return st, st.h.Sum(st.sum[:0])
}

// release returns the state mac handed out.
func (m *macKey) release(st *macState) { m.pool.Put(st) }

func hashFor(alg string) (func() hash.Hash, bool) {
	switch alg {
	case "", "sha256":
		return sha256.New, true
	case "sha1":
		return sha1.New, true
	case "sha512":
		return sha512.New, true
	}
	return nil, false
}

// decodeSig decodes a hex or base64 signature into dst (at most 64 bytes).
func decodeSig(dst *[64]byte, enc string, s []byte) ([]byte, bool) {
	switch enc {
	case "hex":
		if len(s) > 128 || len(s)%2 != 0 {
			return nil, false
		}
		n, err := hex.Decode(dst[:], s)
		return dst[:n], err == nil
	default:
		if base64.StdEncoding.DecodedLen(len(s)) > 66 || hasLineBreak(s) {
			return nil, false
		}
		var tmp [66]byte
		n, err := base64.StdEncoding.Decode(tmp[:], s)
		if err != nil || n > 64 {
			return nil, false
		}
		copy(dst[:], tmp[:n])
		return dst[:n], true
	}
}

// hasLineBreak reports whether s holds a CR or LF, which encoding/base64
// skips while decoding: a signature is its exact characters, so one with
// a line break in it is refused, not read as if the break were absent.
func hasLineBreak(s []byte) bool { return bytes.ContainsAny(s, "\r\n") }

// anyMatch reports whether sig equals the MAC of parts under any key. It
// tries every key so that timing does not depend on which one matched.
func anyMatch(keys []*macKey, sig []byte, parts ...[]byte) bool {
	ok := 0
	for _, k := range keys {
		ok |= k.equal(sig, parts...)
	}
	return ok == 1
}
