package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// key returns a KeySize key whose bytes count up from first.
func key(first byte) []byte {
	k := make([]byte, KeySize)
	for i := range k {
		k[i] = first + byte(i)
	}
	return k
}

func mustKeyring(t testing.TB, kek, previous []byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(kek, previous)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return k
}

// reasonOf is err's Reason; it fails the test unless err is an *Error.
func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *secrets.Error", err, err)
	}
	return e.Reason
}

var testAD = AD{Tenant: "acme", Source: "stripe", Field: "verify.secret"}

// The golden blob: key 0x00..0x1f, nonce 0xa0..0xab, plaintext
// "whsec_golden", sealed for acme/stripe/verify.secret. It was checked
// against Python's cryptography AESGCM as well as against the
// computation below.
const goldenHex = "01" + "f41e85c0" + "a0a1a2a3a4a5a6a7a8a9aaab" +
	"91700f48269465d00e01e2bd" + // ciphertext of "whsec_golden"
	"c870d33a761e710681687b089ad33e94" // tag

func TestGoldenBlob(t *testing.T) {
	kek := key(0x00)
	var nonce [nonceSize]byte
	for i := range nonce {
		nonce[i] = 0xa0 + byte(i)
	}
	plain := []byte("whsec_golden")
	got := mustKeyring(t, kek, nil).sealWithNonce(plain, testAD, nonce)
	if hex.EncodeToString(got) != goldenHex {
		t.Fatalf("sealed blob changed: the format is frozen\n got  %x\n want %s", got, goldenHex)
	}

	// The header, field by field at its documented offset.
	if len(got) != 1+4+12+len(plain)+16 {
		t.Errorf("len = %d, want 1+4+12+%d+16", len(got), len(plain))
	}
	if got[0] != 0x01 {
		t.Errorf("version byte = %#x, want 0x01", got[0])
	}
	if id := binary.BigEndian.Uint32(got[1:5]); id != 0xf41e85c0 || id != KeyID(kek) {
		t.Errorf("key id at 1..4 = %08x, want f41e85c0 = KeyID(kek) %08x", id, KeyID(kek))
	}
	if !bytes.Equal(got[5:17], nonce[:]) {
		t.Errorf("nonce at 5..16 = %x, want %x", got[5:17], nonce)
	}

	// An independent computation: AES-256-GCM of the standard library with
	// the additional data written out as the package doc draws it.
	block, err := aes.NewCipher(kek)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	header := []byte{0x01, 0xf4, 0x1e, 0x85, 0xc0}
	ad := append([]byte("ankusa/secret/v1\x00acme\x00stripe\x00verify.secret\x00"), header...)
	want := gcm.Seal(append(append([]byte{}, header...), nonce[:]...), nonce[:], plain, ad)
	if !bytes.Equal(got, want) {
		t.Errorf("blob differs from the documented computation\n got  %x\n want %x", got, want)
	}

	// And the golden blob opens to its plaintext.
	golden, _ := hex.DecodeString(goldenHex)
	p, current, err := mustKeyring(t, kek, nil).Open(golden, testAD)
	if err != nil || !current || string(p) != "whsec_golden" {
		t.Errorf("Open(golden) = %q, %v, %v", p, current, err)
	}
}

// KeyID is pinned: SHA-256("ankusa/kek-id/v1" || key), first 4 bytes.
func TestKeyID(t *testing.T) {
	if got := KeyID(key(0x00)); got != 0xf41e85c0 {
		t.Errorf("KeyID(00..1f) = %08x, want f41e85c0", got)
	}
	if KeyID(key(0x00)) == KeyID(key(0x01)) {
		t.Error("two keys share an id")
	}
}

func TestRoundTrip(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	if !k.Enabled() || k.CurrentID() != KeyID(key(0x00)) {
		t.Fatalf("Enabled %v, CurrentID %08x", k.Enabled(), k.CurrentID())
	}
	for _, plain := range []string{"", "x", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "https://user:p%40ss@sink.example/in", strings.Repeat("\x00\xff", 4096)} {
		blob := k.Seal([]byte(plain), testAD)
		if len(blob) != len(plain)+Overhead {
			t.Errorf("len(Seal(%d bytes)) = %d, want %d", len(plain), len(blob), len(plain)+Overhead)
		}
		if len(plain) > 8 && bytes.Contains(blob, []byte(plain)) {
			t.Errorf("the blob holds its plaintext %q", plain)
		}
		got, current, err := k.Open(blob, testAD)
		if err != nil || !current || string(got) != plain {
			t.Errorf("Open(Seal(%q)) = %q, %v, %v", plain, got, current, err)
		}
		if id, ok := KeyIDOf(blob); !ok || id != k.CurrentID() {
			t.Errorf("KeyIDOf = %08x, %v, want %08x", id, ok, k.CurrentID())
		}
	}
}

