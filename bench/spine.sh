#!/usr/bin/env bash
# Measures the ingest spine end to end: the built binary with WAL group
# commit on this machine's disk, driven by wrk over loopback with a ~1 KiB
# Stripe-like JSON body. Prints throughput, latency percentiles and the
# average commit batch size read from the node's metrics.
# (The project's own open-loop load generator and the bare-fasthttp ceiling
# replace wrk here once they exist.)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
if ! command -v wrk >/dev/null; then
  apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
fi
make -s build
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000)); admin=$((port + 1))
cat > "$work/cfg.yaml" <<YAML
node: {name: bench, data_dir: $work/data}
listen: 127.0.0.1:$port
admin: {listen: 127.0.0.1:$admin}
log: {level: warn}
sources:
  demo: {verify: {type: none}}
YAML
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"id":"evt_1NqXyZ2eZvKYlo2C0123abcd","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1NqXyZ","amount_paid":4200,"currency":"usd","customer":"cus_ABC123","lines":{"data":[{"id":"il_1","amount":4200,"description":"Pro plan"}]}}},"created":1700000000,"livemode":false,"pending_webhooks":1,"request":{"id":"req_123","idempotency_key":"k-1"}}' .. string.rep(" ", 600)
LUA
bin/ankusa serve -config "$work/cfg.yaml" & pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null && break; sleep 0.1; done
echo "== spine: ankusa serve, wal.type disk, $CONNS connections, $DURATION, $(nproc) cores"
wrk -t2 -c"$CONNS" -d"$DURATION" --latency -s "$work/post.lua" "http://127.0.0.1:$port/webhooks/demo"
m=$(curl -s "http://127.0.0.1:$admin/metrics")
records=$(awk '/^ankusa_wal_records_total /{print $2}' <<<"$m")
batches=$(awk '/^ankusa_wal_batches_total /{print $2}' <<<"$m")
fsync_sum=$(awk '/^ankusa_wal_fsync_seconds_sum /{print $2}' <<<"$m")
awk -v r="$records" -v b="$batches" -v s="$fsync_sum" 'BEGIN { printf "records %d, batches %d, avg batch %.1f records, avg fdatasync %.0f us\n", r, b, r/b, s/b*1e6 }'
