# Every target installs what it needs when missing and is safe to run again.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

# Pure-Go SQLite (modernc.org/sqlite): no C compiler needed, and the cgo
# driver mattn/go-sqlite3 is never compiled.
export CGO_ENABLED := 0

BIN := bin/proctor
DRIVER_DIR := $(CURDIR)/.cache/playwright-driver

.PHONY: deps deps-web generate build run test lint bench clean

## deps: install everything the build, `run` and `test` need (npm packages,
## Chromium, Playwright driver, PostgreSQL, versitygw); only what is missing.
deps:
	scripts/deps.sh all

# Front-end files that the binary embeds (static/vendor/).
deps-web:
	scripts/deps.sh web

## generate: regenerate *_templ.go from *.templ and docs/configuration.md from
## the option table in config/ (commit the result).
generate:
	go tool templ generate
	go generate ./config

## build: bin/proctor.
build: deps-web
	go build -o $(BIN) ./cmd/proctor

## run: build, migrate, seed the bundled sandbox benchmarks, serve (candidates on this machine allowed). ARGS are passed on.
run: build
	scripts/deps.sh browser
	./$(BIN) migrate
	PLAYWRIGHT_DRIVER_PATH=$(DRIVER_DIR) PROCTOR_CHROMIUM_PATH=/usr/bin/chromium ./$(BIN) seed
	PLAYWRIGHT_DRIVER_PATH=$(DRIVER_DIR) PROCTOR_CHROMIUM_PATH=/usr/bin/chromium \
	PROCTOR_AGENT_ALLOW_HOSTS=$${PROCTOR_AGENT_ALLOW_HOSTS-127.0.0.1} \
		exec ./$(BIN) serve $(ARGS)

## test: what CI runs: services, gofmt, templ freshness, vet, build, go test.
test:
	scripts/test.sh

## lint: gofmt, go vet and staticcheck (all clean).
lint: deps-web
	@files=$$(git ls-files --cached --others --exclude-standard -- '*.go' | while read -r f; do if [ -f "$$f" ]; then echo "$$f"; fi; done | xargs -r gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$files"; exit 1; fi
	go vet ./...
	go tool staticcheck ./...

## bench: run the benchmarks only (installs the browser when missing) and
## print a summary: Proctor's per-step overhead against the floor of the same work, and
## episodes per minute at 1, 2 and 4 parallel episodes.
bench:
	scripts/bench.sh

## clean: remove build outputs (node_modules and .cache are kept: they are
## downloads, not outputs; delete them by hand to start afresh).
clean:
	rm -rf bin static/vendor coverage.out coverage.html *.coverprofile
