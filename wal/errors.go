package wal

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrCorrupt is wrapped by recovery when a record before the tail is bad.
	ErrCorrupt = errors.New("wal: corrupt record")
	// ErrFatal is returned to every waiter once a write or sync has failed:
	// the node must stop, and nothing more is acknowledged.
	ErrFatal = errors.New("wal: write or sync failed; the node is stopping")
	// ErrNoSpace is returned for a commit refused because the file system
	// of node.data_dir is full (or below storage.reserve_bytes): nothing of
	// it was written, and the same commit may succeed once space returns.
	ErrNoSpace = errors.New("wal: no space left on the file system of node.data_dir; retry later")
	// ErrClosed is returned for commits after Close.
	ErrClosed = errors.New("wal: closed")
	// ErrTooLarge is returned for a record larger than MaxBatchBytes.
	ErrTooLarge = errors.New("wal: record larger than wal.max_batch_bytes")
	// ErrTenantLimit is returned for a hook of a new tenant once
	// MaxTenants ordinals exist.
	ErrTenantLimit = errors.New("wal: tenants.max reached; a new tenant cannot be created")
)

// CorruptError says where recovery found corruption.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt record in %s at offset %d: %s; start with -wal-recovery=truncate to cut the log there (every record from that offset on is dropped)", e.File, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }
