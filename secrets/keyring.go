package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the KEK's size: 256 bits.
const KeySize = 32

// Layout of a sealed blob (see the package doc).
const (
	// Version is the version byte of the blobs Seal writes.
	Version = 0x01
	// Overhead is how many bytes longer a blob is than its plaintext.
	Overhead = headerSize + tagSize

	offKeyID   = 1
	offNonce   = 5
	headerSize = offNonce + nonceSize // the ciphertext's offset: 17
	nonceSize  = 12
	tagSize    = 16
)

// AD is what a sealed value is bound to: the additional data of the seal. A
// value sealed for one (tenant, source, field) does not open for another.
// No part may hold 0x00.
type AD struct{ Tenant, Source, Field string }

// Keyring is the current KEK (secrets.kek) and the previous one
// (secrets.kek_previous), if any, ready to seal and open. It keeps the
// keys' AES schedules, not the caller's key slices. It is immutable and
// safe for concurrent use; a nil *Keyring is a keyring that seals nothing.
type Keyring struct {
	current, previous     cipher.AEAD // nil: not configured
	currentID, previousID uint32
}

// NewKeyring returns the keyring of kek (current) and previous (may be nil).
// kek nil or empty: a keyring that seals nothing (Enabled false) — but
// previous without kek is an error. Keys must be KeySize bytes. previous
// equal to kek, or sharing its key id, is an error. The errors name the
// config key to change and never hold key bytes.
func NewKeyring(kek, previous []byte) (*Keyring, error) {
	if len(kek) == 0 {
		if len(previous) != 0 {
			return nil, errors.New("secrets.kek_previous: set without secrets.kek; set secrets.kek to the key that seals from now on, or leave both out")
		}
		return &Keyring{}, nil
	}
	k := &Keyring{}
	var err error
	if k.current, err = newAEAD("secrets.kek", kek); err != nil {
		return nil, err
	}
	k.currentID = KeyID(kek)
	if len(previous) == 0 {
		return k, nil
	}
	if bytes.Equal(kek, previous) {
		return nil, errors.New("secrets.kek_previous is the same key as secrets.kek; after a rotation it holds the old key, else leave it out")
	}
	if k.previous, err = newAEAD("secrets.kek_previous", previous); err != nil {
		return nil, err
	}
	k.previousID = KeyID(previous)
	if k.previousID == k.currentID {
		return nil, fmt.Errorf("secrets.kek_previous: has the key id of secrets.kek (0x%08x) though the keys differ; generate another secrets.kek", k.currentID)
	}
	return k, nil
}

// newAEAD returns AES-256-GCM under key, the value of config key name.
func newAEAD(name string, key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%s: is %d bytes; a KEK is %d bytes (256 bits)", name, len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cipher.NewGCM(block) // the standard 12-byte nonce and 16-byte tag
}

// Enabled reports whether a current key is set (nil *Keyring: false).
func (k *Keyring) Enabled() bool { return k != nil && k.current != nil }

// CurrentID is the key id of the current key (0 when not Enabled).
func (k *Keyring) CurrentID() uint32 {
	if !k.Enabled() {
		return 0
	}
	return k.currentID
}

// PreviousID is the key id of the previous key and whether one is set.
func (k *Keyring) PreviousID() (uint32, bool) {
	if k == nil || k.previous == nil {
		return 0, false
	}
	return k.previousID, true
}

// Seal seals plain under the current key with a fresh random 96-bit nonce
// (crypto/rand) and returns the blob (see the package doc), a new slice.
// plain is not kept. It panics when !Enabled: callers check.
func (k *Keyring) Seal(plain []byte, ad AD) []byte {
	var nonce [nonceSize]byte
	rand.Read(nonce[:]) // never fails (crypto/rand since Go 1.24)
	return k.sealWithNonce(plain, ad, nonce)
}

// sealWithNonce is Seal with a given nonce: Seal's body, and the golden
// test's way to a fixed blob. Nothing else may call it: a nonce repeated
// under one key breaks GCM.
func (k *Keyring) sealWithNonce(plain []byte, ad AD, nonce [nonceSize]byte) []byte {
	if !k.Enabled() {
		panic("BUG: secrets: Seal on a keyring without secrets.kek (check Enabled)")
	}
	blob := make([]byte, headerSize, len(plain)+Overhead)
	blob[0] = Version
	binary.BigEndian.PutUint32(blob[offKeyID:], k.currentID)
	copy(blob[offNonce:], nonce[:])
	return k.current.Seal(blob, nonce[:], plain, additionalData(ad, blob[:offNonce]))
}

