package admin

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
)

// memTokens is a BootstrapStore in memory; failSet fails the next
// SetBootstrapToken.
type memTokens struct {
	tok     meta.AdminToken
	found   bool
	failSet bool
}

func (m *memTokens) BootstrapToken() (meta.AdminToken, bool, error) { return m.tok, m.found, nil }

func (m *memTokens) SetBootstrapToken(t meta.AdminToken) error {
	if m.failSet {
		m.failSet = false
		return errors.New("injected: the store is gone")
	}
	m.tok, m.found = t, true
	return nil
}

func readFile(t *testing.T, fs vfs.FS, path string) string {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBootstrapToken: the first start mints a token, keeps it in the file
// and its digest in the store; later starts find it and mint nothing; a
// missing file, or one that holds another token, mints a new one.
func TestBootstrapToken(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	store := &memTokens{}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	o := BootstrapOptions{Store: store, FS: fs, Dir: "/data", Now: func() time.Time { return now }}

	tok, path, minted, err := BootstrapToken(o)
	if err != nil {
		t.Fatal(err)
	}
	if path != "/data/admin-token" || !strings.HasPrefix(minted, "ank_") {
		t.Fatalf("path %q, minted %q; want /data/admin-token and a new ank_ token", path, minted)
	}
	if got := readFile(t, fs, path); got != minted+"\n" {
		t.Fatalf("the file holds %q, want the minted token", got)
	}
	if tok.Name != "local-admin" || tok.SHA256 != digest(minted) || !slices.Equal(tok.Scopes, bootstrapScopes) {
		t.Fatalf("token %+v, want local-admin with the minted token's digest and every scope", tok)
	}
	if s := store.tok; s.Name != tok.Name || s.SHA256 != tok.SHA256 || !s.CreatedAt.Equal(now) {
		t.Fatalf("stored %+v, want the token's name and digest, created at %s", s, now)
	}

	again, _, minted2, err := BootstrapToken(o)
	if err != nil || minted2 != "" || again.SHA256 != tok.SHA256 {
		t.Fatalf("second start: %+v, minted %q, %v; want the same token, none minted", again, minted2, err)
	}

	for name, damage := range map[string]func(){
		"the file is gone": func() {
			if err := fs.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"the file holds another token": func() {
			if err := writeSecretFile(fs, path, "ank_someoneelse\n"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		damage()
		prev := store.tok.SHA256
		tok, _, minted, err := BootstrapToken(o)
		if err != nil || minted == "" || tok.SHA256 == prev || store.tok.SHA256 != tok.SHA256 || readFile(t, fs, path) != minted+"\n" {
			t.Fatalf("%s: %+v, minted %q, %v; want a new token in the file and the store", name, tok, minted, err)
		}
	}
}

// TestBootstrapTokenFileFirst: the file is written before the record, so
// a failure (or a crash) between the two leaves a file that holds no
// stored token, and the next start mints again rather than keep a record
// no file holds.
func TestBootstrapTokenFileFirst(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	store := &memTokens{failSet: true}
	o := BootstrapOptions{Store: store, FS: fs, Dir: "/data"}
	_, path, _, err := BootstrapToken(o)
	if err == nil || store.found {
		t.Fatalf("err %v, stored %v; want the store's error and no record", err, store.found)
	}
	lost := readFile(t, fs, path)
	tok, _, minted, err := BootstrapToken(o)
	if err != nil || minted == "" || minted+"\n" == lost || tok.SHA256 != store.tok.SHA256 {
		t.Fatalf("next start: %+v, minted %q, %v; want a new token stored", tok, minted, err)
	}
}

// TestBootstrapTokenSurvivesACrash: the file and its directory entry are
// synced before the record is written, so a crash after BootstrapToken
// returns keeps the file that the stored digest names.
func TestBootstrapTokenSurvivesACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	if err := vfsutil.MkdirAllSynced(fs, "/data"); err != nil {
		t.Fatal(err)
	}
	_, path, minted, err := BootstrapToken(BootstrapOptions{Store: &memTokens{}, FS: fs, Dir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if got := readFile(t, crashed, path); got != minted+"\n" {
		t.Fatalf("after a crash the file holds %q, want the minted token", got)
	}
}

// TestBootstrapTokenMode: on the disk the file is the owner's only.
func TestBootstrapTokenMode(t *testing.T) {
	dir := t.TempDir()
	_, path, _, err := BootstrapToken(BootstrapOptions{Store: &memTokens{}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || path != filepath.Join(dir, "admin-token") {
		t.Fatalf("%s: %v, mode %v; want %s/admin-token, mode 0600", path, err, fi.Mode(), dir)
	}
}