// Seal does not keep plain, and Open's plaintext does not alias its blob.
func TestNoAliasing(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	plain := []byte("secret")
	blob := k.Seal(plain, testAD)
	plain[0] = 'X'
	got, _, err := k.Open(blob, testAD)
	if err != nil || string(got) != "secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	got[0] = 'Y'
	if again, _, err := k.Open(blob, testAD); err != nil || string(again) != "secret" {
		t.Fatalf("the blob changed with Open's plaintext: %q, %v", again, err)
	}
}

func TestSealsDiffer(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	a, b := k.Seal([]byte("same"), testAD), k.Seal([]byte("same"), testAD)
	if bytes.Equal(a, b) || bytes.Equal(a[offNonce:headerSize], b[offNonce:headerSize]) {
		t.Fatalf("two seals of one plaintext share their nonce:\n%x\n%x", a, b)
	}
}

// A blob opens only for the (tenant, source, field) it was sealed for.
func TestBoundToAD(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	blob := k.Seal([]byte("whsec_x"), testAD)
	for _, ad := range []AD{
		{Tenant: "acme2", Source: "stripe", Field: "verify.secret"},
		{Tenant: "acme", Source: "stripe2", Field: "verify.secret"},
		{Tenant: "acme", Source: "stripe", Field: "verify.secrets[0]"},
		{Tenant: "", Source: "stripe", Field: "verify.secret"},
		// The separators count: moving a character across one is another AD.
		{Tenant: "acmes", Source: "tripe", Field: "verify.secret"},
		{Tenant: "acme", Source: "stripev", Field: "erify.secret"},
	} {
		_, _, err := k.Open(blob, ad)
		if err == nil {
			t.Errorf("a blob sealed for %+v opens for %+v", testAD, ad)
			continue
		}
		if r := reasonOf(t, err); r != ReasonAuth {
			t.Errorf("%+v: reason %q, want %q", ad, r, ReasonAuth)
		}
	}
}

// Blobs swapped between two fields of one source open for neither.
func TestSwappedBlobs(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	adA := AD{Tenant: "acme", Source: "s", Field: "verify.secrets[0]"}
	adB := AD{Tenant: "acme", Source: "s", Field: "sinks[0].secret"}
	a, b := k.Seal([]byte("a-secret"), adA), k.Seal([]byte("b-secret"), adB)
	for _, c := range []struct {
		blob []byte
		ad   AD
	}{{b, adA}, {a, adB}} {
		if _, _, err := k.Open(c.blob, c.ad); err == nil || reasonOf(t, err) != ReasonAuth {
			t.Errorf("swapped blob for %s: %v, want ReasonAuth", c.ad.Field, err)
		}
	}
}

// Every single-bit change of a blob keeps it from opening.
func TestEveryBitFlipFails(t *testing.T) {
	k := mustKeyring(t, key(0x00), key(0x40))
	blob := k.Seal([]byte("abc"), testAD)
	for i := range len(blob) * 8 {
		flipped := bytes.Clone(blob)
		flipped[i/8] ^= 1 << (i % 8)
		if p, _, err := k.Open(flipped, testAD); err == nil {
			t.Errorf("bit %d (byte %d) flipped: opens to %q", i, i/8, p)
		} else {
			reasonOf(t, err)
		}
	}
	if _, _, err := k.Open(blob, testAD); err != nil {
		t.Fatalf("the unflipped blob: %v", err)
	}
}

func TestTruncatedAndVersion(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	blob := k.Seal(nil, testAD)
	if len(blob) != Overhead || Overhead != 33 {
		t.Fatalf("an empty plaintext seals to %d bytes, Overhead %d, want 33", len(blob), Overhead)
	}
	for n := range Overhead {
		_, _, err := k.Open(blob[:n], testAD)
		if err == nil || reasonOf(t, err) != ReasonFormat {
			t.Errorf("blob of %d bytes: %v, want ReasonFormat", n, err)
		}
		if _, ok := KeyIDOf(blob[:n]); ok {
			t.Errorf("KeyIDOf(%d bytes) ok", n)
		}
	}
	// A longer blob cut short keeps the minimum length: authentication fails.
	long := k.Seal([]byte("0123456789"), testAD)
	if _, _, err := k.Open(long[:len(long)-1], testAD); err == nil || reasonOf(t, err) != ReasonAuth {
		t.Errorf("blob less its last byte: %v, want ReasonAuth", err)
	}
	for _, v := range []byte{0x00, 0x02, 0xff} {
		other := bytes.Clone(blob)
		other[0] = v
		_, _, err := k.Open(other, testAD)
		if err == nil || reasonOf(t, err) != ReasonFormat || !strings.Contains(err.Error(), fmt.Sprintf("version 0x%02x", v)) {
			t.Errorf("version %#x: %v, want ReasonFormat naming the version", v, err)
		}
		if _, ok := KeyIDOf(other); ok {
			t.Errorf("KeyIDOf(version %#x) ok", v)
		}
	}
}