// Open opens a blob sealed for ad. current reports whether it was sealed
// under the current key (false: under the previous one; the caller
// re-seals it on rewrap). plain is a new slice; blob is not kept. Every
// error is an *Error, its Reason ReasonFormat, ReasonNoKey or ReasonAuth.
func (k *Keyring) Open(blob []byte, ad AD) (plain []byte, current bool, err error) {
	if len(blob) < Overhead {
		return nil, false, &Error{Reason: ReasonFormat, msg: fmt.Sprintf("a sealed blob is at least %d bytes, this one %d", Overhead, len(blob))}
	}
	if blob[0] != Version {
		return nil, false, &Error{Reason: ReasonFormat, msg: fmt.Sprintf("unknown sealed blob version 0x%02x (this build knows 0x%02x)", blob[0], Version)}
	}
	id := binary.BigEndian.Uint32(blob[offKeyID:])
	var aead cipher.AEAD
	switch prevID, hasPrev := k.PreviousID(); {
	case k.Enabled() && id == k.currentID:
		aead, current = k.current, true
	case hasPrev && id == prevID:
		aead = k.previous
	default:
		return nil, false, &Error{Reason: ReasonNoKey, KeyID: id, msg: fmt.Sprintf("sealed under key id 0x%08x, %s", id, k.describeIDs())}
	}
	plain, err = aead.Open(nil, blob[offNonce:headerSize], blob[headerSize:], additionalData(ad, blob[:offNonce]))
	if err != nil {
		return nil, false, &Error{Reason: ReasonAuth, KeyID: id, msg: fmt.Sprintf("sealed blob of key id 0x%08x fails authentication: sealed for another tenant, source or field, changed since, or sealed by another key with that id", id)}
	}
	return plain, current, nil
}

// describeIDs says which key ids are configured, for ReasonNoKey.
func (k *Keyring) describeIDs() string {
	prev, hasPrev := k.PreviousID()
	switch {
	case !k.Enabled():
		return "but no key is configured (secrets.kek is not set)"
	case hasPrev:
		return fmt.Sprintf("neither secrets.kek's (0x%08x) nor secrets.kek_previous's (0x%08x)", k.currentID, prev)
	default:
		return fmt.Sprintf("not secrets.kek's (0x%08x), and secrets.kek_previous is not set", k.currentID)
	}
}

// KeyIDOf returns the key id recorded in a blob, false if blob is not a
// blob of a known version (shorter than Overhead, or another version byte).
func KeyIDOf(blob []byte) (uint32, bool) {
	if len(blob) < Overhead || blob[0] != Version {
		return 0, false
	}
	return binary.BigEndian.Uint32(blob[offKeyID:]), true
}

// KeyID is a key's id: the first 4 bytes (big endian) of
// SHA-256("ankusa/kek-id/v1" || key).
func KeyID(key []byte) uint32 {
	h := sha256.New()
	h.Write([]byte("ankusa/kek-id/v1"))
	h.Write(key)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// additionalData is the seal's additional data (see the package doc):
// "ankusa/secret/v1" 0x00 tenant 0x00 source 0x00 field 0x00 header, header
// being the blob's version and key id.
func additionalData(ad AD, header []byte) []byte {
	for _, part := range [...]string{ad.Tenant, ad.Source, ad.Field} {
		if strings.IndexByte(part, 0) >= 0 {
			panic(fmt.Sprintf("BUG: secrets: an AD part holds 0x00 (tenant %q, source %q, field %q)", ad.Tenant, ad.Source, ad.Field))
		}
	}
	b := make([]byte, 0, len(adPrefix)+len(ad.Tenant)+len(ad.Source)+len(ad.Field)+4+len(header))
	b = append(b, adPrefix...)
	b = append(b, ad.Tenant...)
	b = append(b, 0)
	b = append(b, ad.Source...)
	b = append(b, 0)
	b = append(b, ad.Field...)
	b = append(b, 0)
	return append(b, header...)
}

// adPrefix begins the additional data of every version 1 seal.
const adPrefix = "ankusa/secret/v1\x00"
