package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options name a bucket on an S3-compatible server (archive.type: s3).
type S3Options struct {
	Endpoint  string // host:port
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
	TLS       bool
	// PartSize is the multipart part size (default 16 MiB): larger objects
	// go up in parts.
	PartSize uint64
}

// S3 is a Backend over an S3-compatible bucket, with path-style bucket
// lookup (what self-hosted servers expect). Every Put sends If-None-Match:
// * and the content's SHA-256 (x-amz-checksum-sha256), which the server
// checks before the object exists; the hex digest is also stored as user
// metadata so Stat can report it.
type S3 struct {
	c        *minio.Client
	bucket   string
	partSize uint64
	name     string
}

// metaSHA256 is the user metadata key holding the content's hex SHA-256.
const metaSHA256 = "Ankusa-Sha256"

// NewS3 builds the client; it does not contact the server.
func NewS3(o S3Options) (*S3, error) {
	if o.Endpoint == "" || o.Bucket == "" {
		return nil, errors.New("archive: s3: endpoint and bucket are required")
	}
	c, err := minio.New(o.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure:       o.TLS,
		Region:       o.Region,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1, // the uploader retries with its own backoff
	})
	if err != nil {
		return nil, fmt.Errorf("archive: s3 endpoint %q: %w", o.Endpoint, err)
	}
	if o.PartSize == 0 {
		o.PartSize = 16 << 20
	}
	scheme := "http"
	if o.TLS {
		scheme = "https"
	}
	return &S3{c: c, bucket: o.Bucket, partSize: o.PartSize, name: fmt.Sprintf("s3:%s://%s/%s", scheme, o.Endpoint, o.Bucket)}, nil
}

func (s *S3) String() string { return s.name }

// Check tells whether the bucket is there and reachable.
func (s *S3) Check(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", s.name, err)
	}
	if !ok {
		return fmt.Errorf("archive: %s: no such bucket", s.name)
	}
	return nil
}

// Put implements Backend. An object up to PartSize goes up in one PUT
// carrying x-amz-checksum-sha256 (the file's digest, computed before the
// upload) and If-None-Match: *; a larger one in parts, each with its own
// SHA-256, completed with If-None-Match: * and aborted on any failure.
// The server checks every checksum before the object exists.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64, sum string) error {
	raw, err := hex.DecodeString(sum)
	if err != nil || len(raw) != sha256.Size {
		return fmt.Errorf("archive: put %s: bad sha256 %q", key, sum)
	}
	if size > int64(s.partSize) {
		return s.putParts(ctx, key, r, size, raw)
	}
	opts := s.putOptions(sum)
	opts.UserMetadata["X-Amz-Checksum-Sha256"] = base64.StdEncoding.EncodeToString(raw)
	opts.SetMatchETagExcept("*")
	core := minio.Core{Client: s.c}
	if _, err := core.PutObject(ctx, s.bucket, key, r, size, "", "", opts); err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	return nil
}

func (s *S3) putOptions(sum string) minio.PutObjectOptions {
	return minio.PutObjectOptions{
		ContentType:  "application/octet-stream",
		UserMetadata: map[string]string{metaSHA256: sum},
	}
}

