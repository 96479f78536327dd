# kubectl-impersonate — run "make help" for the targets.
SHELL := /bin/bash
GO ?= go
PKG := github.com/kubectl-impersonate/kubectl-impersonate
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -s -w -X $(PKG)/pkg/cmd/util.version=$(VERSION) -X $(PKG)/pkg/cmd/util.commit=$(shell git rev-parse --short HEAD 2>/dev/null)
# The toolchain go.mod pins: the binaries, the tests and the vulnerability
# check use it (the standard library's fixes are the toolchain's); go
# downloads it through the module proxy once.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)
GOBIN_DIR := $(shell $(GO) env GOBIN)
ifeq ($(GOBIN_DIR),)
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin
endif

# The pinned tools (hack/tools/go.mod), built once and cached; evaluated only
# by the recipes that use them.
TOOLS = $(shell hack/tools/build.sh)
# $(call tool,NAME): one pinned tool, built when first wanted (hack/tools/build.sh NAME).
tool = $(shell hack/tools/build.sh $(1))/$(1)
# goreleaser, with the repository's canonical URL as its origin (goreleaser
# reads the commit and its date only once it has a remote: a clone without
# one would get neither, and its archives would not be dated at the commit).
GORELEASER = GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/kubectl-impersonate/kubectl-impersonate $(call tool,goreleaser)
# goreleaser adds each binary to its archive when the binary's build ends:
# one build at a time (-p 1) makes that order, and so the archives' bytes,
# the same on every run (the host snapshot, warm: 13.9 s, against 12.9 s
# two at a time on 2 cores).
GORELEASER_RELEASE = $(GORELEASER) release -p 1
# The version in the archive names of a goreleaser output directory.
snapshot_version = $$(ls $(1)/kubectl-impersonate_*_linux_amd64.tar.gz | sed -E 's/.*kubectl-impersonate_(.*)_linux_amd64.tar.gz/\1/')
# The proxy's container image from a goreleaser output (hack/tools/oci-image:
# go-containerregistry, no daemon, an empty base), and the deploy manifest
# naming it by tag and digest.
oci_image = $(GO) -C hack/tools run ./oci-image -dist $(CURDIR)/$(1) -manifest $(CURDIR)/deploy/proxy/proxy.yaml -manifest-out $(CURDIR)/$(1)/deploy/proxy/proxy.yaml && hack/image-sbom.sh $(1)

.PHONY: mutation mutation-all release release-build vulncheck vulndb-update wine-unit cross help build install test unit e2e demo demo-check bench bench-check soak lint fmt fuzz clean tools release-snapshot release-test release-test-all snapshot-host krew-manifest deploy-manifest krew-validate docs

help: ## List the targets
	@grep -E '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-impersonate and its companions (the fast get-token, the apiserver code)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

install: ## Install kubectl-impersonate (and its kubectl-impersonate-get_token and kubectl-impersonate-apiserver) into GOBIN and run it
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/...
	@"$(GOBIN_DIR)/kubectl-impersonate" version
	@case ":$$PATH:" in *":$(GOBIN_DIR):"*) echo "Installed in $(GOBIN_DIR): run \"kubectl impersonate setup --help\".";; \
	  *) echo "Installed in $(GOBIN_DIR), which is not on PATH: add it (export PATH=\"$(GOBIN_DIR):\$$PATH\") so that kubectl finds the plugin.";; esac

unit: ## Unit and integration tests (in-process OIDC provider, the built binary)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# make test's stages, in order: hack/stages.sh runs them one after another and
# prints the time each took (CI's log shows where a run spent its time). From
# the moment the end-to-end suite starts waiting on its peers, hack/prebuild.sh
# compiles what the later stages will, on the CPU left idle (stopped before
# bench-check, which measures speed).
TEST_STAGES := lint vulncheck unit wine-unit e2e demo-check release-test bench-check

test: ## Everything CI runs: lint (vet and test builds for Windows and macOS too), the vulnerability check, unit (and the permission package's under Wine), integration, end-to-end (Kubernetes 1.37 and 1.35), the demo checked, the release verified and installed with Krew, the speed bound; prints each stage's time
	@hack/stages.sh --idle hack/prebuild.sh --until bench-check $(MAKE) $(TEST_STAGES)

wine-unit: ## The permission package's tests (pkg/host/safefile) built for Windows and run under Wine (Debian's 8.0, installed when missing)
	hack/wine.sh unit

cross: ## go vet and build every test for the other platforms shipped (windows, darwin); the e2e and release suites are the Linux harness (they drive Wine), vetted by lint
	@for os in windows darwin; do echo "GOOS=$$os: vet, test builds"; \
	  GOOS=$$os $(GO) vet ./... && GOOS=$$os $(GO) test -count=1 -exec=true ./... >/dev/null || { echo "GOOS=$$os: vet or a test build failed"; exit 1; }; done

