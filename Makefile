# kubectl-impersonate — run "make help" for the targets.
SHELL := /bin/bash
GO ?= go
PKG := github.com/kubectl-impersonate/kubectl-impersonate
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -s -w -X $(PKG)/pkg/cmd.version=$(VERSION) -X $(PKG)/pkg/cmd.commit=$(shell git rev-parse --short HEAD 2>/dev/null)
GOBIN_DIR := $(shell $(GO) env GOBIN)
ifeq ($(GOBIN_DIR),)
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin
endif

.PHONY: help build install test unit e2e bench lint fmt fuzz clean

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-impersonate and its fast get-token companion
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

install: ## Install kubectl-impersonate (and kubectl-impersonate-get_token) into GOBIN and run it
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/...
	@"$(GOBIN_DIR)/kubectl-impersonate" version
	@case ":$$PATH:" in *":$(GOBIN_DIR):"*) echo "Installed in $(GOBIN_DIR): run \"kubectl impersonate setup --help\".";; \
	  *) echo "Installed in $(GOBIN_DIR), which is not on PATH: add it (export PATH=\"$(GOBIN_DIR):\$$PATH\") so that kubectl finds the plugin.";; esac

unit: ## Unit and integration tests (in-process OIDC provider, the built binary)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

test: lint unit e2e ## Everything CI runs: lint, unit, integration and end-to-end tests

e2e: ## End-to-end tests on real kube-apiserver, etcd, Dex, kubectl, keyring and Chromium
	test/e2e/run.sh

bench: ## Benchmark the cached get-token (disk and keyring) against a Go hello world
	hack/bench.sh

lint: ## gofmt and go vet
	@out="$$(gofmt -l cmd pkg test)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fmt: ## Format the code
	gofmt -w cmd pkg test

clean: ## Remove build output
	rm -rf bin dist
