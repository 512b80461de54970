# spool: `make test` is the one command CI and newcomers run. It installs
# what the tests need (pinned), then vets, lints and runs every test.

GO        ?= go
TOOL      := $(GO) tool -modfile=tools/go.mod
FUZZTIME  ?= 10s

.PHONY: all build test deps lint vet staticcheck buflint check-generated generate unit fuzz bench bench-go demo clean

all: build

build:
	$(GO) build -o bin/spool ./cmd/spool

## test: everything CI checks
test: deps lint check-generated unit

## deps: what the tests need beyond Go modules
deps:
	@./scripts/test-deps.sh

lint: vet staticcheck buflint

vet:
	$(GO) vet ./...

staticcheck:
	$(TOOL) staticcheck ./...

buflint:
	$(TOOL) buf lint

## generate: rebuild gen/ from api/ with the pinned plugins
generate:
	$(TOOL) buf generate

## check-generated: gen/ must be what the .proto files generate
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	cp -r gen $$tmp/gen.committed && $(TOOL) buf generate && \
	if ! diff -r $$tmp/gen.committed gen >/dev/null; then \
		echo "gen/ is stale: run 'make generate' and commit the result"; exit 1; fi

## unit: every package's tests, with the race detector. Most tests spend
## their time waiting on servers, leases and timers, not on the CPU, so up
## to 8 of a package's parallel tests run at once (go test's default is one
## per CPU); packages still build and run one per CPU (-p's default), as the
## builds do need the CPU. go test's own vet pass is off: `make test` has
## just run all of go vet.
## The AWS store's tests run after the others, alone: they share two
## single-threaded test servers (DynamoDB- and SQS-compatible, in Node) and
## time leases in seconds, and beside the end-to-end tests' servers and
## workers those servers answered late enough to fail them.
AWSSTORE  := ./internal/store/backends/awsstore
unit:
	$(GO) test -race -timeout 30m -parallel 8 -vet=off $$($(GO) list ./... | grep -v '/internal/store/backends/awsstore$$')
	$(GO) test -race -timeout 30m -parallel 8 -vet=off $(AWSSTORE)

## fuzz: run every fuzzer for FUZZTIME (their corpora also run in `unit`)
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

## bench: the goals table: every performance goal, spool's figure and its
## baseline measured in the same run (River beside spool on PostgreSQL),
## written into docs/performance.md
bench:
	@./scripts/test-postgres.sh
	$(GO) run ./bench -goals -docs docs

## bench-go: the go test benchmarks of the hot paths, six runs each, in the
## format benchstat compares (save two runs' output and `benchstat old new`)
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./...

demo:
	$(GO) run ./cmd/spool demo

clean:
	rm -rf bin spool-data spool-worker
