package deploy

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const containerfile = "container/Containerfile"

// instruction is one Containerfile instruction, its continuation lines
// joined.
type instruction struct {
	line int
	op   string // upper case: FROM, RUN, COPY, ...
	args string
}

func parseContainerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		} else if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, op: strings.ToUpper(op), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() != 0 {
		t.Fatalf("%s ends inside a continued instruction", path)
	}
	return out
}

// execForm is an instruction's JSON array form (CMD, ENTRYPOINT).
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Fatalf("%s:%d: %s %s is not the exec (JSON) form: the node must be PID 1 to get SIGTERM", containerfile, in.line, in.op, in.args)
	}
	return v
}

// The Containerfile: a golang:1.26 build stage with CGO off and the
// Makefile's version stamp, a distroless static (or debian slim) final
// stage running as a numeric non-root user, its VOLUME the data_dir of
// the config it copies and runs, both of that config's ports exposed, and
// nothing fetched from a URL.
func TestContainerfile(t *testing.T) {
	ins := parseContainerfile(t, containerfile)
	var froms []instruction
	for _, in := range ins {
		if in.op == "FROM" {
			froms = append(froms, in)
		}
		if in.op == "ADD" {
			t.Errorf("%s:%d: ADD %s: use COPY (ADD fetches URLs and unpacks archives)", containerfile, in.line, in.args)
		}
		if in.op == "RUN" && regexp.MustCompile(`\b(curl|wget)\b|https?://`).MatchString(in.args) {
			t.Errorf("%s:%d: RUN fetches from the network beyond the module proxy: %s", containerfile, in.line, in.args)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("%s has %d FROM, want a build stage and a final stage", containerfile, len(froms))
	}
	build, final := froms[0], froms[len(froms)-1]
	if !regexp.MustCompile(`^(docker\.io/library/)?golang:1\.26(\.\d+)?(-\S+)? AS build$`).MatchString(build.args) {
		t.Errorf("the first stage is FROM %s, want golang:1.26 AS build", build.args)
	}
	if !regexp.MustCompile(`^(gcr\.io/distroless/static(-debian\d+)?(:\S+)?|(docker\.io/library/)?debian:bookworm-slim)$`).MatchString(final.args) {
		t.Errorf("the final stage is FROM %s, want distroless/static or debian:bookworm-slim", final.args)
	}

	// The build: static, stamped as the Makefile stamps bin/ankusa.
	var buildRun string
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			buildRun = in.args
		}
	}
	if !strings.Contains(buildRun, "CGO_ENABLED=0") || !strings.Contains(buildRun, "./cmd/ankusa") {
		t.Errorf("the go build (%q) is not CGO_ENABLED=0 of ./cmd/ankusa", buildRun)
	}
	if ld := makefileLDFlags(t); !strings.Contains(buildRun, `-ldflags "`+ld+`"`) {
		t.Errorf("the go build's ldflags are not the Makefile's, %q with $(VERSION) as ${VERSION}: %s", ld, buildRun)
	}

	// Only the final stage's instructions decide how the image runs.
	var runtime []instruction
	for _, in := range ins {
		if in.line >= final.line {
			runtime = append(runtime, in)
		}
	}
	last := func(op string) (instruction, bool) {
		var got instruction
		found := false
		for _, in := range runtime {
			if in.op == op {
				got, found = in, true
			}
		}
		return got, found
	}
	user, ok := last("USER")
	uid, gid, _ := strings.Cut(user.args, ":")
	if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
		t.Errorf("the final stage's USER is %q, want a numeric non-root uid (Kubernetes' runAsNonRoot checks a number)", user.args)
	}
	if gid != "" {
		if n, err := strconv.Atoi(gid); err != nil || n == 0 {
			t.Errorf("USER's group %q is not a numeric non-root gid", gid)
		}
	}

	// The config the image runs: the -config of its CMD, copied in from
	// the repository.
	entry, _ := last("ENTRYPOINT")
	cmd, _ := last("CMD")
	argv := append(execForm(t, entry), execForm(t, cmd)...)
	i := slices.Index(argv, "-config")
	if len(argv) < 2 || argv[1] != "serve" || i < 0 || i+1 >= len(argv) {
		t.Fatalf("the image runs %q, want ankusa serve -config FILE", argv)
	}
	configIn := argv[i+1]
	configFrom := ""
	for _, in := range runtime {
		f := strings.Fields(in.args)
		if in.op == "COPY" && len(f) == 2 && f[1] == configIn {
			configFrom = f[0]
		}
	}
	if configFrom == "" {
		t.Fatalf("the final stage copies nothing from the repository to %s, the config it runs", configIn)
	}
	configPath := filepath.Join(root, configFrom)
	if code, out := runBinary(t, packagedBinary(t), "check-config", "-config", configPath); code != 0 {
		t.Errorf("check-config %s: exit %d\n%s", configFrom, code, out)
	}
	dir := dataDir(t, configPath)
	vol, _ := last("VOLUME")
	if vol.args != dir && vol.args != `["`+dir+`"]` {
		t.Errorf("VOLUME %s, want %s, node.data_dir of %s", vol.args, dir, configFrom)
	}
	// The volume starts as the image's directory: it must be the user's.
	owned := false
	for _, in := range runtime {
		if in.op == "COPY" && strings.HasSuffix(in.args, " "+dir) && strings.Contains(in.args, "--chown="+uid+":") {
			owned = true
		}
	}
	if !owned {
		t.Errorf("no COPY --chown=%s:... creates %s: a new volume would be root's and the node could not write it", uid, dir)
	}

	// Both listeners' ports are exposed, on every interface of the
	// container.
	ports := map[string]bool{}
	for _, in := range runtime {
		if in.op == "EXPOSE" {
			for _, p := range strings.Fields(in.args) {
				ports[strings.TrimSuffix(p, "/tcp")] = true
			}
		}
	}
	for key, addr := range listeners(t, configPath) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Errorf("%s: %s %q: %v", configFrom, key, addr, err)
			continue
		}
		if !ports[port] {
			t.Errorf("%s's %s port %s is not EXPOSEd (%v)", configFrom, key, port, ports)
		}
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			t.Errorf("%s's %s is %s: a loopback address is unreachable from outside the container", configFrom, key, addr)
		}
	}
	if sig, _ := last("STOPSIGNAL"); sig.args != "" && sig.args != "SIGTERM" {
		t.Errorf("STOPSIGNAL %s: the node drains on SIGTERM", sig.args)
	}
}

// listeners is listen and admin.listen of a config file.
func listeners(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Listen string `yaml:"listen"`
		Admin  struct {
			Listen string `yaml:"listen"`
		} `yaml:"admin"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return map[string]string{"listen": cfg.Listen, "admin.listen": cfg.Admin.Listen}
}

// makefileLDFlags is the Makefile's LDFLAGS with $(VERSION) written as a
// shell's ${VERSION}.
func makefileLDFlags(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*(.+)$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("the Makefile sets no LDFLAGS")
	}
	return strings.ReplaceAll(strings.TrimSpace(m[1]), "$(VERSION)", "${VERSION}")
}
