# Ankusa: the two commands of the README are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/ankusa/ankusa/cli.Version=$(VERSION)
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck
# Every package runs without the race detector (allocation guards and the
# crash tests, which drive the built binary, need that), and the packages
# with concurrency run again under it.
RACE_PKGS := ./wal/... ./archive/... ./edge/... ./meta/... ./source/... ./verify/... ./internal/... ./segment/... ./admin/... ./dispatch/... ./dedupe/... ./tenant/...

.PHONY: build run test services fuzz lint bench bench-quick bench-wrk bench-verify bench-build tools clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ankusa ./cmd/ankusa

# Build and start the appliance on its embedded default config; it prints
# a curl line that sends a hook.
run: build
	$(BIN)/ankusa serve

# The whole suite: formatting, vet, staticcheck, unit tests, race tests,
# crash tests against the built binary, then a short run of every fuzz
# target. Tests that compare latencies (LATENCY_TESTS) run on their own
# after the rest: beside another package's tests on two cores they
# measure that package (go test's -skip leaves them out of the first run;
# they always run).
LATENCY_TESTS := ^TestTenantIsolation$$
test: lint build services
	$(GO) test -count=1 -timeout 20m -skip '$(LATENCY_TESTS)' ./...
	$(GO) test -count=1 -timeout 5m -run '$(LATENCY_TESTS)' ./cmd/ankusa
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)
	$(MAKE) fuzz

# The real services the tests use: RabbitMQ on 127.0.0.1:5672 and Redis on
# 127.0.0.1:6379 (each started, and installed if missing, when nothing
# answers there), and the S3 server bin/versitygw (built with go install
# if missing; each test starts its own, see internal/s3test).
services:
	@scripts/ensure-rabbitmq.sh
	@scripts/ensure-redis.sh
	@scripts/ensure-versitygw.sh

# Each fuzz target for FUZZTIME: 15 targets, 90 s of fuzzing, about two
# and a half minutes with their builds (the seed corpora in testdata/fuzz
# also run with the unit tests). go test -fuzz takes one package and one
# target at a time. A failing input is written to the package's
# testdata/fuzz/<target>/ and replays with go test -run '<target>/<file>'.
# scripts/fuzz-one.sh retries once a run that failed only on Go 1.26's
# fuzz-coordinator deadline race (golang/go#75804), never a finding.
FUZZTIME ?= 6s

fuzz:
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzDecode ./envelope
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzParseID ./envelope
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzJSONString ./envelope
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzJSONRoundTrip ./envelope
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzStripeHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzStandardWebhooksHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzHMACHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzGitHubHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzShopifyHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzSlackHeader ./verify
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzSegmentReader ./segment
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzRecords ./segment
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzWALReader ./wal
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzURLCheck ./dispatch/sink/httpsink
	@scripts/fuzz-one.sh $(GO) $(FUZZTIME) FuzzExtractJSON ./dedupe

lint: $(STATICCHECK)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(abspath $(BIN)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(STATICCHECK)

# Benchmarks report numbers; tests assert behaviour. See bench/RESULTS.md.
# The side by side (bench/harness): the bare fasthttp ceiling, the group
# commit reference gcref and the appliance in turn under the same loadgen
# command; one table, as markdown in $(BIN)/bench.md and raw in
# $(BIN)/bench.json. BENCH_FLAGS adds harness flags (-rounds 5, -tmp DIR).
BENCH_FLAGS ?=

bench-build: build
	$(GO) build -o $(BIN)/loadgen ./tools/loadgen
	$(GO) build -o $(BIN)/ceiling ./bench/ceiling
	$(GO) build -o $(BIN)/gcref ./bench/gcref
	$(GO) build -o $(BIN)/bench-harness ./bench/harness

# The micro-benchmarks, then 3 rounds at 64 and 256 connections (10 s each)
# and an open-loop run at half the appliance's maximum: about 5 minutes.
bench: bench-build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./envelope ./edge ./wal ./verify
	$(BIN)/bench-harness -bin $(BIN) -out $(BIN)/bench.md -json $(BIN)/bench.json $(BENCH_FLAGS)
	$(MAKE) --no-print-directory bench-segment
	$(MAKE) --no-print-directory bench-dispatch

# The side by side in about 30 s (1 round at 256 connections, 3 s each, and
# the open-loop run), for CI and for the before and after of a change. It
# fails on any answer but 201 and when the appliance makes less than half
# of gcref's req/s.
bench-quick: bench-build
	$(BIN)/bench-harness -bin $(BIN) -quick -out $(BIN)/bench-quick.md -json $(BIN)/bench-quick.json $(BENCH_FLAGS)

# The instrument against wrk (Debian package, installed here if missing):
# both clients in turn on the ceiling, closed loop and at a paced rate.
# See bench/RESULTS.md.
bench-wrk: bench-build
	@command -v wrk >/dev/null || apt-get install -y wrk || sudo apt-get install -y wrk
	$(BIN)/bench-harness -bin $(BIN) -vs-wrk -d 8s -warmup 1s -rounds 3 -out $(BIN)/bench-wrk.md -json $(BIN)/bench-wrk.json $(BENCH_FLAGS)

# The cost of signature verification (issue 6): the appliance alone, its
# demo source (no verification) and a source checking Stripe signatures
# (loadgen -sign stripe) in alternation, 3 rounds at 256 connections, 10 s
# each; the verified / plain ratio of the median req/s and whether it is
# within 10%. It fails on any answer but 201. One table, as markdown in
# $(BIN)/bench-verify.md and raw in $(BIN)/bench-verify.json; about 2
# minutes. See bench/RESULTS.md.
bench-verify: bench-build
	$(BIN)/bench-harness -bin $(BIN) -verify -out $(BIN)/bench-verify.md -json $(BIN)/bench-verify.json $(BENCH_FLAGS)

# The segment format on a corpus of realistic webhook payloads
# (bench/segment, corpus in bench/segment/testdata): compression ratio by
# block size, zstd level and dictionary, beside the zstd command (Debian
# package, installed here if missing); sealing rate with fsync; Store.Fetch
# latency cold and warm; the WAL commit with and without sealing behind
# it. One table, as markdown in $(BIN)/bench-segment.md; about 3 minutes.
.PHONY: bench-segment
bench-segment:
	@command -v zstd >/dev/null || apt-get install -y zstd || sudo apt-get install -y zstd
	$(GO) build -o $(BIN)/bench-segment ./bench/segment
	$(BIN)/bench-segment -out $(BIN)/bench-segment.md

# The dispatch stage end to end (bench/dispatch), on the built binary:
# delivered hooks/s to a local HTTP receiver and to RabbitMQ (its own
# exchange and queue, deleted after), live while loadgen ingests at full
# speed and read back from the store (dead letters retried), then open-loop
# runs with every stage running to find the highest rate, as a fraction of
# gcref's maximum, at which the delivery backlog stays bounded. One table,
# as markdown in $(BIN)/bench-dispatch.md and raw in
# $(BIN)/bench-dispatch.json (CPU profiles beside it); about 3 minutes.
# DISPATCH_FLAGS adds flags (-quick: about 40 s).
DISPATCH_FLAGS ?=

.PHONY: bench-dispatch
bench-dispatch: bench-build services
	$(GO) build -o $(BIN)/bench-dispatch ./bench/dispatch
	$(BIN)/bench-dispatch -bin $(BIN) -out $(BIN)/bench-dispatch.md -json $(BIN)/bench-dispatch.json $(DISPATCH_FLAGS)

clean:
	rm -rf $(BIN)
