#!/usr/bin/env bash
# ensure-chromium.sh: make sure Debian's chromium is at /usr/bin/chromium,
# for the console's browser tests (cmd/ankusa TestConsole*, driven over the
# DevTools protocol by chromedp; make test runs this first). It prints one
# line saying what it did.
#
#   - /usr/bin/chromium runs (--version): nothing to do (exit 0).
#   - Else it installs the chromium package (apt-get; root or passwordless
#     sudo), updating the package lists once if the first try fails, and
#     checks it runs. apt-get's output goes to
#     ${TMPDIR:-/tmp}/ankusa-chromium/apt.log.
#
# The tests start their own headless browser on a fresh profile each time;
# this script starts nothing.
set -euo pipefail

bin=/usr/bin/chromium
dir="${TMPDIR:-/tmp}/ankusa-chromium"

say() { echo "ensure-chromium: $*"; }

runs() { "$bin" --headless --no-sandbox --disable-gpu --version >/dev/null 2>&1; }

if [ -x "$bin" ] && runs; then
	say "$("$bin" --version 2>/dev/null | head -n1) at $bin; nothing to do"
	exit 0
fi

[ -d "$dir" ] || mkdir -m 700 "$dir"
if [ ! -O "$dir" ]; then
	say "$dir belongs to someone else; set TMPDIR to a directory of yours" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		say "$bin is missing, and installing chromium needs root or passwordless sudo; install it yourself (apt-get install chromium)" >&2
		exit 1
	fi
fi
apt_install() {
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends chromium >>"$dir/apt.log" 2>&1
}
# A fresh machine may have no package lists yet.
if ! apt_install && ! { "${sudo[@]}" apt-get update >>"$dir/apt.log" 2>&1 && apt_install; }; then
	say "cannot install chromium (apt-get); its output is in $dir/apt.log" >&2
	exit 1
fi
if ! runs; then
	say "installed chromium, but $bin --version fails; see $dir/apt.log" >&2
	exit 1
fi
say "installed $("$bin" --version 2>/dev/null | head -n1) at $bin"