// putParts is a multipart upload: parts of PartSize, each checked by the
// server against its SHA-256; the whole content's SHA-256 must be the
// one the uploader computed before the upload is completed.
func (s *S3) putParts(ctx context.Context, key string, r io.Reader, size int64, want []byte) (err error) {
	core := minio.Core{Client: s.c}
	opts := s.putOptions(hex.EncodeToString(want))
	opts.UserMetadata["X-Amz-Checksum-Algorithm"] = "SHA256"
	id, err := core.NewMultipartUpload(ctx, s.bucket, key, opts)
	if err != nil {
		return fmt.Errorf("archive: put %s: start a multipart upload: %w", key, err)
	}
	defer func() {
		if err != nil {
			// An open upload holds space on the server: give it back. The
			// request gets a context of its own, the caller's may be done.
			actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if aerr := core.AbortMultipartUpload(actx, s.bucket, key, id); aerr != nil {
				err = errors.Join(err, fmt.Errorf("and cannot abort upload %s: %w", id, aerr))
			}
		}
	}()
	whole := sha256.New()
	buf := make([]byte, s.partSize)
	var parts []minio.CompletePart
	for off, n := int64(0), 1; off < size; n++ {
		chunk := buf[:min(int64(len(buf)), size-off)]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return fmt.Errorf("archive: put %s: read part %d: %w", key, n, err)
		}
		whole.Write(chunk)
		ps := sha256.Sum256(chunk)
		b64 := base64.StdEncoding.EncodeToString(ps[:])
		h := http.Header{}
		h.Set("X-Amz-Checksum-Sha256", b64)
		part, err := core.PutObjectPart(ctx, s.bucket, key, id, n, bytes.NewReader(chunk), int64(len(chunk)), minio.PutObjectPartOptions{CustomHeader: h})
		if err != nil {
			return fmt.Errorf("archive: put %s: part %d: %w", key, n, err)
		}
		parts = append(parts, minio.CompletePart{PartNumber: n, ETag: part.ETag, ChecksumSHA256: b64})
		off += int64(len(chunk))
	}
	if got := whole.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("archive: put %s: content sha256 %x does not match %x", key, got, want)
	}
	copts := minio.PutObjectOptions{}
	copts.SetMatchETagExcept("*")
	if _, err := core.CompleteMultipartUpload(ctx, s.bucket, key, id, parts, copts); err != nil {
		if isPrecondition(err) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("archive: put %s: complete: %w", key, err)
	}
	return nil
}

func isPrecondition(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.StatusCode == http.StatusPreconditionFailed || resp.Code == minio.PreconditionFailed
}

func isNotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.StatusCode == http.StatusNotFound || resp.Code == minio.NoSuchKey
}

// Stat implements Backend.
func (s *S3) Stat(ctx context.Context, key string) (Object, error) {
	info, err := s.c.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return Object{}, fmt.Errorf("%w: %s", ErrNotExist, key)
		}
		return Object{}, fmt.Errorf("archive: stat %s: %w", key, err)
	}
	return Object{Key: key, Size: info.Size, SHA256: userMeta(info.UserMetadata, metaSHA256)}, nil
}

// userMeta finds a user metadata value whatever case the server gave the
// key.
func userMeta(m minio.StringMap, key string) string {
	for k, v := range m {
		if strings.EqualFold(k, key) || strings.EqualFold(k, "X-Amz-Meta-"+key) {
			return v
		}
	}
	return ""
}

// ReadAt implements Backend with one ranged GET.
func (s *S3) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+int64(len(p))-1); err != nil {
		return fmt.Errorf("archive: read %s: %w", key, err)
	}
	body, err := s.c.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		return s.readErr(key, err)
	}
	defer body.Close()
	if _, err := io.ReadFull(body, p); err != nil {
		return s.readErr(key, err)
	}
	return nil
}

func (s *S3) readErr(key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	return fmt.Errorf("archive: read %s: %w", key, err)
}

// Get implements Backend.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	body, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.readErr(key, err)
	}
	// GetObject is lazy: the first read (or Stat) sends the request.
	if _, err := body.Stat(); err != nil {
		body.Close()
		return nil, s.readErr(key, err)
	}
	return body, nil
}

// List implements Backend.
func (s *S3) List(ctx context.Context, prefix string, fn func(Object) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for info := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if info.Err != nil {
			return fmt.Errorf("archive: list %s: %w", prefix, info.Err)
		}
		if err := fn(Object{Key: info.Key, Size: info.Size}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Delete implements Backend. S3 answers a delete of a missing key with
// success; a 404 from another server is taken the same way.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("archive: delete %s: %w", key, err)
	}
	return nil
}

// DeleteKeys deletes keys with one DeleteObjects request per 1000 keys and
// returns how many went; the first failure names its key.
func (s *S3) DeleteKeys(ctx context.Context, keys []string) (int, error) {
	ch := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		ch <- minio.ObjectInfo{Key: k}
	}
	close(ch)
	failed := 0
	var first error
	for r := range s.c.RemoveObjects(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		if r.Err == nil || isNotFound(r.Err) {
			continue
		}
		failed++
		if first == nil {
			first = fmt.Errorf("archive: delete %s: %w", r.ObjectName, r.Err)
		}
	}
	return len(keys) - failed, first
}
