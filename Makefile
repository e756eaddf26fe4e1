# MindRouter — run `make help` for the targets.
GO       ?= go
PLUGINS  := openai anthropic ollamaapi responses vllm ollama bundle
# Plugins in modules of their own (plugins/NAME/go.mod, on the SDK module
# alone, as a third party's would be): built from their own directory.
MODULES  := gemini
WASM     := $(PLUGINS:%=plugins/%.wasm) $(MODULES:%=plugins/%.wasm)
CONFIG   ?=
# Test binaries run one at a time (.ci/one-at-a-time holds a lock), so the
# timing-sensitive tests (GC and ticker stalls during a runaway plugin call,
# trap isolation) never share the two cores with another package's tests;
# -p 2 lets the next packages compile and link meanwhile.
GOFLAGS_TEST ?= -shuffle=on -p 2 -exec $(CURDIR)/.ci/one-at-a-time
export MINDROUTER_TEST_LOCK ?= $(CURDIR)/.cache/test.lock
# The tests load the plugins `make plugins` built (every test target
# depends on it) instead of building their own (sdk/sdktest/buildcache;
# plain `go test` builds them once per source state into a user cache).
export MINDROUTER_TEST_WASM ?= $(CURDIR)/plugins
# go-nvml (sidecar only) prints harmless deprecation warnings under cgo.
export CGO_CFLAGS ?= -Wno-deprecated-declarations

.PHONY: compat deploy-check image help build gateway fakellm plugins sidecar run test test-norace test-quick build-check test-deps matrix matrix-from tidy-check test-short test-faults fuzz bench lint fmt check clean FORCE

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s '	'

build: gateway fakellm plugins sidecar ## build everything into bin/ and plugins/*.wasm

# The version stamp (mindrouter --version, /status): the nearest tag, else
# the commit; override with VERSION=v1.2.3.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS_VERSION = -X github.com/mindrouter/mindrouter/core/version.Version=$(VERSION) -X github.com/mindrouter/mindrouter/core/version.Commit=$(COMMIT)

gateway: ## bin/mindrouter (CGO-free), stamped with VERSION and COMMIT
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS_VERSION)' -o bin/mindrouter ./core/cmd/mindrouter

fakellm: ## bin/fakellm, the simulated vLLM/Ollama backend
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/fakellm ./bench/fakellm/cmd/fakellm

plugins: $(WASM) ## the WebAssembly plugins named in plugins.yaml

$(MODULES:%=plugins/%.wasm): plugins/%.wasm: FORCE
	cd plugins/$* && GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o ../$*.wasm ./wasm

plugins/%.wasm: FORCE
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $@ ./plugins/$*/wasm

# The bundle builds with profile-guided optimisation (go build's -pgo=auto reads
# plugins/bundle/wasm/default.pgo): a native CPU profile of the default
# path's fused calls; Go's wasm calls are dear, and PGO inlines the hot ones
# (about 9 % fewer guest instructions a request: bench/RESULTS.md).
pgo: ## regenerate plugins/bundle/wasm/default.pgo after changing the bundle's hot path
	$(GO) test ./plugins/bundle -run '^$$' -bench '^BenchmarkDefaultPath$$' -benchtime 2s -o bin/bundle-pgo.test -cpuprofile plugins/bundle/wasm/default.pgo
	rm -f bin/bundle-pgo.test

sidecar: ## bin/mindrouter-sidecar (needs cgo; only this binary links go-nvml)
	CGO_ENABLED=1 CGO_CFLAGS=-Wno-deprecated-declarations $(GO) build -trimpath -o bin/mindrouter-sidecar ./sidecar/cmd/mindrouter-sidecar

run: gateway plugins ## start the gateway on 127.0.0.1:8080 (CONFIG=file to use a config)
	./bin/mindrouter serve $(if $(CONFIG),--config $(CONFIG),)

# The SDK is its own module (sdk/go.mod): every go command runs for the
# gateway's module and again with -C sdk.
test-deps: ## install the servers the tests start (Redis, MariaDB; Debian packages) when missing
	sh deploy/scripts/test-services.sh