// A blob of a key that is not configured: ReasonNoKey, naming its id and
// the configured ones.
func TestOtherKey(t *testing.T) {
	stranger := mustKeyring(t, key(0x80), nil)
	blob := stranger.Seal([]byte("x"), testAD)
	sid := fmt.Sprintf("0x%08x", KeyID(key(0x80)))
	for _, c := range []struct {
		name string
		k    *Keyring
		ids  []string
	}{
		{"kek only", mustKeyring(t, key(0x00), nil), []string{sid, fmt.Sprintf("0x%08x", KeyID(key(0x00))), "secrets.kek_previous is not set"}},
		{"kek and previous", mustKeyring(t, key(0x00), key(0x40)), []string{sid, fmt.Sprintf("0x%08x", KeyID(key(0x00))), fmt.Sprintf("0x%08x", KeyID(key(0x40)))}},
		{"no kek", mustKeyring(t, nil, nil), []string{sid, "secrets.kek is not set"}},
		{"nil keyring", nil, []string{sid, "secrets.kek is not set"}},
	} {
		_, _, err := c.k.Open(blob, testAD)
		if err == nil || reasonOf(t, err) != ReasonNoKey {
			t.Errorf("%s: %v, want ReasonNoKey", c.name, err)
			continue
		}
		var e *Error
		if errors.As(err, &e); e.KeyID != KeyID(key(0x80)) {
			t.Errorf("%s: Error.KeyID %08x, want the blob's", c.name, e.KeyID)
		}
		for _, s := range c.ids {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", c.name, err, s)
			}
		}
	}
}

// A rotation: blobs of the old key open under NewKeyring(new, old) with
// current false, and re-sealed they are current.
func TestRotation(t *testing.T) {
	oldK := mustKeyring(t, key(0x40), nil)
	blob := oldK.Seal([]byte("whsec_old"), testAD)
	rotated := mustKeyring(t, key(0x00), key(0x40))
	if rotated.CurrentID() != KeyID(key(0x00)) {
		t.Fatalf("CurrentID %08x", rotated.CurrentID())
	}
	if id, ok := rotated.PreviousID(); !ok || id != KeyID(key(0x40)) {
		t.Fatalf("PreviousID %08x, %v", id, ok)
	}
	plain, current, err := rotated.Open(blob, testAD)
	if err != nil || current || string(plain) != "whsec_old" {
		t.Fatalf("old blob under the rotated keyring: %q, current %v, %v", plain, current, err)
	}
	resealed := rotated.Seal(plain, testAD)
	if id, _ := KeyIDOf(resealed); id != KeyID(key(0x00)) {
		t.Errorf("re-sealed under %08x, want the new key's", id)
	}
	if plain, current, err := rotated.Open(resealed, testAD); err != nil || !current || string(plain) != "whsec_old" {
		t.Errorf("re-sealed blob: %q, current %v, %v", plain, current, err)
	}
	// Once kek_previous is dropped, only the re-sealed blob opens.
	after := mustKeyring(t, key(0x00), nil)
	if _, _, err := after.Open(resealed, testAD); err != nil {
		t.Errorf("re-sealed blob without kek_previous: %v", err)
	}
	if _, _, err := after.Open(blob, testAD); err == nil || reasonOf(t, err) != ReasonNoKey {
		t.Errorf("old blob without kek_previous: %v, want ReasonNoKey", err)
	}
}

// A blob of another key that happens to share a configured key's id fails
// authentication: the id selects a key, it does not prove one.
func TestSharedIDIsAuth(t *testing.T) {
	k := mustKeyring(t, key(0x00), nil)
	blob := mustKeyring(t, key(0x80), nil).Seal([]byte("x"), testAD)
	binary.BigEndian.PutUint32(blob[offKeyID:], k.CurrentID()) // another key, the same id
	if _, _, err := k.Open(blob, testAD); err == nil || reasonOf(t, err) != ReasonAuth {
		t.Errorf("%v, want ReasonAuth", err)
	}
}

