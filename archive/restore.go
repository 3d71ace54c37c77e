package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
)

// RestorerOptions configure a Restorer.
type RestorerOptions struct {
	Backend Backend
	Layout  Layout
	// Node is node.name: part of every key.
	Node string
	// FS and Dir are where the local segment files are.
	FS  vfs.FS
	Dir string
	// Timeout bounds one restore (default 5m).
	Timeout time.Duration
}

// Restorer puts the archived copy of a damaged local segment in its place:
// it is the segment store's Repairer.
type Restorer struct{ o RestorerOptions }

// NewRestorer builds a Restorer.
func NewRestorer(o RestorerOptions) (*Restorer, error) {
	if o.Backend == nil || o.FS == nil || o.Node == "" {
		return nil, errors.New("archive: a restorer needs a backend, the segment file system and the node name")
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	return &Restorer{o: o}, nil
}

var _ segment.Repairer = (*Restorer)(nil)

// Restore implements segment.Repairer: it reads the segment's catalogue
// object (which holds the SHA-256 the uploader computed from the local
// file before the upload), downloads the segment object into a temporary
// file beside the damaged one while hashing it, refuses a copy whose size
// or SHA-256 differs, or whose footer, index and blocks do not check, and
// only then syncs it, renames it over the damaged file and syncs the
// directory.
func (r *Restorer) Restore(ctx context.Context, e *meta.SegmentEntry) (err error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	defer func() {
		if err != nil {
			restoreRefused.Inc()
		}
	}()
	cat, err := r.catalogue(ctx, e)
	if err != nil {
		return err
	}
	fs := r.o.FS
	tmp := fs.PathJoin(r.o.Dir, segment.RestoringName(e.Name))
	if err := r.download(ctx, e, &cat, tmp); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	if err := checkRestored(fs, tmp, e); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	final := fs.PathJoin(r.o.Dir, e.Name)
	if err := fs.Rename(tmp, final); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("archive: restore %s: cannot rename %q: %w", e.Name, tmp, err)
	}
	if err := vfsutil.SyncDir(fs, r.o.Dir); err != nil {
		return fmt.Errorf("archive: restore %s: %w", e.Name, err)
	}
	restoredBytes.Add(int(e.Size))
	return nil
}

// catalogue reads and checks the catalogue object of e: it must describe
// the same segment as the node's catalogue entry.
func (r *Restorer) catalogue(ctx context.Context, e *meta.SegmentEntry) (Catalogue, error) {
	key := r.o.Layout.CatalogueKey(r.o.Node, e)
	rc, err := r.o.Backend.Get(ctx, key)
	if err != nil {
		return Catalogue{}, fmt.Errorf("archive: restore %s: cannot read %s: %w", e.Name, key, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxCatalogueObject+1))
	rc.Close()
	if err != nil {
		return Catalogue{}, fmt.Errorf("archive: restore %s: cannot read %s: %w", e.Name, key, err)
	}
	if len(data) > maxCatalogueObject {
		return Catalogue{}, fmt.Errorf("archive: restore %s: catalogue object %s is too large", e.Name, key)
	}
	c, err := ParseCatalogue(key, data)
	if err != nil {
		return c, fmt.Errorf("archive: restore %s: %w", e.Name, err)
	}
	if c.FirstSeq != e.FirstSeq || c.LastSeq != e.LastSeq || c.Size != e.Size || c.Node != r.o.Node {
		return c, fmt.Errorf("archive: restore %s: catalogue object %s describes node %q seqs %d..%d of %d bytes, the local catalogue node %q seqs %d..%d of %d bytes",
			e.Name, key, c.Node, c.FirstSeq, c.LastSeq, c.Size, r.o.Node, e.FirstSeq, e.LastSeq, e.Size)
	}
	return c, nil
}

// download writes the segment object to tmp, synced, and checks its size
// and SHA-256 against the catalogue object.
func (r *Restorer) download(ctx context.Context, e *meta.SegmentEntry, c *Catalogue, tmp string) error {
	key := r.o.Layout.SegmentKey(r.o.Node, e)
	rc, err := r.o.Backend.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("archive: restore %s: cannot read %s: %w", e.Name, key, err)
	}
	defer rc.Close()
	f, err := r.o.FS.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("archive: restore %s: cannot create %q: %w", e.Name, tmp, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxReader{ctx, rc}, c.Size+1))
	if err == nil {
		err = checkDownload(key, n, h, c)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive: restore %s: %w", e.Name, err)
	}
	return nil
}

// checkDownload compares what was read with the catalogue object.
func checkDownload(key string, n int64, h hash.Hash, c *Catalogue) error {
	if n != c.Size {
		return fmt.Errorf("%s has %d bytes (or more), its catalogue object says %d", key, n, c.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != c.SHA256 {
		return fmt.Errorf("%s is damaged: its sha256 is %s, its catalogue object says %s", key, sum, c.SHA256)
	}
	return nil
}

// checkRestored opens the downloaded copy as a segment and checks it
// whole: the SHA-256 held, so this is a last guard against a catalogue
// object that describes another file.
func checkRestored(fs vfs.FS, path string, e *meta.SegmentEntry) error {
	f, err := segment.OpenFile(fs, path)
	if err != nil {
		return fmt.Errorf("archive: restore %s: the archived copy: %w", e.Name, err)
	}
	defer f.Close()
	if f.Footer.FirstSeq != e.FirstSeq || f.Footer.LastSeq != e.LastSeq || f.Footer.FirstID != e.FirstID || f.Footer.LastID != e.LastID {
		return fmt.Errorf("archive: restore %s: the archived copy holds seqs %d..%d, the catalogue %d..%d", e.Name, f.Footer.FirstSeq, f.Footer.LastSeq, e.FirstSeq, e.LastSeq)
	}
	dec := segment.NewDecoder()
	defer dec.Close()
	if err := f.Verify(dec); err != nil {
		return fmt.Errorf("archive: restore %s: the archived copy: %w", e.Name, err)
	}
	return nil
}
