package s3test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestStopRestart: an object put before Stop is unreachable while the
// server is down and is there again, on the same endpoint, after Restart.
func TestStopRestart(t *testing.T) {
	s := Start(t)
	s.MakeBucket(t, "archive")
	c := s.Client(t)
	ctx := context.Background()
	body := []byte("segment 1")
	if _, err := c.PutObject(ctx, "archive", "seg/1", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	get(t, c, "seg/1", body)

	s.Stop()
	s.Stop() // twice is fine
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := c.StatObject(short, "archive", "seg/1", minio.StatObjectOptions{}); err == nil {
		t.Fatal("StatObject answered after Stop")
	}

	endpoint := s.Endpoint
	s.Restart()
	if s.Endpoint != endpoint {
		t.Fatalf("Restart moved the server from %s to %s", endpoint, s.Endpoint)
	}
	get(t, c, "seg/1", body)
	if _, err := c.PutObject(ctx, "archive", "seg/2", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("PutObject after Restart: %v", err)
	}
	s.Restart() // restarting a running server is fine too
	get(t, c, "seg/2", body)
}

// TestServerContract pins what the archive stage relies on from this
// versitygw with minio-go's default client: If-None-Match: * refuses to
// overwrite (412), and a wrong x-amz-checksum-sha256 stores nothing.
func TestServerContract(t *testing.T) {
	s := Start(t)
	s.MakeBucket(t, "archive")
	c := s.Client(t)
	ctx := context.Background()
	body := []byte("segment 1")
	sum := sha256.Sum256(body)
	opts := minio.PutObjectOptions{UserMetadata: map[string]string{
		"x-amz-checksum-sha256": base64.StdEncoding.EncodeToString(sum[:]),
	}}
	opts.SetMatchETagExcept("*")
	// Core.PutObject sends the checksum as a header; Client.PutObject
	// refuses x-amz-checksum-* without TrailingHeaders (see the package doc).
	core := minio.Core{Client: c}
	if _, err := core.PutObject(ctx, "archive", "seg/1", bytes.NewReader(body), int64(len(body)), "", "", opts); err != nil {
		t.Fatalf("first put: %v", err)
	}
	_, err := core.PutObject(ctx, "archive", "seg/1", bytes.NewReader(body), int64(len(body)), "", "", opts)
	if r := minio.ToErrorResponse(err); r.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("second put with If-None-Match: *: %v (status %d), want 412", err, r.StatusCode)
	}

	wrong := []byte("segment 2")
	_, err = core.PutObject(ctx, "archive", "seg/2", bytes.NewReader(wrong), int64(len(wrong)), "", "", opts)
	if r := minio.ToErrorResponse(err); r.Code != "BadDigest" {
		t.Fatalf("put with a wrong checksum: %v, want BadDigest", err)
	}
	if _, err := c.StatObject(ctx, "archive", "seg/2", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("after a refused put, StatObject: %v, want NoSuchKey", err)
	}
	info, err := c.StatObject(ctx, "archive", "seg/1", minio.StatObjectOptions{Checksum: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.ChecksumSHA256 != opts.UserMetadata["x-amz-checksum-sha256"] {
		t.Fatalf("stored checksum %q, want %q", info.ChecksumSHA256, opts.UserMetadata["x-amz-checksum-sha256"])
	}
}

func TestWaitHealthyProcessGone(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	err := waitHealthy("127.0.0.1:1", exited)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitHealthy on an exited process: %v", err)
	}
}

func TestServerEnv(t *testing.T) {
	t.Setenv("VGW_PORT", ":9")
	t.Setenv("ROOT_SECRET_KEY", "x")
	t.Setenv("LOGFILE", "/tmp/x")
	t.Setenv("ANKUSA_S3TEST_KEEP", "1")
	env := strings.Join(ServerEnv(), "\n") + "\n"
	for _, name := range []string{"VGW_PORT=", "ROOT_SECRET_KEY=", "LOGFILE="} {
		if strings.Contains(env, "\n"+name) || strings.HasPrefix(env, name) {
			t.Errorf("ServerEnv keeps %s", name)
		}
	}
	if !strings.Contains(env, "ANKUSA_S3TEST_KEEP=1\n") {
		t.Error("ServerEnv drops an unrelated variable")
	}
}

func get(t *testing.T, c *minio.Client, key string, want []byte) {
	t.Helper()
	obj, err := c.GetObject(context.Background(), "archive", key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer obj.Close()
	got, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("GetObject %s: %q, want %q", key, got, want)
	}
}
