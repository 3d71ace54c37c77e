#!/usr/bin/env bash
# ensure-rabbitmq.sh: make sure RabbitMQ answers AMQP on 127.0.0.1:5672,
# for the tests (make test runs it first). It prints one line saying what
# it did.
#
#   - Something already answers on the port: nothing to do (exit 0).
#   - Else it installs rabbitmq-server if missing (apt-get; root or
#     passwordless sudo) and starts a private node, rabbit@localhost,
#     bound to 127.0.0.1, with HOME, config, data and logs in
#     ${TMPDIR:-/tmp}/ankusa-rabbitmq (the /usr/sbin wrappers would
#     switch user and then fail on the Erlang cookie). It waits up to 60 s
#     for the node to boot and the port to answer.
#
# It never stops a broker: not one it did not start, and not its own (the
# node keeps running for the next test run; epmd stays too). Stop the
# private node with: ${TMPDIR:-/tmp}/ankusa-rabbitmq/rabbitmqctl stop
#
# The node's rabbitmqctl needs its HOME (the Erlang cookie): the script
# writes ${TMPDIR:-/tmp}/ankusa-rabbitmq/rabbitmqctl, which the tests use
# when the system one cannot reach the node.
#
# ANKUSA_RABBITMQ_PORT and ANKUSA_RABBITMQ_NODE change the port and node
# name (to try the script beside a running broker).
set -euo pipefail

host=127.0.0.1
port="${ANKUSA_RABBITMQ_PORT:-5672}"
node="${ANKUSA_RABBITMQ_NODE:-rabbit@localhost}"
wait_s=60
dir="${TMPDIR:-/tmp}/ankusa-rabbitmq"
bin=/usr/lib/rabbitmq/bin

say() { echo "ensure-rabbitmq: $*"; }

listening() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

if listening; then
	say "RabbitMQ already answers on $host:$port; nothing to do"
	exit 0
fi

# Installing and starting need root.
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo=(sudo -n)
	else
		say "nothing answers on $host:$port, and installing or starting RabbitMQ needs root or passwordless sudo; start it yourself" >&2
		exit 1
	fi
fi

[ -d "$dir" ] || mkdir -m 700 "$dir"
if [ ! -O "$dir" ]; then
	say "$dir belongs to someone else; set TMPDIR to a directory of yours" >&2
	exit 1
fi

did=""
if [ ! -x "$bin/rabbitmq-server" ]; then
	apt_install() {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends rabbitmq-server >>"$dir/apt.log" 2>&1
	}
	# A fresh machine may have no package lists yet.
	if ! apt_install && ! { "${sudo[@]}" apt-get update >>"$dir/apt.log" 2>&1 && apt_install; }; then
		say "cannot install rabbitmq-server (apt-get); its output is in $dir/apt.log" >&2
		exit 1
	fi
	did="installed rabbitmq-server, "
	if listening; then # the package started its own service
		say "${did}whose service answers on $host:$port"
		exit 0
	fi
fi

# The node's own config, so that the machine's (listeners, plugins with
# ports of their own) does not decide where it listens.
printf 'listeners.tcp.1 = %s:%s\n' "$host" "$port" >"$dir/rabbitmq.conf"
echo '[].' >"$dir/enabled_plugins"

node_env=(
	HOME="$dir"
	RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
	RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
	RABBITMQ_NODENAME="$node"
	RABBITMQ_NODE_IP_ADDRESS="$host"
	RABBITMQ_NODE_PORT="$port"
	RABBITMQ_MNESIA_BASE="$dir/mnesia"
	RABBITMQ_LOG_BASE="$dir/log"
)
ctl() { "${sudo[@]}" env "${node_env[@]}" "$bin/rabbitmqctl" "$@"; }

# The node's own rabbitmqctl, for operators and for the tests.
{
	echo '#!/bin/sh'
	echo "# rabbitmqctl for the node that ensure-rabbitmq.sh started (its HOME holds the cookie)."
	printf 'exec %s env' "${sudo[*]}"
	printf ' %q' "${node_env[@]}"
	printf ' %q "$@"\n' "$bin/rabbitmqctl"
} >"$dir/rabbitmqctl"
chmod 700 "$dir/rabbitmqctl"

start=$SECONDS
if ! "${sudo[@]}" env "${node_env[@]}" "$bin/rabbitmq-server" -detached >>"$dir/start.log" 2>&1; then
	say "rabbitmq-server -detached failed; see $dir/start.log and $dir/log" >&2
	exit 1
fi

# await_startup fails at once while the node is not up enough to answer
# at all, so it is retried until the deadline.
until ctl -q -t "$((wait_s - (SECONDS - start) + 1))" await_startup >/dev/null 2>&1; do
	if ((SECONDS - start >= wait_s)); then
		say "the node did not boot within ${wait_s}s (left running); see $dir/log" >&2
		exit 1
	fi
	sleep 1
done
until listening; do
	if ((SECONDS - start >= wait_s)); then
		say "the node booted but nothing answers on $host:$port within ${wait_s}s (left running); see $dir/log" >&2
		exit 1
	fi
	sleep 0.2
done
say "${did}started RabbitMQ node $node on $host:$port in $((SECONDS - start))s (data and logs in $dir; stop it with $dir/rabbitmqctl stop)"