# The oldest vulnerability database make vulncheck accepts, in days from
# its commit (make vulndb-update refreshes it).
VULNDB_MAX_AGE_DAYS ?= 45

vulncheck: ## govulncheck on the binaries' packages against golang.org/x/vulndb pinned in hack/tools/vuln (and a fixture that must fail); fails when the database is older than VULNDB_MAX_AGE_DAYS
	VULNDB_MAX_AGE_DAYS=$(VULNDB_MAX_AGE_DAYS) hack/vulncheck.sh

vulndb-update: ## Pin the newest golang.org/x/vulndb the module proxy serves (for make vulncheck)
	$(GO) -C hack/tools/vuln get golang.org/x/vulndb@latest
	$(GO) -C hack/tools/vuln mod tidy

demo: ## A local kube-apiserver + etcd + Dex + proxy and a kubeconfig with two users; prints the commands to try (Ctrl-C stops it)
	hack/demo.sh

demo-check: ## Run the demo non-interactively (headless Chromium answers the logins) and check what its commands print and TAB offers; then Ctrl-C it while building, starting and running, and check it leaves nothing
	hack/demo.sh --check
	hack/demo.sh --check-interrupt

e2e: snapshot-host ## End-to-end tests on real kube-apiserver, etcd, Dex, kubectl, keyring, Chromium, and the proxy's image in podman
	KI_IMAGE_DIST=$(CURDIR)/dist-host test/e2e/run.sh

bench: ## Benchmark the cached get-token (disk and keyring) against a Go hello world, and the proxy with 1,000 sudo grants; writes the tables into docs/performance.md and docs/elevation.md
	hack/bench.sh
	hack/bench-sudo.sh

soak: ## The proxy's soak (not in make test): 2 replicas, 200 requests/s, token re-issue, key rotation, a restart, for SOAK_DURATION (default 10m); writes its report into docs/proxy.md
	hack/soak.sh

bench-check: ## The coarse speed bounds of make test: cached get-token (disk) at most 3 x hello, peak RSS at most 8 MiB; the full binary's version at most 5 x hello; status over 200 contexts (keyring) at most 1 s
	hack/bench.sh --check

lint: cross ## gofmt, goimports -local (imports grouped: standard, others, this module's), go mod tidy leaving nothing to change, go vet (Linux, Windows, macOS), the tests built for Windows and macOS, staticcheck, goreleaser check, Krew manifest validation, the GitHub Actions workflows (actionlint)
	@out="$$(gofmt -l cmd pkg test hack internal)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out="$$($(call tool,goimports) -local $(PKG) -l cmd pkg test hack internal)"; if [ -n "$$out" ]; then echo "goimports -local $(PKG) -w needed (imports in three groups: the standard library, other modules, this module):"; echo "$$out"; exit 1; fi
	@for m in . hack/tools hack/tools/vuln hack/tools/sbom hack/tools/cosign hack/tools/mutation hack/tools/actionlint; do $(GO) -C $$m mod tidy -diff >/dev/null || { echo "go mod tidy changes $$m/go.mod or go.sum: run go -C $$m mod tidy"; exit 1; }; done
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/e2e/...
	$(GO) vet -tags release ./test/release/...
	$(GO) -C hack/tools vet ./oci-image
	$(call tool,staticcheck) ./...
	$(GORELEASER) check
	$(call tool,validate-krew-manifest) -skip-install -manifest krew/impersonate.yaml
	hack/actionlint.sh

tools: ## Build the pinned release and lint tools once (goreleaser, staticcheck, krew; cached in ~/.cache)
	@echo "tools in $(TOOLS)"

release-snapshot: ## Build every release archive (linux, darwin, windows x amd64, arm64) and its SBOM into dist/, with the Krew manifest and the proxy's image (dist/image) and its SBOM
	$(GORELEASER_RELEASE) --snapshot --clean
	@n=$$(ls dist/kubectl-impersonate_*.tar.gz dist/kubectl-impersonate_*.zip | wc -l); test "$$n" -eq 6 || { echo "expected 6 archives, found $$n"; exit 1; }
	@n=$$(ls dist/kubectl-impersonate_*.cdx.json | wc -l); test "$$n" -eq 6 || { echo "expected 6 SBOMs, found $$n"; exit 1; }
	@n=$$(ls dist/*_v*/kubectl* | wc -l); test "$$n" -eq 24 || { echo "expected 24 binaries (4 x 6 platforms), found $$n"; exit 1; }
	hack/krew-manifest.sh "$(call snapshot_version,dist)" dist dist/krew/impersonate.yaml
	$(call tool,validate-krew-manifest) -skip-install -manifest dist/krew/impersonate.yaml
	$(call oci_image,dist)

