package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
)

// bootstrapTokenName is the principal of the token admin.bootstrap_token
// mints: audit rows name it.
const bootstrapTokenName = "local-admin"

// bootstrapScopes are the minted token's scopes: everything an operator
// at the node's own console does.
var bootstrapScopes = []string{admin.ScopeAllTenants, admin.ScopeTenantsRead, admin.ScopeTenantsWrite, admin.ScopeDebug}

// bootstrapToken is admin.bootstrap_token: the token the node minted for
// itself, its digest in the meta store and the token in
// <data_dir>/admin-token (mode 0600). It mints one on the first start, and
// again when the file is gone or no longer holds the stored token's
// (nothing else can tell the old token). minted is the token when this
// start minted it (the banner shows it once), "" otherwise.
func (n *node) bootstrapToken() (tok config.AdminToken, path, minted string, err error) {
	path = filepath.Join(n.cfg.Node.DataDir, "admin-token")
	stored, found, err := n.meta.BootstrapToken()
	if err != nil {
		return tok, path, "", err
	}
	if found && fileHolds(path, stored.SHA256) {
		return config.AdminToken{Name: stored.Name, SHA256: stored.SHA256, Scopes: stored.Scopes}, path, "", nil
	}
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return tok, path, "", err
	}
	minted = "ank_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	sum := sha256.Sum256([]byte(minted))
	tok = config.AdminToken{Name: bootstrapTokenName, SHA256: hex.EncodeToString(sum[:]), Scopes: bootstrapScopes}
	// The file first: a crash before the record leaves a file that holds
	// no stored token, and the next start mints again.
	if err := writeSecretFile(path, minted+"\n"); err != nil {
		return tok, path, "", fmt.Errorf("admin.bootstrap_token: cannot write %s: %w", path, err)
	}
	if err := n.meta.SetBootstrapToken(meta.AdminToken{Name: tok.Name, SHA256: tok.SHA256, Scopes: tok.Scopes, CreatedAt: time.Now().UTC()}); err != nil {
		return tok, path, "", err
	}
	return tok, path, minted, nil
}

// fileHolds reports whether the file at path holds a token whose SHA-256
// is digest.
func fileHolds(path, digest string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(b))))
	return hex.EncodeToString(sum[:]) == strings.ToLower(digest)
}

// writeSecretFile writes text to path, readable by the owner only, synced
// with its directory.
func writeSecretFile(path, text string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = vfsutil.SyncDir(vfs.Default, filepath.Dir(path))
	}
	return err
}

// banner tells the operator of the embedded default how to send a hook,
// read it back and add a source.
func (n *node) banner(w io.Writer) {
	admin := "http://" + n.cfg.Admin.Listen
	fmt.Fprintf(w, "\nAnkusa is running on its embedded default config (data under %s).\n", n.cfg.Node.DataDir)
	fmt.Fprintf(w, "Send a hook:\n\n  curl -i -X POST http://%s/webhooks/demo -H 'content-type: application/json' -d '{\"hello\":\"world\"}'\n\n", n.publicAddr)
	if n.tokenPath != "" {
		if n.tokenMinted != "" {
			fmt.Fprintf(w, "Admin token (shown once; kept in %s, mode 0600):\n\n  %s\n\n", n.tokenPath, n.tokenMinted)
		} else {
			fmt.Fprintf(w, "Admin token: in %s\n\n", n.tokenPath)
		}
		auth := fmt.Sprintf("-H \"Authorization: Bearer $(cat %s)\"", n.tokenPath)
		fmt.Fprintf(w, "Read the hook back (its id is in the answer above):\n\n  curl -s %s %s/v1/tenants/default/hooks/<id>\n\n", auth, admin)
		fmt.Fprintf(w, "Add a source (it answers on /webhooks/mine at once):\n\n  curl -s %s -X POST %s/v1/tenants/default/sources -d '{\"name\": \"mine\", \"verify\": {\"type\": \"none\"}}'\n\n", auth, admin)
	}
	fmt.Fprintf(w, "Metrics: %s/metrics   Stop: Ctrl-C\n\n", admin)
}
