package archive

import (
	"context"
	"errors"
	"io"
)

// Errors of a Backend.
var (
	// ErrExists: Put found an object at the key already (If-None-Match).
	ErrExists = errors.New("archive: an object already exists at the key")
	// ErrNotExist: no object at the key.
	ErrNotExist = errors.New("archive: no object at the key")
)

// Object describes a stored object.
type Object struct {
	Key  string
	Size int64
	// SHA256 is the hex SHA-256 of the content as the uploader recorded
	// it (empty when the object was not written by an uploader).
	SHA256 string
}

// Backend is an object store with the semantics the archive needs. All
// methods are safe for concurrent use.
type Backend interface {
	// Put stores size bytes read from r at key, unless an object exists
	// there already (ErrExists). sha256 is the hex SHA-256 of the content:
	// the store checks it before the object becomes visible, and Stat
	// reports it back.
	Put(ctx context.Context, key string, r io.Reader, size int64, sha256 string) error
	// Stat describes the object at key, or ErrNotExist.
	Stat(ctx context.Context, key string) (Object, error)
	// ReadAt reads len(p) bytes of the object at key from offset off (a
	// ranged read); short objects are io.ErrUnexpectedEOF.
	ReadAt(ctx context.Context, key string, p []byte, off int64) error
	// Get streams the whole object at key.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// List calls fn for every object whose key starts with prefix, in key
	// order, until fn returns an error.
	List(ctx context.Context, prefix string, fn func(Object) error) error
	// Delete removes the object at key; a key with no object is not an
	// error (a retried delete finds it gone).
	Delete(ctx context.Context, key string) error
	// String names the backend for logs ("s3://bucket/prefix", "dir:/path").
	String() string
}
