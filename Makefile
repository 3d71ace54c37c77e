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
RACE_PKGS := ./wal/... ./edge/... ./meta/... ./source/... ./verify/...

.PHONY: build run test lint bench tools clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ankusa ./cmd/ankusa

# Build and start the appliance on its embedded default config; it prints
# a curl line that sends a hook.
run: build
	$(BIN)/ankusa serve

# The whole suite: formatting, vet, staticcheck, unit tests, race tests,
# crash tests against the built binary.
test: lint build
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

lint: $(STATICCHECK)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(abspath $(BIN)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

tools: $(STATICCHECK)

# Benchmarks report numbers; tests assert behaviour. See bench/RESULTS.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./envelope ./edge ./wal ./verify
	bench/spine.sh

clean:
	rm -rf $(BIN)
