// Package secrets seals stored secrets at rest (DESIGN.md §2.12): a webhook
// source's verify secrets, its sinks' secrets and the password in a sink
// URL are kept in the meta store as blobs sealed with AES-256-GCM under the
// key-encryption key (KEK) of config secrets.kek. It owns the blob format
// and the keyring of the current KEK and, while a rotation rewraps what it
// sealed, the previous one (secrets.kek_previous). It imports nothing of
// this module; config parses the KEK's text (config.ParseKEK) and the
// caller hands the bytes to NewKeyring.
//
// # Sealed blob (version 1)
//
// Integers are big-endian.
//
//	offset  size  field
//	0       1     version = 0x01
//	1       4     key id: KeyID of the KEK that sealed it
//	5       12    nonce: random (crypto/rand), fresh for every seal
//	17      n     AES-256-GCM ciphertext of the plaintext (n = len(plain))
//	17+n    16    GCM tag
//
// A blob is Overhead (33) bytes longer than its plaintext; an empty
// plaintext seals to a 33-byte blob.
//
// The additional data of the seal binds a blob to where it is stored (AD)
// and to its own header:
//
//	"ankusa/secret/v1" 0x00 tenant 0x00 source 0x00 field 0x00 blob[0:5]
//
// so a blob copied to another tenant, source or field, or with its version
// or key id changed, does not open (ReasonAuth). Tenant, source and field
// never hold 0x00 (they are names, like "acme", "stripe",
// "verify.secrets[1]"); a part that does is a caller's bug and panics.
//
// # Key ids
//
// A key's id (KeyID) is the first 4 bytes, big-endian, of
// SHA-256("ankusa/kek-id/v1" || key). It tells Open which configured key
// sealed a blob, and the operator which key a blob needs, without revealing
// the key. Two keys sharing an id is possible (one chance in 2^32):
// NewKeyring refuses such a pair, and a blob of an unconfigured key sharing
// a configured key's id fails authentication (ReasonAuth) rather than
// opening.
//
// # Rotation
//
// An operator rotates by moving secrets.kek to secrets.kek_previous and
// setting a new secrets.kek. Open opens blobs of either key and reports
// whether it was the current one; the caller re-seals (with Seal, always
// under the current key) every value opened with current false, after
// which kek_previous can be dropped.
package secrets
