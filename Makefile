# latchkey — the commands a newcomer and CI use.
GO ?= go

.PHONY: run test lint build fuzz

run: ## start the service on embedded SQLite with demo data
	$(GO) run ./cmd/latchkey serve --demo

test: ## every test: vet, then all packages with the race detector (SQLite and PostgreSQL)
	./scripts/test-deps
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

# What `latchkey version` prints, stamped at build time (works also where
# GOFLAGS=-buildvcs=false leaves Go's VCS stamp out).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build: ## bin/latchkey: static (CGO off), stamped with version, commit and build date
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/latchkey ./cmd/latchkey

lint: ## gofmt, vet, staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fuzz: ## a short run of every fuzz target
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done
