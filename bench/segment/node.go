package main

import (
	"errors"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/wal"
)

// node is a meta store, a WAL and (optionally) a segment store in one
// directory on disk, wired as `ankusa serve` wires them (see
// segment/harness_test.go).
type node struct {
	dir   string
	meta  *meta.Store
	wal   *wal.WAL
	store *segment.Store
	fatal chan error
}

// openNode opens the node in dir; so configures its store, whose FS, Dir,
// Log and Meta it fills in; nil opens none.
func openNode(dir string, so *segment.Options) (*node, error) {
	fs := vfs.Default
	n := &node{dir: dir, fatal: make(chan error, 1)}
	if err := vfsutil.MkdirAllSynced(fs, dir); err != nil {
		return nil, err
	}
	m, err := meta.Open(meta.Options{Dir: filepath.Join(dir, "meta"), FS: fs})
	if err != nil {
		return nil, err
	}
	n.meta = m
	w, err := wal.Open(wal.Options{FS: fs, Dir: filepath.Join(dir, "wal"), Node: 1, Meta: m})
	if err != nil {
		return nil, errors.Join(err, n.close())
	}
	n.wal = w
	if so != nil {
		if err := n.openStore(*so); err != nil {
			return nil, errors.Join(err, n.close())
		}
	}
	return n, nil
}

// openStore opens a segment store on the node's log and catalogue; a
// whole segment file in its directory that the catalogue lacks is
// verified and adopted.
func (n *node) openStore(o segment.Options) error {
	o.FS, o.Dir, o.Log, o.Meta = vfs.Default, filepath.Join(n.dir, "segments"), n.wal, n.meta
	o.OnFatal = func(err error) {
		select {
		case n.fatal <- err:
		default:
		}
	}
	s, err := segment.Open(o)
	if err != nil {
		return err
	}
	n.store = s
	return nil
}

func (n *node) closeStore() error {
	if n.store == nil {
		return nil
	}
	err := n.store.Close()
	n.store = nil
	return err
}

func (n *node) close() error {
	errs := []error{n.closeStore()}
	if n.wal != nil {
		errs = append(errs, n.wal.Close())
	}
	if n.meta != nil {
		errs = append(errs, n.meta.Close())
	}
	return errors.Join(errs...)
}

// commit commits e through the WAL (the edge's path after verification)
// and returns the seq it was given.
func (n *node) commit(e *envelope.Envelope) (uint64, error) {
	req := wal.AcquireRequest()
	defer wal.ReleaseRequest(req)
	fresh := *e // the loop assigns the identity
	fresh.Seq, fresh.ID, fresh.TenantOrdinal = 0, envelope.ID{}, 0
	req.Buf = fresh.AppendTo(req.Buf)
	wal.SealPayload(req.Buf)
	if err := n.wal.Commit(req); err != nil {
		return 0, err
	}
	return req.Seq, nil
}