# The host platform's snapshot (linux/amd64: the same configuration with one
# platform; the six take 7 minutes on 2 cores) with its Krew manifest and the
# proxy's image: the Krew install test and the e2e container test use it.
snapshot-host: ## Build the linux/amd64 snapshot into dist-host/: archive, Krew manifest, the proxy's image (dist-host/image)
	sed -e 's/^    goos: .*/    goos: [linux]/' -e 's/^    goarch: .*/    goarch: [amd64]/' -e 's/^project_name:/dist: dist-host\nproject_name:/' .goreleaser.yaml > .goreleaser.host.yaml
	$(GORELEASER_RELEASE) --snapshot --clean --config .goreleaser.host.yaml; rc=$$?; rm -f .goreleaser.host.yaml; exit $$rc
	PLATFORMS=linux/amd64 hack/krew-manifest.sh "$(call snapshot_version,dist-host)" dist-host dist-host/krew/impersonate.yaml
	$(call tool,validate-krew-manifest) -skip-install -manifest dist-host/krew/impersonate.yaml
	$(call oci_image,dist-host)

release: ## Build the tagged commit's release into dist/ (archives and SBOMs, the image and its SBOM, the Krew manifest) and sign it with its provenance (COSIGN_KEY, whose public half is the committed kubectl-impersonate.pub); publishing is goreleaser's
	hack/release-sign.sh --check-key
	$(MAKE) release-build
	hack/release-sign.sh dist

release-build: ## The tagged commit's release into dist/, unsigned (the release workflow's build job; its sign job runs hack/release-sign.sh)
	@git describe --exact-match --tags HEAD >/dev/null 2>&1 || { echo "make release: HEAD has no tag (vX.Y.Z); make release-snapshot builds without one"; exit 1; }
	$(GORELEASER_RELEASE) --clean --skip=publish,announce
	hack/krew-manifest.sh "$$(git describe --exact-match --tags HEAD)" dist dist/krew/impersonate.yaml
	$(call oci_image,dist)

release-test: snapshot-host ## Verify the snapshot as docs/install.md says (signed with a key of the test's; the image through a registry on 127.0.0.1) and each tampered asset refused, check its SBOMs against the binaries in the archive and the image and its Krew manifest against the archives, rebuild it from a fresh clone with an empty Go build cache and compare byte for byte, then install it with Krew and run and complete it through kubectl
	KI_DIST=$(CURDIR)/dist-host KI_REBUILD=snapshot-host KI_TOOLS=$(TOOLS) KI_KREW=$(call tool,krew) KI_KUBECTL="$$(test/e2e/tools/build.sh)/kubectl" $(GO) test -tags release -count=1 -timeout 30m -v ./test/release/

release-test-all: release-snapshot ## release-test on all six platforms (not in make test: about 25 minutes on 2 cores): every archive, SBOM and sum checked, the whole release rebuilt from a fresh clone with an empty Go build cache and compared byte for byte
	KI_DIST=$(CURDIR)/dist KI_REBUILD=release-snapshot KI_TOOLS=$(TOOLS) KI_KREW=$(call tool,krew) KI_KUBECTL="$$(test/e2e/tools/build.sh)/kubectl" $(GO) test -tags release -count=1 -timeout 90m -v ./test/release/

krew-manifest: ## Regenerate krew/impersonate.yaml from dist/ for VERSION (after goreleaser release)
	@test -n "$(VERSION)" || { echo "usage: make krew-manifest VERSION=1.2.3"; exit 1; }
	hack/krew-manifest.sh $(VERSION) dist krew/impersonate.yaml

deploy-manifest: ## Name the release's image by tag and digest in deploy/proxy/proxy.yaml, from dist/ (after make release-snapshot or goreleaser release)
	$(GO) -C hack/tools run ./oci-image -dist $(CURDIR)/dist -manifest $(CURDIR)/deploy/proxy/proxy.yaml

krew-validate: tools ## Validate krew/impersonate.yaml with Krew's validate-krew-manifest
	$(call tool,validate-krew-manifest) -skip-install -manifest krew/impersonate.yaml

mutation: ## Mutation testing of the security packages (gremlins): at least 90 % test efficacy in each, survivors listed as file:line, a package whose inputs are unchanged since its run in hack/mutation-record.tsv kept; and issue 46's named mutants, each killed by its test
	hack/mutants.sh
	hack/mutation.sh

mutation-all: ## make mutation with every package run again, recorded or not
	hack/mutants.sh
	MUTATION_ALL=1 hack/mutation.sh

fuzz: ## Run every fuzz target for FUZZTIME (default 60s) and print executions and crashes
	FUZZTIME=$(or $(FUZZTIME),60s) hack/fuzz.sh

docs: ## Regenerate the command reference in docs/reference from the command tree, and docs/testing.md's package map from the package docs
	$(GO) run ./hack/gendocs docs/reference
	$(GO) test ./test/repo -run TestPackageMapIsCurrent -count=1 -args -update

fmt: ## Format the code
	gofmt -w cmd pkg test hack internal

clean: ## Remove build output
	rm -rf bin dist dist-host
