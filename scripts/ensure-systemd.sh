#!/usr/bin/env bash
# ensure-systemd.sh: make sure systemd-analyze is installed, for deploy's
# tests (TestSystemdVerify runs systemd-analyze verify and security on
# deploy/systemd/ankusa.service). make services runs it. It prints one
# line saying what it did.
#
#   - systemd-analyze is on PATH: nothing to do.
#   - Else it installs Debian's systemd package (apt-get; root or
#     passwordless sudo), which only adds the tools here: nothing is
#     started, and a container keeps its own init.
set -euo pipefail

say() { echo "ensure-systemd: $*"; }

if command -v systemd-analyze >/dev/null; then
	say "systemd-analyze is installed; nothing to do"
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		say "systemd-analyze is not installed, and installing Debian's systemd package needs root or passwordless sudo; install it yourself" >&2
		exit 1
	fi
fi
log="${TMPDIR:-/tmp}/ankusa-ensure-systemd.log"
apt_install() {
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends systemd >>"$log" 2>&1
}
# A fresh machine may have no package lists yet.
if ! apt_install && ! { "${sudo[@]}" apt-get update >>"$log" 2>&1 && apt_install; }; then
	say "cannot install the systemd package (apt-get); its output is in $log" >&2
	exit 1
fi
if ! command -v systemd-analyze >/dev/null; then
	say "installed the systemd package, but systemd-analyze is not on PATH" >&2
	exit 1
fi
say "installed the systemd package (systemd-analyze)"
