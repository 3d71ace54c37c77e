package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// packageVersion is the VERSION the tests package under.
const packageVersion = "v0.0.0-pkgtest"

// release is scripts/package.sh's output, made once per test binary: the
// systemd and config tests run its static binary too.
var release struct {
	once    sync.Once
	dir     string // scripts/package.sh's OUTDIR
	tarball string
	out     string // the script's output, for messages
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if release.dir != "" {
		os.RemoveAll(release.dir)
	}
	os.Exit(code)
}

// goCmd is the go command the tests run on, which the script is given as
// GO, as make package gives it the Makefile's.
func goCmd(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	return p
}

// packaged runs scripts/package.sh into a temporary directory (once) and
// returns that directory and the tarball it wrote.
func packaged(t *testing.T) (dir, tarball string) {
	t.Helper()
	gobin := goCmd(t)
	release.once.Do(func() {
		release.dir, release.err = os.MkdirTemp("", "ankusa-package-")
		if release.err != nil {
			return
		}
		// A cold build cache builds the whole binary: minutes on two busy
		// cores. Warm, the script takes seconds.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "package.sh"), release.dir)
		cmd.Env = append(os.Environ(), "GO="+gobin, "VERSION="+packageVersion)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		release.err = cmd.Run()
		release.out = stdout.String() + stderr.String()
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		release.tarball = lines[len(lines)-1]
	})
	if release.err != nil {
		t.Fatalf("scripts/package.sh: %v\n%s", release.err, release.out)
	}
	return release.dir, release.tarball
}

// packagedBinary is the static binary scripts/package.sh built.
func packagedBinary(t *testing.T) string {
	dir, _ := packaged(t)
	return filepath.Join(dir, "ankusa")
}

// readTarball returns the tarball's regular files by name, and its other
// entries' names.
func readTarball(t *testing.T, path string) (files map[string]*tar.Header, data map[string][]byte, others []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	tr := tar.NewReader(zr)
	files, data = map[string]*tar.Header{}, map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, data, others
		}
		if err != nil {
			t.Fatalf("cannot read %s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			others = append(others, h.Name)
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], data[h.Name] = h, b
	}
}

// wantInPackage is what the tarball must hold (its path inside the
// package's directory) and where it comes from in the repository.
func wantInPackage(t *testing.T) map[string]string {
	t.Helper()
	want := map[string]string{
		"README.md":    "README.md",
		"default.yaml": "config/default.yaml",
	}
	if _, err := os.Stat(filepath.Join(root, "LICENSE")); err == nil {
		want["LICENSE"] = "LICENSE"
	}
	for _, pattern := range []string{"docs/*.md", "examples/*/ankusa.yaml", "deploy/README.md",
		"deploy/systemd/*", "deploy/container/*", "deploy/grafana/*.json", "deploy/prometheus/*.yml"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(matches) == 0 {
			t.Fatalf("the repository has no %s (%v)", pattern, err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			want[filepath.ToSlash(rel)] = rel
		}
	}
	for _, must := range []string{"deploy/systemd/ankusa.service", "deploy/systemd/ankusa.yaml", "deploy/container/Containerfile", "docs/configuration.md"} {
		if _, ok := want[must]; !ok {
			t.Fatalf("the repository has no %s", must)
		}
	}
	return want
}

// make package builds bin/ankusa and the tarball: every file the package
// promises is in it, byte for byte the repository's, under one directory
// named for the version and arch; the binary is static, stamped with the
// version, and runs.
func TestPackage(t *testing.T) {
	dir, tarball := packaged(t)
	arch := strings.TrimSpace(run(t, goCmd(t), "env", "GOARCH"))
	prefix := fmt.Sprintf("ankusa-%s-linux-%s/", packageVersion, arch)
	if want := filepath.Join(dir, strings.TrimSuffix(prefix, "/")+".tar.gz"); tarball != want {
		t.Fatalf("the script wrote %q, want %q", tarball, want)
	}
	files, data, others := readTarball(t, tarball)
	for _, name := range others {
		if name != prefix && !strings.HasPrefix(name, prefix) {
			t.Errorf("tarball entry %q is outside %s", name, prefix)
		}
	}
	want := wantInPackage(t)
	want["ankusa"] = ""
	for name, h := range files {
		if !strings.HasPrefix(name, prefix) {
			t.Errorf("tarball file %q is outside %s", name, prefix)
			continue
		}
		if _, ok := want[strings.TrimPrefix(name, prefix)]; !ok {
			t.Errorf("tarball holds %q, which the package does not promise", name)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want 0:0", name, h.Uid, h.Gid)
		}
	}
	for _, inside := range slices.Sorted(maps.Keys(want)) {
		from := want[inside]
		got, ok := data[prefix+inside]
		if !ok {
			t.Errorf("tarball has no %s%s (from %s)", prefix, inside, from)
			continue
		}
		if from == "" {
			continue
		}
		repo, err := os.ReadFile(filepath.Join(root, from))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, repo) {
			t.Errorf("tarball's %s differs from the repository's %s", inside, from)
		}
	}
	bin, ok := data[prefix+"ankusa"]
	if !ok {
		t.FailNow()
	}
	if mode := files[prefix+"ankusa"].Mode; mode&0o111 != 0o111 {
		t.Errorf("the binary's mode is %o, want executable by all", mode)
	}
	built, err := os.ReadFile(filepath.Join(dir, "ankusa"))
	if err != nil || !bytes.Equal(built, bin) {
		t.Errorf("OUTDIR/ankusa (%v) is not the tarball's binary", err)
	}
	checkStatic(t, bin)

	// The tarball's own binary runs.
	exe := filepath.Join(t.TempDir(), "ankusa")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(run(t, exe, "version")); got != "ankusa "+packageVersion {
		t.Errorf("ankusa version printed %q, want %q", got, "ankusa "+packageVersion)
	}
	if help := run(t, exe, "--help"); !strings.Contains(help, "serve") || !strings.Contains(help, "check-config") {
		t.Errorf("ankusa --help does not list serve and check-config:\n%s", help)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".stage*")); len(left) != 0 {
		t.Errorf("the script left its staging directory in OUTDIR: %v", left)
	}
}

// make package is the script, into bin/, with the Makefile's go and
// version.
func TestMakePackage(t *testing.T) {
	out := run(t, "make", "-C", root, "-n", "package", "GO=/path/to/go", "VERSION=v1.2.3")
	if !strings.Contains(out, "scripts/package.sh bin") || !strings.Contains(out, "GO=/path/to/go") || !strings.Contains(out, "VERSION=v1.2.3") {
		t.Errorf("make -n package does not run scripts/package.sh bin with GO and VERSION:\n%s", out)
	}
}

// checkStatic fails unless bin is an ELF executable with no interpreter
// and no shared libraries: it runs on any Linux of its arch, and in a
// distroless static image.
func checkStatic(t *testing.T, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("the packaged binary is not ELF: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the packaged binary is dynamically linked (program header %v): build it with CGO_ENABLED=0", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("the packaged binary needs %v", libs)
	}
}

// run runs a command and returns its stdout; a non-zero exit fails the
// test.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