func TestNewKeyringErrors(t *testing.T) {
	for _, c := range []struct {
		name          string
		kek, previous []byte
		want          string
	}{
		{"previous without kek", nil, key(0x40), "secrets.kek_previous: set without secrets.kek"},
		{"previous with empty kek", []byte{}, key(0x40), "secrets.kek_previous: set without secrets.kek"},
		{"same keys", key(0x00), key(0x00), "secrets.kek_previous is the same key as secrets.kek"},
		{"kek of 16 bytes", key(0x00)[:16], nil, "secrets.kek: is 16 bytes; a KEK is 32 bytes"},
		{"kek of 31 bytes", key(0x00)[:31], nil, "secrets.kek: is 31 bytes"},
		{"kek of 33 bytes", append(key(0x00), 1), nil, "secrets.kek: is 33 bytes"},
		{"previous of 16 bytes", key(0x00), key(0x40)[:16], "secrets.kek_previous: is 16 bytes"},
		{"previous of 64 bytes", key(0x00), append(key(0x40), key(0x60)...), "secrets.kek_previous: is 64 bytes"},
	} {
		k, err := NewKeyring(c.kek, c.previous)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, %v; want an error starting %q", c.name, k, err, c.want)
			continue
		}
		if hexKey := hex.EncodeToString(c.kek); len(c.kek) > 0 && strings.Contains(err.Error(), hexKey[:16]) {
			t.Errorf("%s: the error holds key bytes: %v", c.name, err)
		}
	}
	for _, kek := range [][]byte{nil, {}} {
		k, err := NewKeyring(kek, nil)
		if err != nil || k.Enabled() || k.CurrentID() != 0 {
			t.Errorf("NewKeyring(%v, nil) = enabled %v, id %d, %v; want a keyring that seals nothing", kek, k.Enabled(), k.CurrentID(), err)
		}
	}
	var nilK *Keyring
	if nilK.Enabled() || nilK.CurrentID() != 0 {
		t.Error("a nil keyring is enabled")
	}
}

func TestSealPanics(t *testing.T) {
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.HasPrefix(s, "BUG: ") {
				t.Errorf("%s: recovered %v, want a BUG panic", name, r)
			}
		}()
		fn()
	}
	var nilK *Keyring
	mustPanic("nil keyring", func() { nilK.Seal([]byte("x"), testAD) })
	mustPanic("keyring without kek", func() { mustKeyring(t, nil, nil).Seal([]byte("x"), testAD) })
	k := mustKeyring(t, key(0x00), nil)
	for _, ad := range []AD{{"a\x00", "s", "f"}, {"a", "\x00", "f"}, {"a", "s", "f\x00x"}} {
		mustPanic(fmt.Sprintf("Seal %q", ad), func() { k.Seal([]byte("x"), ad) })
		mustPanic(fmt.Sprintf("Open %q", ad), func() { k.Open(k.Seal([]byte("x"), testAD), ad) })
	}
}

// No error of Open holds key or plaintext bytes.
func TestErrorsHoldNoSecrets(t *testing.T) {
	kek := key(0x00)
	k := mustKeyring(t, kek, nil)
	plain := []byte("plaintext-do-not-print")
	blob := k.Seal(plain, testAD)
	bad := bytes.Clone(blob)
	bad[len(bad)-1] ^= 1
	other := mustKeyring(t, key(0x80), nil).Seal(plain, testAD)
	for _, b := range [][]byte{blob[:10], bad, other} {
		_, _, err := k.Open(b, testAD)
		if err == nil {
			t.Fatal("opened")
		}
		msg := err.Error()
		for _, s := range []string{string(plain), hex.EncodeToString(kek)[:16], string(kek[:8]), hex.EncodeToString(plain)} {
			if strings.Contains(msg, s) {
				t.Errorf("%q holds %q", msg, s)
			}
		}
	}
}

// One keyring seals and opens from many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	k := mustKeyring(t, key(0x00), key(0x40))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ad := AD{Tenant: "t", Source: fmt.Sprint(g), Field: "f"}
			for i := range 200 {
				want := fmt.Sprintf("%d-%d", g, i)
				got, _, err := k.Open(k.Seal([]byte(want), ad), ad)
				if err != nil || string(got) != want {
					errs <- fmt.Errorf("goroutine %d: %q, %v", g, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Two different keys sharing a key id (found by a birthday search, about
// 2^16 keys) cannot be kek and kek_previous: Open could not tell them apart.
func TestNewKeyringRefusesSharedID(t *testing.T) {
	seen := make(map[uint32][]byte)
	for i := uint64(0); ; i++ {
		k := make([]byte, KeySize)
		binary.BigEndian.PutUint64(k, i)
		id := KeyID(k)
		other, ok := seen[id]
		if !ok {
			seen[id] = k
			continue
		}
		_, err := NewKeyring(k, other)
		if err == nil || !strings.HasPrefix(err.Error(), "secrets.kek_previous: has the key id of secrets.kek") || !strings.Contains(err.Error(), fmt.Sprintf("0x%08x", id)) {
			t.Fatalf("keys sharing id %08x: %v, want the shared id refused", id, err)
		}
		return
	}
}
