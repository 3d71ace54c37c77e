package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unsetVar is an environment variable the secret-reference cases rely on
// not being set.
const unsetVar = "ANKUSA_TEST_NEVER_SET"

// TestCheckConfig runs `ankusa check-config` over testdata/check-config
// (see its README.md for the format of the expectations).

// exitConfig is EX_CONFIG, what the binary exits with for a bad config.
const exitConfig = 78

func TestCheckConfig(t *testing.T) {
	os.Unsetenv(unsetVar)
	files, err := filepath.Glob("testdata/check-config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/check-config/*.yaml: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.ReplaceAll(string(data), "@UNSET@", unsetVar)
			want := parseExpectations(t, text)
			path := filepath.Join(t.TempDir(), "ankusa.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runBin(t, t.TempDir(), "check-config", "-config", path)
			if code != want.exit {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, want.exit, stderr)
			}
			if strings.Contains(stderr+stdout, "do_not_print_me") {
				t.Fatalf("output prints a secret or a value it should not:\n%s%s", stdout, stderr)
			}
			if code == 0 {
				if stderr != "" {
					t.Fatalf("exit 0 but stderr is not empty:\n%s", stderr)
				}
				if strings.TrimSpace(stdout) != "config ok" {
					t.Fatalf("stdout %q, want \"config ok\"", stdout)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if want.lines >= 0 && len(lines) != want.lines {
				t.Fatalf("%d stderr lines, want %d (one per problem):\n%s", len(lines), want.lines, stderr)
			}
			next := 0
			for _, w := range want.stderr {
				for next < len(lines) && !strings.Contains(lines[next], w) {
					next++
				}
				if next == len(lines) {
					t.Fatalf("no stderr line (in order) contains %q:\n%s", w, stderr)
				}
				next++
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "config: ") {
					t.Fatalf("stderr line %q does not start with \"config: \"", l)
				}
			}
		})
	}
}

type expectations struct {
	exit   int
	lines  int // -1: any
	stderr []string
}

func parseExpectations(t *testing.T, text string) expectations {
	t.Helper()
	e := expectations{exit: -1, lines: -1}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ": ")
		if !ok {
			continue
		}
		switch k {
		case "exit":
			e.exit = mustAtoi(t, v)
		case "lines":
			e.lines = mustAtoi(t, v)
		case "stderr":
			e.stderr = append(e.stderr, v)
		}
	}
	if e.exit < 0 {
		t.Fatal("the file has no # exit: line")
	}
	if e.exit != 0 && len(e.stderr) == 0 {
		t.Fatal("a failing case must say what stderr names (# stderr: ...)")
	}
	return e
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("bad number %q in expectations", s)
	}
	return n
}

// With no -config, check-config checks the embedded default.
func TestCheckConfigEmbeddedDefault(t *testing.T) {
	code, stdout, stderr := runBin(t, t.TempDir(), "check-config")
	if code != 0 || stderr != "" || strings.TrimSpace(stdout) != "config ok" {
		t.Fatalf("check-config of the embedded default: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

func TestCheckConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	code, _, stderr := runBin(t, t.TempDir(), "check-config", "-config", path)
	if code != exitConfig || !strings.Contains(stderr, path) {
		t.Fatalf("exit %d, stderr %q: want %d naming %s", code, stderr, exitConfig, path)
	}
}

// serve refuses a config that check-config refuses, with the same message
// and exit code, before it touches the data directory.
func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ankusa.yaml")
	data := filepath.Join(dir, "data")
	yaml := "node: {data_dir: " + data + "}\nlisten: " + freeAddr(t) + "\nadmin: {listen: " + freeAddr(t) + "}\n" +
		"route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 5, burst: 5}}\nsources:\n  open-demo:\n    verify: {type: none}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBin(t, dir, "serve", "-config", cfg)
	if code != exitConfig || !strings.Contains(stderr, "config: sources.open-demo: shared source") {
		t.Fatalf("serve: exit %d, stderr:\n%s\nwant %d naming sources.open-demo", code, stderr, exitConfig)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("serve created %s for a config it refused (stat: %v)", data, err)
	}
}

// serve refuses a config with an unknown key, naming it with the config's
// other problems, exactly as check-config does: a key is never ignored.
func TestServeRefusesUnknownKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ankusa.yaml")
	data := filepath.Join(dir, "data")
	yaml := "node: {data_dir: " + data + "}\nlisten: " + freeAddr(t) + "\nadmin: {listen: " + freeAddr(t) + "}\n" +
		"limits: {max_bodyy_bytes: 1MiB}\nsegment: {max_bytes: lots}\n" +
		"route_resolver: {type: tenantpath}\nrate_limits: {default: {rate: 5, burst: 5}}\nsources:\n  open-demo:\n    verify: {type: none}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, checked := runBin(t, dir, "check-config", "-config", cfg)
	code, _, stderr := runBin(t, dir, "serve", "-config", cfg)
	want := []string{"config: limits.max_bodyy_bytes: unknown key", `config: segment.max_bytes: invalid size "lots"`, "config: sources.open-demo: shared source"}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("serve's stderr does not name %q", w)
		}
	}
	if code != exitConfig || stderr != checked {
		t.Fatalf("serve: exit %d, stderr:\n%s\nwant %d and check-config's stderr:\n%s", code, stderr, exitConfig, checked)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("serve created %s for a config it refused (stat: %v)", data, err)
	}
}

// An admin listener off loopback is valid, but check-config warns on
// stderr (the exit status stays 0).
func TestCheckConfigWarnsAdminNotLoopback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ankusa.yaml")
	if err := os.WriteFile(path, []byte("admin: {listen: '0.0.0.0:9090'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBin(t, t.TempDir(), "check-config", "-config", path)
	if code != 0 || strings.TrimSpace(stdout) != "config ok" {
		t.Fatalf("exit %d, stdout %q, want 0 and config ok\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stderr, `config: warning: admin.listen: "0.0.0.0:9090" is not a loopback address`) || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("stderr %q, want one warning naming admin.listen", stderr)
	}
}
