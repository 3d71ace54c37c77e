package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// ErrSecretRef is wrapped by every failure to resolve a secret reference.
var ErrSecretRef = errors.New("cannot resolve secret")

// ResolveSecrets replaces env: and file: references by their values.
func (c *Config) ResolveSecrets() Problems {
	var probs Problems
	resolve := func(path string, s *Secret) {
		v, err := s.resolve()
		if err != nil {
			probs.add("%s: %v", path, err)
			return
		}
		s.Value = v
	}
	resolve("archive.access_key", &c.Archive.AccessKey)
	resolve("archive.secret_key", &c.Archive.SecretKey)
	resolve("secrets.kek", &c.Secrets.KEK)
	resolve("secrets.kek_previous", &c.Secrets.KEKPrevious)
	if c.Lifecycle.Sink != nil {
		WalkSinkSecrets(c.Lifecycle.Sink, func(path string, s *Secret) { resolve("lifecycle.sink."+path, s) })
	}
	for _, name := range c.SourceNames() {
		src := c.Sources[name]
		p := "sources." + name
		WalkSecrets(&src, func(path string, s *Secret) { resolve(p+"."+path, s) })
		c.Sources[name] = src
	}
	for _, name := range slices.Sorted(maps.Keys(c.Claims.Stores)) {
		st := c.Claims.Stores[name]
		resolve("claims.stores."+name+".access_key", &st.AccessKey)
		resolve("claims.stores."+name+".secret_key", &st.SecretKey)
		c.Claims.Stores[name] = st
	}
	return probs
}

func (s Secret) resolve() (string, error) {
	switch {
	case strings.HasPrefix(s.Ref, "env:"):
		name := strings.TrimPrefix(s.Ref, "env:")
		v, ok := os.LookupEnv(name)
		if !ok || v == "" {
			return "", fmt.Errorf("%w: environment variable %s is not set", ErrSecretRef, name)
		}
		return v, nil
	case strings.HasPrefix(s.Ref, "file:"):
		path := strings.TrimPrefix(s.Ref, "file:")
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrSecretRef, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%w: file %s is empty", ErrSecretRef, path)
		}
		return v, nil
	default:
		return s.Ref, nil
	}
}
