// Package s3test is what the archive tests need to run against a real
// S3-compatible server: a private versitygw (posix backend) per test, on a
// free loopback port, with its own credentials and a posix root under the
// test's TempDir, which a test may stop and restart under the code it tests.
//
//	s := s3test.Start(t)          // healthy when Start returns; killed when the test ends
//	s.MakeBucket(t, "archive")
//	c := s.Client(t)              // minio-go client, path-style, plain HTTP
//	s.Stop()                      // kill -9: requests fail, Dir stays
//	s.Restart()                   // same Endpoint, same Dir, same objects
//
// The binary is ANKUSA_VERSITYGW when set, else <repo>/bin/versitygw (where
// scripts/ensure-versitygw.sh and make services put it), else versitygw in
// PATH. When there is none, Start builds it with that script (about 2 minutes
// cold), except when CI=true: CI fails, saying to run make services, rather
// than build or skip.
//
// The posix backend keeps object metadata (ETag, checksums, content type)
// in extended attributes: a bucket is a directory of Dir and an object a
// file below it. On a filesystem without user xattrs Start gives the server
// a sidecar directory for them instead, so checksums still work.
//
// Found with minio-go v7.4.1 against versitygw v1.8.0 (plain HTTP): a
// client with minio.Options.TrailingHeaders set sends signed trailing
// checksums that versitygw rejects with BadDigest (every multipart upload
// and every PutObjectOptions.Checksum upload), so Client leaves it unset;
// with TrailingHeaders, set PutObjectOptions.DisableContentSha256 too (the
// unsigned trailer works).
//
// Only tests import this package. Of this module it imports internal/child
// alone (a free address and an output buffer for versitygw), and must
// never import a package of the product: the tests of archive and of
// the binary import it.
package s3test
