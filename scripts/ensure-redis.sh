#!/usr/bin/env bash
# ensure-redis.sh: make sure Redis answers PING on 127.0.0.1:6379, for the
# tests (make test runs it first). It prints one line saying what it did.
#
#   - Redis already answers PING on the port: nothing to do (exit 0).
#   - Something else holds the port (it answers, but not +PONG): exit 1,
#     saying so; the script starts nothing beside it.
#   - Else it installs redis-server if missing (apt-get; root or
#     passwordless sudo) and starts a private server bound to 127.0.0.1,
#     without persistence (no RDB, no AOF), daemonized, with its pid file,
#     log and working directory in ${TMPDIR:-/tmp}/ankusa-redis. It waits
#     up to 10 s for PING.
#
# It never stops or flushes a server: not one it did not start, and not its
# own (it keeps running for the next test run). Stop the private server
# with: kill "$(cat ${TMPDIR:-/tmp}/ankusa-redis/redis.pid)"
#
# ANKUSA_REDIS_PORT changes the port (to try the script beside a running
# server).
set -euo pipefail

host=127.0.0.1
port="${ANKUSA_REDIS_PORT:-6379}"
wait_s=10
dir="${TMPDIR:-/tmp}/ankusa-redis"

say() { echo "ensure-redis: $*"; }

# pong: Redis answers PING (RESP inline command) within 2 s.
pong() {
	(
		exec 3<>"/dev/tcp/$host/$port" || exit 1
		printf 'PING\r\n' >&3
		IFS= read -r -t 2 reply <&3 || exit 1
		[[ "$reply" == "+PONG"* ]]
	) 2>/dev/null
}

listening() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

if pong; then
	say "Redis already answers PING on $host:$port; nothing to do"
	exit 0
fi
if listening; then
	say "something listens on $host:$port but does not answer PING with +PONG (a Redis with a password? another service?); not starting another server there" >&2
	exit 1
fi

[ -d "$dir" ] || mkdir -m 700 "$dir"
if [ ! -O "$dir" ]; then
	say "$dir belongs to someone else; set TMPDIR to a directory of yours" >&2
	exit 1
fi

did=""
if ! command -v redis-server >/dev/null; then
	# Installing needs root.
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			say "nothing answers on $host:$port, redis-server is not installed, and installing it needs root or passwordless sudo; install and start it yourself" >&2
			exit 1
		fi
	fi
	apt_install() {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends redis-server >>"$dir/apt.log" 2>&1
	}
	# A fresh machine may have no package lists yet.
	if ! apt_install && ! { "${sudo[@]}" apt-get update >>"$dir/apt.log" 2>&1 && apt_install; }; then
		say "cannot install redis-server (apt-get); its output is in $dir/apt.log" >&2
		exit 1
	fi
	did="installed redis-server, "
	if pong; then # the package started its own service
		say "${did}whose service answers PING on $host:$port"
		exit 0
	fi
fi

start=$SECONDS
if ! redis-server --bind "$host" --port "$port" --save '' --appendonly no \
	--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" \
	>>"$dir/start.log" 2>&1; then
	say "redis-server failed to start; see $dir/start.log and $dir/redis.log" >&2
	exit 1
fi
until pong; do
	if ((SECONDS - start >= wait_s)); then
		say "redis-server started but does not answer PING on $host:$port within ${wait_s}s; see $dir/redis.log" >&2
		exit 1
	fi
	sleep 0.1
done
say "${did}started redis-server on $host:$port in $((SECONDS - start))s (no persistence; pid, log and dir in $dir; stop it with: kill \"\$(cat $dir/redis.pid)\")"
