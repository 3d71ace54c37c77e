#!/usr/bin/env bash
# ensure-versitygw.sh: make sure bin/versitygw is the S3 server the archive
# tests start (internal/s3test), versitygw at the pinned version. make
# services runs it, and so does internal/s3test when it finds no binary
# outside CI. It prints one line saying what it did.
#
#   - bin/versitygw exists and was built from the pinned module version
#     (go version -m; its --version says "git" for a go install build):
#     nothing to do.
#   - Else it builds it with go install into bin/ (about 2 minutes cold,
#     module downloads included; about 10 s, the link, from a warm Go
#     build cache). The command and its flags stay as they are so that the
#     build cache keeps serving it. The build goes to a directory beside
#     bin/versitygw and is renamed into place, and a lock (flock, when
#     there is one) keeps two test processes from building at once.
#
# It starts no server: each test starts its own (s3test.Start).
#
# GO picks the go command (default go).
set -euo pipefail

version=v1.8.0
module=github.com/versity/versitygw
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bindir="$root/bin"
bin="$bindir/versitygw"
go="${GO:-go}"

say() { echo "ensure-versitygw: $*"; }

# pinned: bin/versitygw was built from $module at $version.
pinned() {
	[ -x "$bin" ] || return 1
	local v
	v="$("$go" version -m "$bin" 2>/dev/null | awk -v m="$module" '$1 == "mod" && $2 == m { print $3 }')"
	[ "$v" = "$version" ]
}

if pinned; then
	say "bin/versitygw $version already installed; nothing to do"
	exit 0
fi

mkdir -p "$bindir"
if command -v flock >/dev/null; then
	exec 9>"$bindir/.versitygw.lock"
	flock 9
	if pinned; then # another process built it while this one waited
		say "bin/versitygw $version installed by another process meanwhile"
		exit 0
	fi
fi

log="$bindir/versitygw-install.log"
tmp="$(mktemp -d "$bindir/.versitygw-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
if ! GOBIN="$tmp" "$go" install "$module/cmd/versitygw@$version" >"$log" 2>&1; then
	say "go install $module/cmd/versitygw@$version failed (network? proxy?); its output is in $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
mv -f "$tmp/versitygw" "$bin"
say "installed bin/versitygw $version with go install in $((SECONDS - start))s"
