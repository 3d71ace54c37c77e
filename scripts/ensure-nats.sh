#!/usr/bin/env bash
# ensure-nats.sh: make sure a NATS server with JetStream answers on
# 127.0.0.1:4222, for the tests (make services runs it). It prints one line
# saying what it did.
#
#   - A server already answers there (its INFO line) with JetStream on:
#     nothing to do (exit 0).
#   - Something answers without JetStream, or something that is not NATS
#     holds the port: exit 1, saying so; the script starts nothing beside
#     it.
#   - Else it finds nats-server: in PATH, else bin/nats-server, else it
#     installs Debian's package (apt-get; root or passwordless sudo), else
#     it builds it with go install github.com/nats-io/nats-server/v2@v2.15.2
#     into bin/. It starts a private server bound to 127.0.0.1 with
#     JetStream, its store, pid file and log in ${TMPDIR:-/tmp}/ankusa-nats,
#     detached from this shell, and waits up to 10 s for it to answer.
#
# It never stops a server: not one it did not start, and not its own (it
# keeps running for the next test run). Stop the private server with:
# kill "$(cat ${TMPDIR:-/tmp}/ankusa-nats/nats.pid)"
#
# Each test uses a stream of its own on it (internal/natstest); tests that
# stop a server start their own.
#
# ANKUSA_NATS_PORT changes the port (to try the script beside a running
# server). GO picks the go command (default go).
set -euo pipefail

host=127.0.0.1
port="${ANKUSA_NATS_PORT:-4222}"
wait_s=10
dir="${TMPDIR:-/tmp}/ankusa-nats"
version=v2.15.2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
go="${GO:-go}"

say() { echo "ensure-nats: $*"; }

# info: the server's INFO line, read within 2 s of connecting ("" when
# nothing answers or what answers is not NATS).
info() {
	(
		exec 3<>"/dev/tcp/$host/$port" || exit 1
		IFS= read -r -t 2 line <&3 || exit 1
		[[ "$line" == "INFO {"* ]] || exit 1
		printf '%s\n' "$line"
	) 2>/dev/null || true
}

listening() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

jetstream() { [[ "$1" == *'"jetstream":true'* ]]; }

line="$(info)"
if [ -n "$line" ]; then
	if jetstream "$line"; then
		say "NATS with JetStream already answers on $host:$port; nothing to do"
		exit 0
	fi
	say "a NATS server answers on $host:$port without JetStream (start it with -js); not starting another server there" >&2
	exit 1
fi
if listening; then
	say "something listens on $host:$port but is not NATS (no INFO line); not starting another server there" >&2
	exit 1
fi

[ -d "$dir" ] || mkdir -m 700 "$dir"
if [ ! -O "$dir" ]; then
	say "$dir belongs to someone else; set TMPDIR to a directory of yours" >&2
	exit 1
fi

did=""
bin="$(command -v nats-server || true)"
if [ -z "$bin" ] && [ -x "$root/bin/nats-server" ]; then
	bin="$root/bin/nats-server"
fi
if [ -z "$bin" ]; then
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			sudo=(false) # no root: skip apt-get, build it instead
		fi
	fi
	apt_install() {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends nats-server >>"$dir/apt.log" 2>&1
	}
	if command -v apt-get >/dev/null &&
		{ apt_install || { "${sudo[@]}" apt-get update >>"$dir/apt.log" 2>&1 && apt_install; }; }; then
		did="installed nats-server (apt-get), "
		bin="$(command -v nats-server || true)"
		line="$(info)"
		if [ -n "$line" ]; then # the package started its own service
			if jetstream "$line"; then
				say "${did}whose service answers on $host:$port with JetStream"
				exit 0
			fi
			say "${did}whose service answers on $host:$port without JetStream: add jetstream {} to its config (/etc/nats-server.conf) and restart it" >&2
			exit 1
		fi
	fi
	if [ -z "$bin" ]; then
		mkdir -p "$root/bin"
		log="$root/bin/nats-server-install.log"
		if ! GOBIN="$root/bin" "$go" install "github.com/nats-io/nats-server/v2@$version" >"$log" 2>&1; then
			say "cannot install nats-server: apt-get failed or needs root (see $dir/apt.log) and go install failed (see $log)" >&2
			exit 1
		fi
		did="built nats-server $version into bin/, "
		bin="$root/bin/nats-server"
	fi
fi

start=$SECONDS
mkdir -p "$dir/store"
# setsid: the server outlives this script and the make that ran it.
setsid "$bin" -a "$host" -p "$port" -js -sd "$dir/store" -P "$dir/nats.pid" -l "$dir/nats.log" \
	</dev/null >>"$dir/start.log" 2>&1 &
until line="$(info)"; [ -n "$line" ] && jetstream "$line"; do
	if ((SECONDS - start >= wait_s)); then
		say "nats-server started but does not answer on $host:$port with JetStream within ${wait_s}s; see $dir/nats.log and $dir/start.log" >&2
		exit 1
	fi
	sleep 0.1
done
say "${did}started nats-server on $host:$port in $((SECONDS - start))s (JetStream; store, pid and log in $dir; stop it with: kill \"\$(cat $dir/nats.pid)\")"
