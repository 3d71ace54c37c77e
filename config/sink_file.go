package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// checkFileSink holds the file sink's own rules: a path it can name, and
// none of the keys a file has no use for (the keys of other types are
// refused by checkForeignKeys).
func checkFileSink(p *Problems, sk *Sink) {
	switch {
	case sk.Path == "":
		p.add("path: required for a file sink (the file each delivered hook is appended to, one JSON envelope a line)")
	case strings.ContainsRune(sk.Path, 0):
		p.add("path: %q holds a NUL byte", sk.Path)
	case strings.HasSuffix(sk.Path, "/") || filepath.Base(filepath.Clean(sk.Path)) == "." || filepath.Base(filepath.Clean(sk.Path)) == "..":
		p.add("path: %q names a directory; give a file", sk.Path)
	}
	if sk.ConnectTimeout != 0 {
		p.add("connect_timeout: a file sink connects to nothing; leave it out (timeout bounds an attempt)")
	}
}

// runtimeSinkProblems are the rules of a sink written at runtime (the
// admin API, a stored source): a file sink's path would be the caller's
// choice of a file the node's user writes, its data_dir included, so a
// file sink comes from the config file only.
func runtimeSinkProblems(sk *Sink) Problems {
	var p Problems
	if sk.Type == "file" {
		p.add("type: file sinks are set in the config file only: the path names a file on the node, which the admin API does not let a caller choose")
	}
	return p
}

// validateFileSinkPaths refuses two file sinks on one file: each sink
// keeps its own descriptor and the file's length, and cuts a partial line
// off by that length, which would cut the other sink's lines too.
func validateFileSinkPaths(p *Problems, c *Config) {
	first := map[string]string{}
	for _, name := range c.SourceNames() {
		for i, sk := range c.Sources[name].Sinks {
			if sk.Type != "file" || sk.Path == "" {
				continue
			}
			at := fmt.Sprintf("sources.%s.sinks[%d]", name, i)
			key := filepath.Clean(sk.Path)
			if abs, err := filepath.Abs(key); err == nil {
				key = abs
			}
			if other, ok := first[key]; ok {
				p.add("%s.path: %q is the file of %s too; give each file sink a file of its own", at, sk.Path, other)
				continue
			}
			first[key] = at
		}
	}
}
