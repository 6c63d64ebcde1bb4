# Quavon developer entry points. `make` (or `make help`) lists them.
# The whole suite with real services (PostgreSQL, Valkey/Redis, Docker+gVisor) is
# scripts/test, which is also what CI runs (.ci/run).

.DEFAULT_GOAL := help
SHELL := /bin/bash

FUZZTIME ?= 20s
BENCHTIME ?= 3x

.PHONY: help test unit lint bench build fuzz

help: ## List the targets
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-7s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

test: ## Whole test suite with services (scripts/test; needs root)
	scripts/test

unit: ## go test ./... without services (service-backed tests skip)
	go test ./...

lint: ## gofmt, go vet and go mod tidy checks
	@files=$$(find . -name '*.go' -not -path './.git/*' -not -path './vendor/*' -not -path '*/testdata/*' -print0 | xargs -0r gofmt -l); \
	if [ -n "$$files" ]; then echo "gofmt -l reports (run gofmt -w):"; echo "$$files"; exit 1; fi
	go vet ./...
	go mod tidy -diff

bench: ## Benchmarks in ./bench/... with services (BENCHTIME=3x)
	scripts/test -run '^$$' -bench . -benchtime $(BENCHTIME) ./bench/...

build: ## go build ./...
	go build ./...

fuzz: ## Each Fuzz target in ./internal/... for FUZZTIME (20s) each
	@set -euo pipefail; \
	for pkg in $$(go list ./internal/...); do \
		list=$$(go test -list '^Fuzz' "$$pkg"); \
		for target in $$(grep '^Fuzz' <<<"$$list" || true); do \
			echo "==> $$pkg $$target ($(FUZZTIME))"; \
			go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done
