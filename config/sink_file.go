package config

import (
	"fmt"
	"path/filepath"
	"slices"
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
	case strings.ContainsAny(sk.Path, "{}"):
		p.add("path: %q: a file sink's path is not a template (one file for every hook of the source); leave out { and }", sk.Path)
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
// It also refuses a file inside what the node keeps under data_dir (the
// WAL, segments, meta store, the admin token, the ballast) or in a dir
// archive: an append there would corrupt the node.
func validateFileSinkPaths(p *Problems, c *Config) {
	first := map[string]string{}
	var owned []string
	if c.Node.DataDir != "" {
		for _, n := range []string{"wal", "segments", "meta", "admin-token", "storage.reserve"} {
			owned = append(owned, realPath(filepath.Join(c.Node.DataDir, n)))
		}
	}
	if c.Archive.Type == "dir" && c.Archive.Path != "" {
		owned = append(owned, realPath(c.Archive.Path))
	}
	for _, name := range c.SourceNames() {
		for i, sk := range c.Sources[name].Sinks {
			if sk.Type != "file" || sk.Path == "" {
				continue
			}
			at := fmt.Sprintf("sources.%s.sinks[%d]", name, i)
			key := realPath(sk.Path)
			if o := slices.IndexFunc(owned, func(o string) bool { return key == o || strings.HasPrefix(key, o+string(filepath.Separator)) }); o >= 0 {
				p.add("%s.path: %q is inside %s, which the node keeps for itself; give a file elsewhere (data_dir itself is fine)", at, sk.Path, owned[o])
				continue
			}
			if other, ok := first[key]; ok {
				p.add("%s.path: %q is the file of %s too; give each file sink a file of its own", at, sk.Path, other)
				continue
			}
			first[key] = at
		}
	}
}

// realPath is path made absolute and clean, with the symbolic links of
// its longest existing part resolved, so that two names of one file (or
// of one directory) compare equal.
func realPath(path string) string {
	p := filepath.Clean(path)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	var rest []string
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(d) == d {
			return p
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}
