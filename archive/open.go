package archive

import (
	"fmt"

	"github.com/ankusa/ankusa/config"
)

// Open builds the backend and layout named by a config's archive section.
// It returns a nil Backend for archive.type: none.
func Open(c config.Archive) (Backend, Layout, error) {
	l := Layout{Prefix: c.Prefix}
	switch c.Type {
	case "none", "":
		return nil, l, nil
	case "dir":
		d, err := NewDir(c.Path)
		return d, l, err
	case "s3":
		s, err := NewS3(S3Options{
			Endpoint: c.Endpoint, Bucket: c.Bucket, Region: c.Region,
			AccessKey: c.AccessKey.Value, SecretKey: c.SecretKey.Value, TLS: c.TLS,
		})
		return s, l, err
	default:
		return nil, l, fmt.Errorf("archive.type: %q must be s3, dir or none", c.Type)
	}
}
