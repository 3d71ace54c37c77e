package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
)

// bootstrapTokenName is the principal of the token admin.bootstrap_token
// mints: audit rows name it.
const bootstrapTokenName = "local-admin"

// bootstrapTokenFile is the name of the file, in node.data_dir, that
// holds the minted token.
const bootstrapTokenFile = "admin-token"

// bootstrapScopes are the minted token's scopes: everything an operator
// at the node's own console does.
var bootstrapScopes = []string{ScopeAllTenants, ScopeTenantsRead, ScopeTenantsWrite, ScopeDebug}

// BootstrapStore keeps the minted token's record: *meta.Store.
type BootstrapStore interface {
	BootstrapToken() (meta.AdminToken, bool, error)
	SetBootstrapToken(meta.AdminToken) error
}

// BootstrapOptions is what BootstrapToken works on.
type BootstrapOptions struct {
	// Store keeps the token's record (its digest, never the token).
	Store BootstrapStore
	// FS holds the token's file. nil: vfs.Default.
	FS vfs.FS
	// Dir is node.data_dir; it exists.
	Dir string
	// Now stamps a minted token's record. nil: time.Now.
	Now func() time.Time
}

// BootstrapToken is admin.bootstrap_token: the token the node mints for
// itself, its digest in the meta store (o.Store) and the token in
// <o.Dir>/admin-token (mode 0600). It mints one on the first start, and
// again when the file is gone or no longer holds the stored token's
// (nothing else can tell the old token). It returns the token as the
// admin API checks it, the file's path, and minted, the token when this
// call minted it (the banner shows it once), "" otherwise.
//
// The file is written before the record, each synced: a crash between the
// two leaves a file that holds no stored token, and the next start mints
// again; the other order could leave a stored token no file holds.
func BootstrapToken(o BootstrapOptions) (tok config.AdminToken, path, minted string, err error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	path = o.FS.PathJoin(o.Dir, bootstrapTokenFile)
	stored, found, err := o.Store.BootstrapToken()
	if err != nil {
		return tok, path, "", err
	}
	if found && fileHolds(o.FS, path, stored.SHA256) {
		return config.AdminToken{Name: stored.Name, SHA256: stored.SHA256, Scopes: stored.Scopes}, path, "", nil
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return tok, path, "", err
	}
	minted = "ank_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	sum := sha256.Sum256([]byte(minted))
	tok = config.AdminToken{Name: bootstrapTokenName, SHA256: hex.EncodeToString(sum[:]), Scopes: bootstrapScopes}
	if err := writeSecretFile(o.FS, path, minted+"\n"); err != nil {
		return tok, path, "", fmt.Errorf("admin.bootstrap_token: cannot write %s: %w", path, err)
	}
	if err := o.Store.SetBootstrapToken(meta.AdminToken{Name: tok.Name, SHA256: tok.SHA256, Scopes: tok.Scopes, CreatedAt: o.Now().UTC()}); err != nil {
		return tok, path, "", err
	}
	return tok, path, minted, nil
}

// fileHolds reports whether the file at path holds a token whose SHA-256
// is digest.
func fileHolds(fs vfs.FS, path, digest string) bool {
	f, err := fs.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(b))))
	return hex.EncodeToString(sum[:]) == strings.ToLower(digest)
}

// writeSecretFile writes text to path, readable by the owner only: a
// temporary file, synced, renamed into place, the directory synced. On a
// file system without descriptors (a test's) the mode is not set.
func writeSecretFile(fs vfs.FS, path, text string) error {
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	// The mode before the secret: vfs.FS creates files 0666 less the umask.
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err = unix.Fchmod(int(fd), 0o600)
	}
	if err == nil {
		_, err = io.WriteString(f, text)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err == nil {
		err = vfsutil.SyncDir(fs, fs.PathDir(path))
	}
	return err
}
