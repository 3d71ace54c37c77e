#!/usr/bin/env bash
# package.sh OUTDIR: the release of one node, for a bare-metal install
# (deploy/README.md). make package runs it with OUTDIR=bin; deploy's
# TestPackage runs it into a temporary directory. It writes
#
#   OUTDIR/ankusa                                    static (CGO_ENABLED=0), version stamped
#   OUTDIR/ankusa-<version>-linux-<arch>.tar.gz      one directory of that name holding:
#       ankusa, README.md, LICENSE (when there is one), default.yaml
#       (config/default.yaml, the embedded default), docs/*.md,
#       examples/*/ankusa.yaml, deploy/README.md, deploy/systemd/*,
#       deploy/container/*, deploy/grafana/*.json, deploy/prometheus/*.yml
#
# and prints the tarball's path. Environment: GO (the go command, default
# go), VERSION (default: git describe, as the Makefile), GOARCH (default:
# the go command's). Entries are owned by 0:0 and dated at the last
# commit (SOURCE_DATE_EPOCH overrides), so two runs on one commit match.
set -euo pipefail

out="${1:?usage: scripts/package.sh OUTDIR}"
GO="${GO:-go}"
cd "$(dirname "$0")/.."
root="$PWD"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

version="${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}"
arch="${GOARCH:-$("$GO" env GOARCH)}"
name="ankusa-${version}-linux-${arch}"
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath \
	-ldflags "-X github.com/ankusa/ankusa/cli.Version=${version}" \
	-o "$out/ankusa" ./cmd/ankusa

stage="$(mktemp -d "$out/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
dst="$stage/$name"
mkdir -p "$dst"

# put FILE [AS]: copy FILE of the repository into the package, at AS
# (default: the same path).
put() {
	local as="${2:-$1}"
	mkdir -p "$(dirname "$dst/$as")"
	cp "$root/$1" "$dst/$as"
}

install -m 0755 "$out/ankusa" "$dst/ankusa"
put README.md
[ -f LICENSE ] && put LICENSE
put config/default.yaml default.yaml
shopt -s nullglob
for f in docs/*.md examples/*/ankusa.yaml deploy/README.md deploy/systemd/* deploy/container/* \
	deploy/grafana/*.json deploy/prometheus/*.yml; do
	put "$f"
done

tarball="$out/$name.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
	-cf - "$name" | gzip -n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "$tarball"
