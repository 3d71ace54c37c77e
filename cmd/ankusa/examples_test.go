package main

// Issue 22, acceptance 4: every example's ankusa.yaml passes check-config,
// the file as the operator reads it, with the secrets it names provided.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exampleSecrets is what each example's config reads at load: environment
// variables and files (relative to the working directory, as the node
// resolves file: references). An example that is not listed fails the
// test: add it with what its config needs.
var exampleSecrets = map[string]struct {
	env   []string
	files map[string]string
}{
	"gateway": {
		env: []string{
			"GITHUB_WEBHOOK_SECRET=gh-check-config-secret",
			"BACKEND_WEBHOOK_SECRET=whsec_Z2F0ZXdheS1iYWNrZW5kLXNpZ25pbmcta2V5LTEyMw==",
		},
		files: map[string]string{"secrets/stripe-webhook-secret": "whsec_check_config\n"},
	},
	"saas": {env: []string{
		"SAAS_STRIPE_SECRET=whsec_check_config",
		"SAAS_GITHUB_SECRET=gh-check-config-secret",
		"SAAS_DELIVERY_SECRET=whsec_c2Fhcy1kZWxpdmVyeS1zaWduaW5nLWtleS0wMDE=",
		"SAAS_KEK=8b1f4c0e7a2d9e3f5c6b7a8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
	}},
	"mintedurls":  {env: []string{"MINTEDURLS_SECRET=whsec_dGhlLXNhYXMtc2lnbmluZy1zZWNyZXQtZm9yLXRlc3Rz"}},
	"opaquetoken": {},
}

// TestExamplesCheckConfig runs check-config on every examples/*/ankusa.yaml
// and requires exit 0 and "config ok". An example whose program imports
// cli (it registers its own resolver: examples/opaquetoken) is checked
// with that program, built here; the rest with the stock binary. Each is
// also checked without its environment, which must fail (78): the test
// gives the file what it reads, so the file really reads it.
func TestExamplesCheckConfig(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/ankusa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d examples/*/ankusa.yaml, want at least the four of gateway, saas, mintedurls and opaquetoken: %q", len(files), files)
	}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		t.Run(name, func(t *testing.T) {
			secrets, ok := exampleSecrets[name]
			if !ok {
				t.Fatalf("examples/%s has an ankusa.yaml but no entry in exampleSecrets: add what its config reads", name)
			}
			cfg, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for path, content := range secrets.files {
				p := filepath.Join(dir, path)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			prog := exampleBinary(t, name)
			code, out := checkExample(t, prog, dir, cfg, secrets.env)
			if code != 0 || strings.TrimSpace(out) != "config ok" {
				t.Fatalf("%s check-config -config %s: exit %d, want 0 and \"config ok\":\n%s", filepath.Base(prog), file, code, out)
			}
			if len(secrets.env) > 0 {
				if code, out := checkExample(t, prog, dir, cfg, nil); code != exitConfig || !strings.Contains(out, "environment variable") {
					t.Fatalf("%s without its environment: exit %d, want %d naming the variable:\n%s", file, code, exitConfig, out)
				}
			}
		})
	}
}

// exampleBinary is the program that serves examples/<name>: the stock
// binary, or the example's own when it imports cli.
func exampleBinary(t *testing.T, name string) string {
	t.Helper()
	pkg := "github.com/ankusa/ankusa/examples/" + name
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	if !strings.Contains(" "+strings.TrimSpace(string(out))+" ", " github.com/ankusa/ankusa/cli ") {
		return bin
	}
	prog := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", prog, pkg).CombinedOutput(); err != nil {
		t.Fatalf("cannot build %s: %v\n%s", pkg, err, out)
	}
	return prog
}

// checkExample runs prog check-config in dir with env added to the test's
// environment less every variable an example reads, and returns the exit
// code and the output.
func checkExample(t *testing.T, prog, dir, cfg string, env []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "check-config", "-config", cfg)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !exampleVar(kv) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("check-config -config %s did not finish in 30s:\n%s", cfg, out.String())
	}
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("cannot run %s: %v", prog, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// exampleVar reports whether kv sets a variable some example reads.
func exampleVar(kv string) bool {
	for _, s := range exampleSecrets {
		for _, e := range s.env {
			if name, _, _ := strings.Cut(e, "="); strings.HasPrefix(kv, name+"=") {
				return true
			}
		}
	}
	return false
}