# gotestsum (a go.mod tool) runs go test -json, prints failures and a
# count, and keeps the JSON in .cache/ (the matrix is written from it).
TESTSUM  = $(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg
NORACE   = .ci/norace-tests.sh

test: plugins tidy-check test-deps build-check deploy-check ## every test once under the race detector, the !race tests once without it, vet, the matrix
	$(GO) vet ./...
	$(GO) -C sdk vet ./...
	for m in $(MODULES); do $(GO) -C plugins/$$m vet ./... || exit 1; done
	@mkdir -p .cache
	$(TESTSUM) --jsonfile .cache/test-sdk-race.json --raw-command -- $(GO) -C sdk test -json -race $(GOFLAGS_TEST) ./...
	for m in $(MODULES); do $(TESTSUM) --jsonfile .cache/test-$$m-race.json --raw-command -- $(GO) -C plugins/$$m test -json -race $(GOFLAGS_TEST) ./... || exit 1; done
	$(TESTSUM) --jsonfile .cache/test-race.json -- -race $(GOFLAGS_TEST) -timeout 30m ./...
	@# Allocation budgets and the plugins' wasm parity tests are built !race
	@# (the race detector changes allocation counts and slows wazero tenfold):
	@# only they run again, without it.
	$(run-norace)
	$(MAKE) --no-print-directory matrix-from MATRIX_JSON=.cache/test-race.json

define run-norace
$(TESTSUM) --jsonfile .cache/test-norace.json --raw-command -- $(NORACE) run $(GO) $(GOFLAGS_TEST)
endef

test-norace: plugins ## only the tests built without the race detector (allocation budgets, wasm parity)
	@mkdir -p .cache
	$(run-norace)

# The compile checks: the gateway builds without cgo, plugins and the SDK
# for wasip1, and the SDK's example and the plugins in modules of their own
# pass their golden vectors.
build-check: plugins
	CGO_ENABLED=0 $(GO) build ./core/... ./sidecar/wire/...
	CGO_ENABLED=0 $(GO) -C sdk build ./...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./plugins/...
	GOOS=wasip1 GOARCH=wasm $(GO) -C sdk build ./...
	for m in $(MODULES); do GOOS=wasip1 GOARCH=wasm $(GO) -C plugins/$$m build ./... || exit 1; done
	mkdir -p .cache && GOOS=wasip1 GOARCH=wasm $(GO) -C sdk build -buildmode=c-shared -o ../.cache/simple.wasm ./examples/simple/wasm && $(GO) run ./core/cmd/mindrouter plugin check --golden sdk/examples/simple/testdata/vectors .cache/simple.wasm
	for m in $(MODULES); do $(GO) run ./core/cmd/mindrouter plugin check --golden plugins/$$m/testdata/vectors plugins/$$m.wasm || exit 1; done

# The end-to-end SDK tests mark the cells they prove (core/internal/matrix);
# the table is written from a run's JSON, and a failed cell fails the target.
matrix: plugins test-deps ## docs/conformance.md: client dialect × backend engine, from the SDK tests alone
	@mkdir -p .cache
	$(GO) test -json -count=1 -run 'SDK_|Raw_' ./core/gateway/ > .cache/matrix.json; st=$$?; \
	  $(MAKE) --no-print-directory matrix-from MATRIX_JSON=.cache/matrix.json && exit $$st

matrix-from:
	$(GO) run ./core/internal/matrix/cmd/conformance-matrix -pkg github.com/mindrouter/mindrouter/core/gateway -o docs/conformance.md < $(MATRIX_JSON)

# The deployment files: the alert rules parse and their unit tests pass
# (promtool from Debian's prometheus package, installed by test-deps).
deploy-check: plugins test-deps ## check deploy/: alert rules (promtool), compose (docker-compose config), the Helm chart rendered and decoded strictly, the image
	promtool check rules deploy/prometheus/alerts.yml
	cd deploy/prometheus && promtool test rules alerts_test.yml
	$(GO) -C deploy vet ./...
	$(GO) -C deploy test -count=1 ./...

image: gateway plugins ## bin/mindrouter-image.tar: the container image built without an engine (docker load -i)
	$(GO) -C deploy run ./cmd/mkimage -bin ../bin/mindrouter -config container/mindrouter.yaml -plugins ../plugins.yaml \
	  -o ../bin/mindrouter-image.tar -tag mindrouter:$(VERSION) -version $(VERSION)

tidy-check: ## fail when go.mod/go.sum of any module are not tidy
	$(GO) mod tidy -diff
	$(GO) -C sdk mod tidy -diff
	$(GO) -C deploy mod tidy -diff
	for m in $(MODULES); do $(GO) -C plugins/$$m mod tidy -diff || exit 1; done

# The edit loop: every package's tests but the end-to-end gateway suite
# (core/gateway), without the race detector, packages in parallel. Run
# `make test` before committing.
QUICK_PKGS = $(shell $(GO) list ./... | grep -v '/core/gateway$$')
test-quick: plugins test-deps ## unit tests only (no core/gateway end-to-end suite, no race detector): the edit loop, a few minutes
	$(GO) -C sdk test ./...
	for m in $(MODULES); do $(GO) -C plugins/$$m test ./... || exit 1; done
	$(GO) test $(QUICK_PKGS)

test-short: plugins test-deps ## every test once without the race detector
	$(GO) -C sdk test $(GOFLAGS_TEST) ./...
	for m in $(MODULES); do $(GO) -C plugins/$$m test $(GOFLAGS_TEST) ./... || exit 1; done
	$(GO) test $(GOFLAGS_TEST) ./...

# The fault matrix (core/faultmatrix, build tag faults): two gateway
# processes on real MariaDB, Redis and ClickHouse, each fault injected
# under load; a few minutes on 2 cores. UPDATE=1 rewrites docs/faults.md.
test-faults: plugins test-deps ## the fault matrix: backend, Redis, MariaDB, ClickHouse and replica faults under load (UPDATE=1: write docs/faults.md)
	$(GO) vet -tags faults ./core/faultmatrix/
	$(GO) test -tags faults -count=1 -timeout 15m -v -run TestFaultMatrix ./core/faultmatrix/ $(if $(UPDATE),-args -update,)

fuzz: ## run each fuzz target for FUZZTIME (default 20s)
	@for pkg in $$($(GO) list ./... github.com/mindrouter/mindrouter/sdk/...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep ^Fuzz); do \
	    echo "== $$pkg $$f"; $(GO) test -run=^$$ -fuzz=^$$f$$ -fuzztime=$${FUZZTIME:-20s} $$pkg || exit 1; \
	  done; done

# Not in make test: installs Claude Code, Codex and Qwen Code from npm (a
# few hundred MB, cached in .cache/compat) and runs each against a local
# gateway with fakellm backends.
compat: ## the coding agents (Claude Code, Codex, Qwen Code from npm) against a local gateway: no API error, no 4xx
	bash bench/compat/compat.sh $(COMPAT_OUT)

bench: plugins ## Go benchmarks of the hot paths
	$(GO) -C sdk test -run=^$$ -bench=. -benchmem ./...
	$(GO) test -run=^$$ -bench=. -benchmem ./core/... ./plugins/...

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

check: test ## alias of test

clean: ## remove build outputs
	rm -rf bin $(WASM) .cache

FORCE:
