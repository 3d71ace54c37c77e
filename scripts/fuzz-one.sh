#!/usr/bin/env bash
# fuzz-one.sh GO FUZZTIME TARGET PACKAGE: runs one fuzz target for FUZZTIME.
#
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded"
# and fail when -fuzztime ends while a worker is mid-run on a loaded machine
# (golang/go#75804, fixed in Go 1.27). That failure wrote no input and
# found nothing; it is retried, at most twice. Any other failure — a failing input
# written to testdata/fuzz, a panic, a test error — fails at once.
set -u -o pipefail
go_bin=$1 fuzztime=$2 target=$3 pkg=$4
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for attempt in 1 2 3; do
	if "$go_bin" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
		exit 0
	fi
	if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$log" &&
		! grep -q -e 'Failing input written' -e 'panic:' -e '_test.go:[0-9]' "$log"; then
		echo "fuzz-one: $target hit the Go fuzz coordinator's deadline race (golang/go#75804) and found nothing; running it again" >&2
		continue
	fi
	exit 1
done
exit 1
