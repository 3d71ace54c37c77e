package main

import (
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "-version", "--version"} {
		code, stdout, stderr := runBin(t, t.TempDir(), arg)
		if code != 0 || stdout != "ankusa "+binVersion+"\n" || stderr != "" {
			t.Fatalf("ankusa %s: exit %d, stdout %q, stderr %q; want 0 and %q", arg, code, stdout, stderr, "ankusa "+binVersion+"\n")
		}
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runBin(t, t.TempDir(), "help")
	if code != 0 || !strings.Contains(stdout, "usage: ankusa") || !strings.Contains(stdout, "check-config") {
		t.Fatalf("ankusa help: exit %d, stdout %q", code, stdout)
	}
}

// Wrong usage exits 2 (as flag parsing does) with the usage on stderr,
// never 0 and never 78, which means the config is wrong.
func TestUsageErrors(t *testing.T) {
	f := func(want string, args ...string) {
		t.Helper()
		code, stdout, stderr := runBin(t, t.TempDir(), args...)
		if code != 2 {
			t.Fatalf("ankusa %s: exit %d, want 2\nstdout %q\nstderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
		if !strings.Contains(stderr, want) {
			t.Fatalf("ankusa %s: stderr %q should contain %q", strings.Join(args, " "), stderr, want)
		}
	}
	f(`unknown command "frobnicate"`, "frobnicate")
	f("usage: ankusa", "frobnicate")
	f("usage: ankusa")
	f("usage: ankusa inspect wal", "inspect")
	f("usage: ankusa inspect wal", "inspect", "segmentz", "x")
	f("usage: ankusa inspect wal", "inspect", "segments")
	f("usage: ankusa verify-archive", "verify-archive", "x")
	f("flag provided but not defined: -bogus", "verify-archive", "-bogus")
	f("usage: ankusa inspect wal", "inspect", "wal")
	f(`-wal-recovery="sloppy" must be strict or truncate`, "serve", "-wal-recovery", "sloppy")
	f("flag provided but not defined: -bogus", "serve", "-bogus")
	f("flag provided but not defined: -bogus", "check-config", "-bogus")
}
