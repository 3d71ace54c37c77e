package archive

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Dir is a Backend over a local directory (archive.type: dir): the same
// key layout as a bucket, one file per object. A Put writes a temporary
// file, checks its SHA-256, syncs it and links it into place, so an object
// is whole or absent and is never replaced.
type Dir struct{ root string }

// NewDir opens (creating it) the directory at root.
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("archive: dir: no path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("archive: dir %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("archive: dir %q: %w", root, err)
	}
	return &Dir{root: abs}, nil
}

func (d *Dir) String() string { return "dir:" + d.root }

func (d *Dir) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("archive: bad key %q", key)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." || strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("archive: bad key %q", key)
		}
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put implements Backend.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	path, err := d.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, key)
	}
	dir := filepath.Dir(path)
	if err := vfsutil.MkdirAllSynced(vfs.Default, dir); err != nil {
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	defer os.Remove(tmp)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxReader{ctx, r}, size+1))
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes, want %d", n, size)
	}
	if err == nil && hex.EncodeToString(h.Sum(nil)) != sum {
		err = fmt.Errorf("content sha256 %x does not match %s", h.Sum(nil), sum)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	if err := vfsutil.SyncDir(vfs.Default, dir); err != nil {
		return fmt.Errorf("archive: %s: %w", key, err)
	}
	return nil
}

// Stat implements Backend. The SHA-256 is computed from the file.
func (d *Dir) Stat(ctx context.Context, key string) (Object, error) {
	path, err := d.path(key)
	if err != nil {
		return Object{}, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return Object{}, fmt.Errorf("archive: %s: %w", key, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return Object{}, fmt.Errorf("archive: %s: %w", key, err)
	}
	return Object{Key: key, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ReadAt implements Backend.
func (d *Dir) ReadAt(_ context.Context, key string, p []byte, off int64) error {
	f, err := d.open(key)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("archive: %s: read %d bytes at %d: %w", key, len(p), off, err)
}

// Delete implements Backend: the file goes and its directory is synced,
// so a deleted object stays deleted after a crash. Empty directories are
// left in place (a Put may be about to write into one).
func (d *Dir) Delete(_ context.Context, key string) error {
	path, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("archive: delete %s: %w", key, err)
	}
	if err := vfsutil.SyncDir(vfs.Default, filepath.Dir(path)); err != nil {
		return fmt.Errorf("archive: delete %s: %w", key, err)
	}
	return nil
}

// Get implements Backend.
func (d *Dir) Get(_ context.Context, key string) (io.ReadCloser, error) {
	return d.open(key)
}

func (d *Dir) open(key string) (*os.File, error) {
	path, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", key, err)
	}
	return f, nil
}

// List implements Backend. Files whose names start with a dot (a Put in
// progress) are not objects.
func (d *Dir) List(ctx context.Context, prefix string, fn func(Object) error) error {
	// Walk from the deepest directory the prefix names.
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
	}
	err := filepath.WalkDir(start, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == start {
				return fs.SkipAll
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if strings.HasPrefix(e.Name(), ".") && path != start {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		return fn(Object{Key: key, Size: info.Size()})
	})
	if err != nil {
		return fmt.Errorf("archive: list %s: %w", prefix, err)
	}
	return nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
