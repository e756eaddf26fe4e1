# MindRouter — run `make help` for the targets.
GO       ?= go
PLUGINS  := openai anthropic ollamaapi responses vllm ollama bundle
WASM     := $(PLUGINS:%=plugins/%.wasm)
CONFIG   ?=
# -p 1: packages one at a time, so the timing-sensitive tests (GC and
# ticker stalls during a runaway plugin call, trap isolation) do not share
# the two cores with another package's load.
GOFLAGS_TEST ?= -shuffle=on -p 1
# go-nvml (sidecar only) prints harmless deprecation warnings under cgo.
export CGO_CFLAGS ?= -Wno-deprecated-declarations

.PHONY: help build gateway fakellm plugins sidecar run test test-deps matrix tidy-check test-short fuzz bench lint fmt check clean FORCE

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s '	'

build: gateway fakellm plugins sidecar ## build everything into bin/ and plugins/*.wasm

gateway: ## bin/mindrouter (CGO-free)
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/mindrouter ./core/cmd/mindrouter

fakellm: ## bin/fakellm, the simulated vLLM/Ollama backend
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/fakellm ./bench/fakellm/cmd/fakellm

plugins: $(WASM) ## the WebAssembly plugins named in plugins.yaml

plugins/%.wasm: FORCE
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $@ ./plugins/$*/wasm

sidecar: ## bin/mindrouter-sidecar (needs cgo; only this binary links go-nvml)
	CGO_ENABLED=1 CGO_CFLAGS=-Wno-deprecated-declarations $(GO) build -trimpath -o bin/mindrouter-sidecar ./sidecar/cmd/mindrouter-sidecar

run: gateway plugins ## start the gateway on 127.0.0.1:8080 (CONFIG=file to use a config)
	./bin/mindrouter serve $(if $(CONFIG),--config $(CONFIG),)

# The SDK is its own module (sdk/go.mod): every go command runs for the
# gateway's module and again with -C sdk.
test-deps: ## install the servers the tests start (Redis, MariaDB; Debian packages) when missing
	sh deploy/scripts/test-services.sh

test: plugins tidy-check test-deps ## run every test with and without the race detector, vet, and the CGO-free check
	CGO_ENABLED=0 $(GO) build ./core/... ./sidecar/wire/...
	CGO_ENABLED=0 $(GO) -C sdk build ./...
	GOOS=wasip1 GOARCH=wasm $(GO) build ./plugins/...
	GOOS=wasip1 GOARCH=wasm $(GO) -C sdk build ./...
	mkdir -p .cache && GOOS=wasip1 GOARCH=wasm $(GO) -C sdk build -buildmode=c-shared -o ../.cache/simple.wasm ./examples/simple/wasm && $(GO) run ./core/cmd/mindrouter plugin check --golden sdk/examples/simple/testdata/vectors .cache/simple.wasm
	$(GO) vet ./...
	$(GO) -C sdk vet ./...
	$(GO) -C sdk test -race $(GOFLAGS_TEST) ./...
	$(GO) test -race $(GOFLAGS_TEST) -timeout 30m ./...
	@# Allocation budgets and the plugins' wasm parity tests are built !race
	@# (the race detector changes allocation counts and slows wazero tenfold).
	$(GO) -C sdk test $(GOFLAGS_TEST) ./...
	$(GO) test $(GOFLAGS_TEST) -timeout 20m ./...
	$(MAKE) --no-print-directory matrix

# The end-to-end SDK tests mark the cells they prove (core/internal/matrix);
# the table is written from this run, and a failed cell fails the target.
matrix: plugins test-deps ## docs/conformance.md: client dialect × backend engine, from the SDK tests
	@mkdir -p .cache
	$(GO) test -json -count=1 -run 'SDK_|Raw_' ./core/gateway/ > .cache/matrix.json; st=$$?; \
	  $(GO) run ./core/internal/matrix/cmd/conformance-matrix -o docs/conformance.md < .cache/matrix.json && exit $$st

tidy-check: ## fail when go.mod/go.sum of either module are not tidy
	$(GO) mod tidy -diff
	$(GO) -C sdk mod tidy -diff

test-short: plugins test-deps ## tests without the race detector
	$(GO) -C sdk test $(GOFLAGS_TEST) ./...
	$(GO) test $(GOFLAGS_TEST) ./...

fuzz: ## run each fuzz target for FUZZTIME (default 20s)
	@for pkg in $$($(GO) list ./... github.com/mindrouter/mindrouter/sdk/...); do \
	  for f in $$($(GO) test -list 'Fuzz.*' $$pkg 2>/dev/null | grep ^Fuzz); do \
	    echo "== $$pkg $$f"; $(GO) test -run=^$$ -fuzz=^$$f$$ -fuzztime=$${FUZZTIME:-20s} $$pkg || exit 1; \
	  done; done

bench: plugins ## Go benchmarks of the hot paths
	$(GO) -C sdk test -run=^$$ -bench=. -benchmem ./...
	$(GO) test -run=^$$ -bench=. -benchmem ./core/... ./plugins/...

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')

check: test ## alias of test

clean: ## remove build outputs
	rm -rf bin $(WASM) .cache

FORCE:
