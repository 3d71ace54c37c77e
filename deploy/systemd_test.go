package deploy

import (
	"bufio"
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const (
	unitFile     = "systemd/ankusa.service"
	unitConfig   = "systemd/ankusa.yaml"
	sysusersFile = "systemd/ankusa.sysusers.conf"
	// installedBinary and installedConfig are where deploy/README.md
	// installs the binary and systemd/ankusa.yaml.
	installedBinary = "/usr/local/bin/ankusa"
	installedConfig = "/etc/ankusa/ankusa.yaml"
	// systemdAnalyze is Debian's (package systemd); make services
	// installs it (scripts/ensure-systemd.sh).
	systemdAnalyze = "systemd-analyze"
)

// unit is a unit file's assignments: section, then key, then every value
// in file order (a key may repeat, as SystemCallFilter= does).
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, section := unit{}, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l[1 : len(l)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || section == "" || strings.HasSuffix(l, `\`) {
				t.Fatalf("%s:%d: %q is not a key=value in a section (this test reads no continuation lines)", path, line, l)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u
}

// last is key's effective value in section (a later assignment wins), and
// whether it is set at all.
func (u unit) last(section, key string) (string, bool) {
	vs := u[section][key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// dataDir is node.data_dir of a config file.
func dataDir(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Node struct {
			DataDir string `yaml:"data_dir"`
		} `yaml:"node"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cfg.Node.DataDir == "" {
		t.Fatalf("%s sets no node.data_dir (its default, ./data, is relative to the working directory)", path)
	}
	return cfg.Node.DataDir
}

// The unit runs the binary and the sample config where deploy/README.md
// installs them, as Type=notify, as its own user, with every hardening
// key, writing only node.data_dir of the sample config, and with a stop
// timeout the drain fits in.
func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, unitFile)
	for key, want := range map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"ExecStart":               installedBinary + " serve -config " + installedConfig,
		"User":                    "ankusa",
		"Group":                   "ankusa",
		"DynamicUser":             "no",
		"StateDirectory":          "ankusa",
		"ProtectSystem":           "strict",
		"NoNewPrivileges":         "yes",
		"PrivateTmp":              "yes",
		"ProtectHome":             "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectKernelLogs":       "yes",
		"ProtectControlGroups":    "yes",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"RestrictNamespaces":      "yes",
		"CapabilityBoundingSet":   "",
		"KillSignal":              "SIGTERM",
		"Restart":                 "on-failure",
	} {
		if got, ok := u.last("Service", key); !ok || got != want {
			t.Errorf("[Service] %s=%q (set: %v), want %q", key, got, ok, want)
		}
	}
	if vs := u["Service"]["CapabilityBoundingSet"]; len(vs) != 1 {
		t.Errorf("CapabilityBoundingSet= is assigned %d times (%q); want once, empty: a second assignment adds to the set", len(vs), vs)
	}
	if filters := u["Service"]["SystemCallFilter"]; len(filters) == 0 || filters[0] != "@system-service" {
		t.Errorf("SystemCallFilter= %q, want @system-service first (the allow list)", filters)
	}
	if got, _ := u.last("Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("[Install] WantedBy=%q, want multi-user.target", got)
	}
	nofile, _ := u.last("Service", "LimitNOFILE")
	if n, err := strconv.Atoi(nofile); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%q, want at least 65536 (limits.max_connections is 10000 by default)", nofile)
	}

	// The one path the node writes is the sample config's data_dir, which
	// is the unit's state directory.
	dir := dataDir(t, unitConfig)
	if got := u["Service"]["ReadWritePaths"]; len(got) != 1 || got[0] != dir {
		t.Errorf("ReadWritePaths= %q, want exactly %s, node.data_dir of %s", got, dir, unitConfig)
	}
	if state, _ := u.last("Service", "StateDirectory"); "/var/lib/"+state != dir {
		t.Errorf("StateDirectory=%s is /var/lib/%s, not node.data_dir %s: systemd would not create the data directory", state, state, dir)
	}
	if wd, _ := u.last("Service", "WorkingDirectory"); wd != dir {
		t.Errorf("WorkingDirectory=%q, want %s: a relative path in the config resolves there", wd, dir)
	}

	// The drain must end before systemd's SIGKILL: the listeners' drain
	// timeout, then the dispatcher waits for an attempt in flight.
	stop, _ := u.last("Service", "TimeoutStopSec")
	stopSec, err := strconv.Atoi(stop)
	if err != nil {
		t.Fatalf("TimeoutStopSec=%q, want whole seconds", stop)
	}
	drain := goDuration(t, "../cli/serve.go", "drainTimeout")
	sink := goDuration(t, "../config/sink.go", "DefaultSinkTimeout")
	if need := drain + sink; time.Duration(stopSec)*time.Second <= need {
		t.Errorf("TimeoutStopSec=%s is not above the drain (cli drainTimeout %s + one sink attempt %s)", stop, drain, sink)
	}

	// sysusers.d creates the unit's user.
	users, err := os.ReadFile(sysusersFile)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := u.last("Service", "User")
	if !strings.Contains("\n"+string(users), "\nu "+user+" ") {
		t.Errorf("%s does not create user %s", sysusersFile, user)
	}
}

// systemd-analyze verify finds nothing in the unit: no unknown or
// misspelled key, no bad value, an executable ExecStart (the unit is
// verified with ExecStart on the packaged binary). Its security review
// rates the sandbox's exposure at most 2.0 of 10 ("OK").
func TestSystemdVerify(t *testing.T) {
	analyze := needSystemdAnalyze(t)
	unitPath := installUnit(t, "", nil)
	if out, err := verifyUnit(t, analyze, unitPath); err != nil || out != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
	out, err := exec.Command(analyze, "security", "--offline=yes", "--threshold=20", unitPath).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: the unit's exposure is over 2.0 (%v):\n%s", err, out)
	}
	if code, out := runBinary(t, packagedBinary(t), "check-config", "-config", unitConfig); code != 0 {
		t.Errorf("check-config %s: exit %d\n%s", unitConfig, code, out)
	}
}

// The verify above would catch what the tests of this file plant: the
// check is not empty.
func TestSystemdVerifyCatches(t *testing.T) {
	analyze := needSystemdAnalyze(t)
	for name, change := range map[string]func(string) string{
		"misspelled key": func(s string) string { return strings.Replace(s, "ProtectSystem=", "ProtectSytem=", 1) },
		"bad value":      func(s string) string { return strings.Replace(s, "ProtectSystem=strict", "ProtectSystem=very", 1) },
		"bad filter":     func(s string) string { return strings.Replace(s, "@system-service", "@no-such-set", 1) },
		"missing binary": func(s string) string { return s },
	} {
		t.Run(name, func(t *testing.T) {
			exe := ""
			if name == "missing binary" {
				exe = filepath.Join(t.TempDir(), "no-such-ankusa")
			}
			unitPath := installUnit(t, exe, change)
			out, err := verifyUnit(t, analyze, unitPath)
			if err == nil && out == "" {
				t.Errorf("systemd-analyze verify says nothing of a unit with a %s", name)
			}
		})
	}
}

// installUnit writes the unit into a fresh directory with ExecStart on exe
// (the packaged binary when ""), after change (nil: none).
func installUnit(t *testing.T, exe string, change func(string) string) string {
	t.Helper()
	if exe == "" {
		exe = packagedBinary(t)
	}
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.Contains(s, "ExecStart="+installedBinary+" ") {
		t.Fatalf("%s has no ExecStart=%s", unitFile, installedBinary)
	}
	s = strings.ReplaceAll(s, "ExecStart="+installedBinary+" ", "ExecStart="+exe+" ")
	if change != nil {
		s = change(s)
	}
	path := filepath.Join(t.TempDir(), "ankusa.service")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// verifyUnit runs systemd-analyze verify on the unit and returns what it
// said about it (lines naming the unit; it may warn about the host's own
// units too) and its error.
func verifyUnit(t *testing.T, analyze, path string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, analyze, "verify", "--man=no", path)
	out, err := cmd.CombinedOutput()
	var about []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, filepath.Base(path)) || strings.Contains(l, path) {
			about = append(about, l)
		}
	}
	return strings.Join(about, "\n"), err
}

func needSystemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(systemdAnalyze)
	if err != nil {
		t.Fatalf("%s is not installed: it comes with Debian's systemd package, which make services installs (scripts/ensure-systemd.sh)", systemdAnalyze)
	}
	return p
}

// runBinary runs the binary from the deploy directory and returns its exit
// code and output.
func runBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("cannot run %s: %v", bin, err)
		}
	}
	return exitCode(err), string(out)
}

func exitCode(err error) int {
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// goDuration is the value of a constant of the form N * time.Unit in a Go
// file of this module (read, not imported: package deploy imports no
// package of the module).
func goDuration(t *testing.T, path, name string) time.Duration {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute}
	var got time.Duration
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if id.Name != name || i >= len(vs.Values) {
				continue
			}
			if b, ok := vs.Values[i].(*ast.BinaryExpr); ok && b.Op == token.MUL {
				lit, ok1 := b.X.(*ast.BasicLit)
				sel, ok2 := b.Y.(*ast.SelectorExpr)
				if ok1 && ok2 && lit.Kind == token.INT {
					k, _ := strconv.Atoi(lit.Value)
					got = time.Duration(k) * units[sel.Sel.Name]
				}
			}
		}
		return true
	})
	if got <= 0 {
		t.Fatalf("%s has no constant %s = N * time.Second (or Millisecond, Minute): the test reads it", path, name)
	}
	return got
}
