# nri-grpc build entry points. `make help` lists the targets.
#
# Every tool comes from this repository's pins, never from PATH:
#   buf                    tools/package.json (npm, prebuilt binary) -> tools/node_modules
#   protoc-gen-go{,-grpc}  tools/go.mod `tool` directives           -> .tmp/bin
#   protoc-gen-go-vtproto  tools/go.mod                             -> .tmp/bin
#   grpcurl                tools/go.mod (make grpcurl; the tests)    -> .tmp/bin
#   golangci-lint          tools/go.mod `tool` directive             -> .tmp/bin
#   protoc-gen-es          tools/package.json (npm)                  -> tools/node_modules
#   grpcio-tools, pytest   clients/python/requirements-dev.txt (pip, hashes) -> clients/python/.venv
#   tsc, Connect, protobuf-es  clients/typescript/package-lock.json (npm ci) -> clients/typescript/node_modules

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:
.DELETE_ON_ERROR:
# Targets run one at a time: `generate` wipes gen/go (clean: true) while `lint`
# would vet it. Go parallelises inside each command anyway.
.NOTPARALLEL:
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules --no-print-directory
.DEFAULT_GOAL := help

GO ?= go
NPM ?= npm

BIN := $(CURDIR)/.tmp/bin
# tools/ is its own module; never let a future go.work pull it into a workspace.
GO_TOOLS := GOWORK=off $(GO) -C tools

# buf ships as the per-platform npm package (see tools/package.json for why not
# the @bufbuild/buf wrapper): pick the one npm installed for this machine.
UNAME_M := $(shell uname -m)
BUF_ARCH := $(if $(filter aarch64 arm64,$(UNAME_M)),aarch64,x64)
BUF := tools/node_modules/@bufbuild/buf-linux-$(BUF_ARCH)/bin/buf

PROTOC_GEN_GO := $(BIN)/protoc-gen-go
PROTOC_GEN_GO_GRPC := $(BIN)/protoc-gen-go-grpc
PROTOC_GEN_GO_VTPROTO := $(BIN)/protoc-gen-go-vtproto
GRPCURL := $(BIN)/grpcurl
GOLANGCI_LINT := $(BIN)/golangci-lint
TESTSUM := $(BIN)/testsum
HELM := $(BIN)/helm
PLUGINS := $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) $(PROTOC_GEN_GO_VTPROTO)
TOOLS_GO_MOD := tools/go.mod tools/go.sum

# Generated outputs (committed; `make check` fails when they are stale).
GEN_DIR := gen
# Lives in the generated Go package so it can be embedded (nriv1beta1.DescriptorSet):
# reflection then serves the proto comments too.
PROTOSET := $(GEN_DIR)/go/nri/v1beta1/nri.binpb
PROTOSET_GO := $(GEN_DIR)/go/nri/v1beta1/descriptor_set.go

# Python client: generated code, its virtualenv (from the hash-pinned lock
# file; `make python-venv`) and the interpreter that creates it (>= 3.10).
PYTHON ?= python3
PY_DIR := clients/python
PY_VENV := $(PY_DIR)/.venv
PY_STAMP := $(PY_VENV)/.installed
PY_GEN := $(PY_DIR)/src/nri_grpc/gen
# TypeScript client: generated code and its node_modules (npm ci).
TS_DIR := clients/typescript
TS_STAMP := $(TS_DIR)/node_modules/.installed
TS_GEN := $(TS_DIR)/src/gen
# nri.binpb as a module of the TypeScript SDK (for its reflection).
TS_PROTOSET := $(TS_GEN)/nri/v1beta1/descriptor_set.ts
PROTOC_GEN_ES := tools/node_modules/.bin/protoc-gen-es
# Rust crate: its own copy of proto/ (build.rs compiles it), so that the
# packaged crate builds from its directory alone (`make rust-proto`).
RUST_PROTO := clients/rust/proto
# Every committed generated tree `make check` compares.
GEN_TREES := $(GEN_DIR)/ $(PY_GEN)/ $(TS_GEN)/ $(RUST_PROTO)/
# nrid as the Python and TypeScript tests run it (not .tmp/bin/nrid: other
# work may use that one).
CLIENTS_NRID := $(CURDIR)/.tmp/clients/nrid

# Packages tested with the race detector (path prefixes below the module path).
RACE_DIRS := server bridge plugin
# `make breaking BREAKING_AGAINST=main` compares against another ref.
BREAKING_AGAINST ?= HEAD~1

empty :=
space := $(empty) $(empty)

##@ Setup

.PHONY: tools
tools: $(BUF) $(PLUGINS) $(PROTOC_GEN_ES) $(PY_STAMP) $(TESTSUM) $(GOLANGCI_LINT) $(HELM) ## Install buf and protoc-gen-es (npm ci), build the Go protoc plugins, testsum and golangci-lint into .tmp/bin, create the Python venv

# --ignore-scripts: the platform package has no install script to run, and
# npm 11 would only warn about unapproved scripts anyway.
$(BUF): tools/package.json tools/package-lock.json
	$(NPM) ci --prefix tools --ignore-scripts --no-audit --no-fund --loglevel=error
	test -x $@ || { echo "npm ci did not install $@ (unsupported platform $(UNAME_M)?)" >&2; exit 1; }
	touch $@
# protoc-gen-es comes with the same npm ci.
$(PROTOC_GEN_ES): $(BUF)
	@test -x $@ || { echo "npm ci --prefix tools did not install $@" >&2; exit 1; }

# One rule per binary: each is rebuilt only when missing or older than tools/go.mod/go.sum.
$(PROTOC_GEN_GO): $(TOOLS_GO_MOD)
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ google.golang.org/protobuf/cmd/protoc-gen-go
$(PROTOC_GEN_GO_GRPC): $(TOOLS_GO_MOD)
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ google.golang.org/grpc/cmd/protoc-gen-go-grpc
$(PROTOC_GEN_GO_VTPROTO): $(TOOLS_GO_MOD)
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto
$(GRPCURL): $(TOOLS_GO_MOD)
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ github.com/fullstorydev/grpcurl/cmd/grpcurl
# About a minute to build cold on 2 cores (module download included).
$(GOLANGCI_LINT): $(TOOLS_GO_MOD)
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
# testsum: our own summarizer of test runners' output (tools/testsum).
$(TESTSUM): $(TOOLS_GO_MOD) tools/testsum/main.go
	mkdir -p $(@D)
	$(GO_TOOLS) build -o $@ ./testsum

.PHONY: grpcurl
grpcurl: $(GRPCURL) ## Build grpcurl into .tmp/bin (use with -protoset gen/go/nri/v1beta1/nri.binpb)

# The Python virtualenv: the exact versions and hashes of requirements-dev.txt
# (the generator grpcio-tools with the protobuf and grpcio runtimes it goes
# with, and pytest), then the SDK itself, editable, without touching the
# network again. Recreated from scratch whenever the lock file changes.
$(PY_STAMP): $(PY_DIR)/requirements-dev.txt $(PY_DIR)/pyproject.toml
	rm -rf $(PY_VENV)
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "python-venv: $(PYTHON) is older than 3.10 (set PYTHON=)" >&2; exit 1; }
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(PY_DIR)/requirements-dev.txt
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --editable $(PY_DIR)
	touch $@

.PHONY: python-venv
python-venv: $(PY_STAMP) ## Create clients/python/.venv from requirements-dev.txt (generator, runtime, pytest)

$(TS_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	$(NPM) ci --prefix $(TS_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

.PHONY: ts-deps
ts-deps: $(TS_STAMP) ## npm ci in clients/typescript (Connect, protobuf-es, tsc)

# Always rebuilt: go build is incremental, and a stale nrid would test old code.
.PHONY: clients-nrid
clients-nrid:
	@mkdir -p $(dir $(CLIENTS_NRID))
	$(GO) build -o $(CLIENTS_NRID) ./cmd/nrid

# The version stamp of `make build` (internal/version): this checkout's
# commit, whether it has uncommitted changes, and its tag when HEAD is
# tagged. Go records the commit by itself only in a plain clone (not in a git
# worktree, not with -buildvcs=false); the stamp works everywhere. Outside a
# git checkout it stamps nothing.
VERSION_PKG := github.com/nri-grpc/nri-grpc/internal/version
GIT_COMMIT = $(shell git rev-parse HEAD 2>/dev/null || true)
GIT_TAG = $(shell git describe --tags --exact-match HEAD 2>/dev/null || true)
GIT_DIRTY = $(shell if [[ -n "$$(git status --porcelain 2>/dev/null || true)" ]]; then echo true; else echo false; fi)
VERSION_LDFLAGS = $(if $(GIT_COMMIT),-X $(VERSION_PKG).stampCommit=$(GIT_COMMIT) -X $(VERSION_PKG).stampModified=$(GIT_DIRTY)) $(if $(GIT_TAG),-X $(VERSION_PKG).stampVersion=$(GIT_TAG))

.PHONY: build
build: ## Build nrid and nrictl into .tmp/bin, stamped with this checkout's commit, dirty flag and tag (nrid --version)
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/nrid ./cmd/nrictl
	$(BIN)/nrid --version

.PHONY: clean
clean: ## Remove .tmp/, tools/node_modules/ and the clients' venv, node_modules and builds (not the committed generated code)
	rm -rf .tmp tools/node_modules $(PY_VENV) $(TS_DIR)/node_modules $(TS_DIR)/dist $(TS_DIR)/dist-test

##@ Development

# The Rust crate's vendored protos: proto/nri/v1beta1 copied verbatim, the
# tree replaced from scratch (a proto removed upstream goes away here too).
.PHONY: rust-proto
rust-proto: ## Copy proto/nri/v1beta1 into clients/rust/proto (the crate's vendored copy; part of generate)
	@echo "+ rust: copy proto/nri/v1beta1 to $(RUST_PROTO)"
	rm -rf $(RUST_PROTO)
	mkdir -p $(RUST_PROTO)/nri/v1beta1
	cp proto/nri/v1beta1/*.proto $(RUST_PROTO)/nri/v1beta1/

.PHONY: generate
generate: $(BUF) $(PLUGINS) $(PROTOC_GEN_ES) $(PY_STAMP) rust-proto ## Regenerate gen/go (with nri.binpb), the Python and TypeScript clients' gen/ and the Rust crate's proto copy from proto/, from scratch
	@if [[ -z "$$(find proto -name '*.proto' -print -quit 2>/dev/null)" ]]; then
	  echo "generate: no .proto files under proto/, nothing to generate"
	  exit 0
	fi
	echo "+ buf generate"
	$(BUF) generate
	# FileDescriptorSet with imports and source info (comments), no buf image
	# extensions: what `grpcurl -protoset` and protoc's --descriptor_set_in read.
	echo "+ buf build --as-file-descriptor-set -o $(PROTOSET)"
	$(BUF) build --as-file-descriptor-set -o $(PROTOSET)
	printf '%s\n' \
	  '// Code generated by make generate. DO NOT EDIT.' '' \
	  'package nriv1beta1' '' \
	  'import _ "embed"' '' \
	  '// DescriptorSet is the FileDescriptorSet of nri.v1beta1 and its imports,' \
	  '// with source info (the proto comments), as written by' \
	  '// `buf build --as-file-descriptor-set`.' \
	  '//' \
	  '//go:embed nri.binpb' \
	  'var DescriptorSet []byte' > $(PROTOSET_GO)
	# Python: the generated modules import each other as nri.v1beta1.X; they
	# live in the package nri_grpc.gen.nri.v1beta1. protoc has no option for
	# that, so rewrite the imports and add the package files.
	echo "+ python: rewrite imports, add __init__.py under $(PY_GEN)"
	find $(PY_GEN) -type f \( -name '*.py' -o -name '*.pyi' \) -print0 | sort -z | \
	  xargs -0 sed -i -E 's/^from nri\.v1beta1 import /from nri_grpc.gen.nri.v1beta1 import /'
	for d in $(PY_GEN) $(PY_GEN)/nri $(PY_GEN)/nri/v1beta1; do
	  printf '%s\n' '# Code generated by make generate. DO NOT EDIT.' > $$d/__init__.py
	done
	# The descriptor set in the Python and TypeScript SDKs too: their
	# reflection serves it, so grpcurl describes a plugin with the comments
	# (their generated descriptors carry none).
	echo "+ nri.binpb into $(PY_GEN)/nri/v1beta1, $(TS_PROTOSET)"
	cp $(PROTOSET) $(PY_GEN)/nri/v1beta1/nri.binpb
	{
	  printf '%s\n' '// Code generated by make generate. DO NOT EDIT.' '' \
	    '/**' \
	    ' * The FileDescriptorSet of nri.v1beta1 and its imports, with source info' \
	    ' * (the proto comments), base64: gen/go/nri/v1beta1/nri.binpb, as written by' \
	    ' * `buf build --as-file-descriptor-set`. Served by the plugin'"'"'s reflection.' \
	    ' */'
	  printf 'export const descriptorSetBase64 =\n  "%s";\n' "$$(base64 -w0 $(PROTOSET))"
	} > $(TS_PROTOSET)
	echo "generate: done (run 'go mod tidy' if generated code needs new modules)"

.PHONY: fmt
fmt: $(BUF) ## Format protos (buf format -w) and hand-written Go (gofmt -w)
	@$(BUF) format -w
	files="$$($(call hand_written_go))"
	if [[ -n "$$files" ]]; then gofmt -w $$files; fi

.PHONY: lint-go
lint-go: $(GOLANGCI_LINT) ## golangci-lint with .golangci.yml: staticcheck, unused, errcheck, govet, ineffassign, gocyclo, depguard (the package layering)
	@echo "+ golangci-lint run ./..."
	$(GOLANGCI_LINT) run ./...

.PHONY: lint
lint: $(BUF) lint-go ## lint-go, then buf lint, buf format check, gofmt check (excluding gen/), go vet
	@echo "+ buf lint"
	$(BUF) lint
	echo "+ buf format -d --exit-code"
	$(BUF) format -d --exit-code
	echo "+ gofmt -l (hand-written Go)"
	files="$$($(call hand_written_go))"
	if [[ -n "$$files" ]]; then
	  unformatted="$$(gofmt -l $$files)"
	  if [[ -n "$$unformatted" ]]; then
	    echo "gofmt: these files need formatting (run 'make fmt'):" >&2
	    echo "$$unformatted" >&2
	    exit 1
	  fi
	fi
	pkgs="$$($(GO) list ./...)"
	echo "+ go vet ./..."
	if [[ -n "$$pkgs" ]]; then $(GO) vet $$pkgs; else echo "go vet: no Go packages yet"; fi
	echo "+ go vet -tags nri_no_wasm (the build without WASM support)"
	$(GO) vet -tags nri_no_wasm ./wasm/ ./bridge/ ./adaptation/ ./cmd/nrid/
	echo "+ gofmt -l, go vet (tools/testsum)"
	unformatted="$$(gofmt -l tools/testsum)"
	if [[ -n "$$unformatted" ]]; then echo "gofmt: $$unformatted needs formatting" >&2; exit 1; fi
	$(GO_TOOLS) vet ./testsum

.PHONY: breaking
breaking: $(BUF) ## buf breaking against HEAD~1 (skipped when there is no such commit or it has no protos)
	@against='$(BREAKING_AGAINST)'
	if ! git rev-parse --verify --quiet "$$against^{commit}" >/dev/null; then
	  echo "breaking: skipped, '$$against' does not exist here (first commit or shallow clone)"
	  exit 0
	fi
	if [[ -z "$$(git ls-tree -r --name-only "$$against" -- proto | grep '\.proto$$' || true)" ]]; then
	  echo "breaking: skipped, '$$against' has no .proto files under proto/"
	  exit 0
	fi
	# subdir=proto: read the old protos as a module rooted at proto/ even if
	# that commit had no buf.yaml yet; the rules come from the current buf.yaml.
	echo "breaking: comparing proto/ against $$against ($$(git rev-parse --short "$$against"))"
	$(BUF) breaking --against ".git#ref=$$(git rev-parse "$$against"),subdir=proto"

.PHONY: check
check: lint breaking generate chart-check rules-check metrics-doc-check ## lint + breaking + verify committed generated code (gen/, clients' gen/) matches a fresh generate + chart-check + alerting rules (promtool) + metrics reference
	@if ! git diff --exit-code --stat -- $(GEN_TREES); then
	  echo "check: generated code is stale: run 'make generate' and commit the result" >&2
	  exit 1
	fi
	stray="$$(git status --porcelain --untracked-files=all -- $(GEN_TREES))"
	if [[ -n "$$stray" ]]; then
	  echo "check: generated code has uncommitted or untracked files: run 'make generate' and commit them:" >&2
	  echo "$$stray" >&2
	  exit 1
	fi
	echo "check: ok"

# The suites of `make test`, in order. Each writes its counts into
# REPORT_DIR through testsum (tools/testsum); `make test` runs every suite even
# after one failed, then prints one table and fails if any suite failed.
TEST_SUITES := go-test python-test ts-test rust-test sdk-conformance nritest e2e k8s-e2e
REPORT_DIR ?= $(CURDIR)/.tmp/test-report

.PHONY: test
test: $(TESTSUM) ## Run every suite (Go with -race on server/, bridge/, plugin/; Python; TypeScript; Rust; nritest; end to end), then print one summary table
	@rm -rf $(REPORT_DIR)
	mkdir -p $(REPORT_DIR)
	for t in $(TEST_SUITES); do
	  echo "== test $$t"
	  start=$${EPOCHREALTIME/[.,]/}
	  rc=0
	  $(MAKE) --no-print-directory $$t REPORT_DIR=$(REPORT_DIR) || rc=$$?
	  us=$$(( $${EPOCHREALTIME/[.,]/} - start ))
	  secs="$$((us / 1000000)).$$((us / 100000 % 10))"
	  echo "$$rc $$secs $$(cat $(REPORT_DIR)/$$t.note 2>/dev/null || true)" > $(REPORT_DIR)/$$t.result
	  if ((rc != 0)); then echo "== test $$t: FAILED (exit $$rc) after $${secs}s"; else echo "== test $$t: $${secs}s"; fi
	done
	$(TESTSUM) table -dir $(REPORT_DIR) $(TEST_SUITES) | tee $(REPORT_DIR)/summary.txt

# -count=1: a cached pass proves nothing about flakiness.
.PHONY: go-test
go-test: $(GRPCURL) $(TESTSUM) ## Go tests: -race on server/, bridge/ and plugin/, plain go test on the rest; both groups always run
	@export GRPCURL=$(GRPCURL)
	all="$$($(GO) list ./...)"
	mod="$$($(GO) list -m)"
	race_re="^$${mod//./\\.}/($(subst $(space),|,$(RACE_DIRS)))(/|$$)"
	race="$$(grep -E "$$race_re" <<<"$$all" || true)"
	plain="$$(grep -vE "$$race_re" <<<"$$all" || true)"
	echo "test: go test -race ($(RACE_DIRS)), then go test (everything else)"
	{
	  r1=0; r2=0
	  CGO_ENABLED=1 $(GO) test -json -count=1 -race $$race || r1=$$?
	  $(GO) test -json -count=1 $$plain || r2=$$?
	  # Built without WASM support (upstream's tag nri_no_wasm), the
	  # drop-in refuses a WASM module at Start.
	  $(GO) test -json -count=1 -tags nri_no_wasm -run Wasm ./adaptation/ || r2=$$?
	  exit $$((r1 | r2))
	} 2>&1 | $(TESTSUM) go -suite go-test -dir $(REPORT_DIR)

# make stress: the Go suites STRESS_RUNS times with two CPU busy loops beside
# them (a loaded 2-core machine is where timing bugs show). STRESS_TARGET=test
# runs every suite instead. Each run's log and report stay in
# $(REPORT_DIR)/stress-N*; the summary names every test that failed.
STRESS_RUNS ?= 20
STRESS_TARGET ?= go-test

.PHONY: stress
stress: $(GRPCURL) $(TESTSUM) ## Run the Go suites STRESS_RUNS (20) times beside two busy loops; the habit before calling anything stable
	@dir=$(REPORT_DIR)/stress
	rm -rf $$dir
	mkdir -p $$dir
	( while :; do :; done ) & b1=$$!
	( while :; do :; done ) & b2=$$!
	trap 'kill $$b1 $$b2 2>/dev/null || true' EXIT
	echo "stress: $(STRESS_RUNS) runs of make $(STRESS_TARGET), two busy loops (pids $$b1 $$b2) on $$(nproc) cores"
	failed=0
	for i in $$(seq 1 $(STRESS_RUNS)); do
	  start=$${EPOCHREALTIME/[.,]/}
	  rc=0
	  $(MAKE) --no-print-directory $(STRESS_TARGET) REPORT_DIR=$$dir/run-$$i > $$dir/run-$$i.log 2>&1 || rc=$$?
	  us=$$(( $${EPOCHREALTIME/[.,]/} - start ))
	  secs="$$((us / 1000000)).$$((us / 100000 % 10))"
	  if ((rc == 0)); then
	    echo "stress: run $$i/$(STRESS_RUNS): ok ($${secs}s)"
	  else
	    failed=$$((failed + 1))
	    echo "stress: run $$i/$(STRESS_RUNS): FAILED ($${secs}s), log $$dir/run-$$i.log"
	    cat $$dir/run-$$i/*.failures 2>/dev/null | sed 's/^/    /' || true
	  fi
	done
	echo "stress: $$(( $(STRESS_RUNS) - failed )) of $(STRESS_RUNS) runs passed"
	((failed == 0))

# make soak: test/faults' TestSoak for SOAK (a Go duration): a continuous
# lifecycle load, a plugin churning, nrid restarted every 20 s, one sample
# line every 5 s (docs/operations.md, "Soak"). The test timeout is SOAK plus
# 5 minutes: Go adds up the parts of a duration, so -timeout 10m5m is 15m.
SOAK ?= 10m

.PHONY: soak
soak: ## Run the soak for SOAK (10m): lifecycle load, plugin churn, nrid restarts; fails on failed events or growth
	@NRI_SOAK=$(SOAK) $(GO) test -count=1 -run TestSoak -v -timeout $(SOAK)5m ./test/faults/

# make fuzz: server/check's FuzzMergeChecked for FUZZTIME (a Go duration):
# arbitrary plugin responses that server/check accepts must merge
# (server/merge) without panicking into results server/check accepts too. A
# failing input is written to server/check/testdata/fuzz/FuzzMergeChecked/.
FUZZTIME ?= 1m

.PHONY: fuzz
fuzz: ## Fuzz check+merge (server/check FuzzMergeChecked) for FUZZTIME (1m)
	@$(GO) test -run='^$$' -fuzz='^FuzzMergeChecked$$' -fuzztime=$(FUZZTIME) ./server/check/

.PHONY: doctor
doctor: ## Check every tool make test needs; name the install command for each one missing
	@bash tools/doctor.sh

##@ Clients

.PHONY: python-test
python-test: $(PY_STAMP) clients-nrid $(GRPCURL) $(TESTSUM) ## Python SDK tests (pytest) against a real nrid (and grpcurl against its plugins)
	@mkdir -p $(REPORT_DIR)
	rc=0
	(cd $(PY_DIR) && NRID=$(CLIENTS_NRID) GRPCURL=$(GRPCURL) .venv/bin/python -m pytest -q -rs --junitxml=$(REPORT_DIR)/python-test.xml) || rc=$$?
	$(TESTSUM) junit -suite python-test -dir $(REPORT_DIR) $(REPORT_DIR)/python-test.xml || rc=$$((rc | $$?))
	exit $$rc

.PHONY: ts-build
ts-build: $(TS_STAMP) ## Compile the TypeScript SDK (tsc) into clients/typescript/dist
	@$(NPM) run --prefix $(TS_DIR) --silent build

.PHONY: ts-test
ts-test: $(TS_STAMP) clients-nrid $(GRPCURL) $(TESTSUM) ## TypeScript SDK tests (tsc, node --test) against a real nrid (and grpcurl against its plugins)
	@mkdir -p $(REPORT_DIR)
	# What `npm test` runs, with a JUnit report beside the spec output.
	cd $(TS_DIR) && npx --no-install tsc -p tsconfig.json && npx --no-install tsc -p tsconfig.test.json
	rc=0
	NRID=$(CLIENTS_NRID) GRPCURL=$(GRPCURL) node --test --test-concurrency=1 \
	  --test-reporter=spec --test-reporter-destination=stdout \
	  --test-reporter=junit --test-reporter-destination=$(REPORT_DIR)/ts-test.xml \
	  dist-test/test/*.test.js || rc=$$?
	$(TESTSUM) junit -suite ts-test -dir $(REPORT_DIR) $(REPORT_DIR)/ts-test.xml || rc=$$((rc | $$?))
	exit $$rc

CARGO ?= cargo
RUST_DIR := clients/rust

.PHONY: rust-test
# Tests that need root are #[ignore = "needs root: …"]: run as root they are
# included, otherwise the summary lists them as skipped with that reason.
RUST_TEST_ARGS = $(if $(filter 0,$(shell id -u)),-- --include-ignored,)

rust-test: clients-nrid $(GRPCURL) $(TESTSUM) ## Rust SDK: rustfmt check and cargo test against a real nrid (grpcurl against a plugin included)
	@mkdir -p $(REPORT_DIR)
	# The crate builds from its copy of the protos: a stale copy would test
	# another protocol than nrid's (`make check` compares it too).
	if ! diff -r proto/nri/v1beta1 $(RUST_PROTO)/nri/v1beta1 >/dev/null; then
	  echo "rust-test: $(RUST_PROTO) differs from proto/: run 'make rust-proto' (or 'make generate')" >&2
	  exit 1
	fi
	cd $(RUST_DIR)
	$(CARGO) fmt --all --check
	NRID_BIN=$(CLIENTS_NRID) GRPCURL=$(GRPCURL) $(CARGO) test --locked --workspace $(RUST_TEST_ARGS) 2>&1 | $(TESTSUM) cargo -suite rust-test -dir $(REPORT_DIR)

# The conformance scenario catalog (test/conformance) through every SDK: each
# SDK's conformance executor (docs/CONFORMANCE.md) is built, then
# TestSDKConformance runs the catalog once per SDK with the executors' command
# lines in NRI_CONFORMANCE_<LANG>. Plain `go test ./...` skips it (no
# executors). -parallel 2: at most two scenarios (a few processes each) at once.
SDK_EXEC_DIR := $(CURDIR)/.tmp/sdk-conformance
SDK_CONFORMANCE_PARALLEL ?= 2

.PHONY: sdk-conformance-build
sdk-conformance-build: $(PY_STAMP) $(TS_STAMP) ## Build the SDKs' conformance executors (Go, Python venv, TypeScript, Rust)
	@mkdir -p $(SDK_EXEC_DIR)
	$(GO) build -o $(SDK_EXEC_DIR)/go-executor ./test/conformance/executor/go
	(cd $(TS_DIR) && npx --no-install tsc -p tsconfig.json && npx --no-install tsc -p tsconfig.test.json)
	(cd $(RUST_DIR) && $(CARGO) build --locked -p conformance-executor)

.PHONY: sdk-conformance
sdk-conformance: sdk-conformance-build $(TESTSUM) ## The conformance scenarios through the Go, Python, TypeScript and Rust SDKs' executors
	@mkdir -p $(REPORT_DIR)
	export NRI_CONFORMANCE_GO=$(SDK_EXEC_DIR)/go-executor
	export NRI_CONFORMANCE_PYTHON="$(CURDIR)/$(PY_VENV)/bin/python $(CURDIR)/$(PY_DIR)/conformance/executor.py"
	export NRI_CONFORMANCE_TYPESCRIPT="node $(CURDIR)/$(TS_DIR)/dist-test/conformance/executor.js"
	export NRI_CONFORMANCE_RUST=$(CURDIR)/$(RUST_DIR)/target/debug/conformance-executor
	$(GO) test -json -count=1 -timeout 1800s -parallel $(SDK_CONFORMANCE_PARALLEL) -run '^TestSDKConformance$$' ./test/conformance/ 2>&1 \
	  | $(TESTSUM) go -suite sdk-conformance -dir $(REPORT_DIR)

# Checks every package target makes (CI's package stage): the package's own
# copy of LICENSE is the repository's, byte for byte, and its README, which
# the registries (PyPI, npm, crates.io) show out of the repository's context,
# has no relative link. same_license FILE...: each FILE is LICENSE.
# no_relative_links README: each link target (inline, reference-style, HTML
# href/src) has a scheme (https:, mailto:) or is an anchor (#...).
same_license = for f in $(1); do cmp -s LICENSE "$$f" || { echo "$$f is not the repository's LICENSE (cp LICENSE $$f)" >&2; exit 1; }; done
no_relative_links = rel="$$(grep -noE '\]\([^)]*\)|^ {0,3}\[[^]]+\]: *[^ ]+|(href|src)="[^"]*"' $(1) | grep -vE '(\]\(|\]: *|=")([a-zA-Z][a-zA-Z0-9+.-]*:|\#)' || true)"; \
  if [[ -n "$$rel" ]]; then echo "$(1): relative links (they break on the registry's page; link https://github.com/nri-grpc/nri-grpc/blob/main/...):" >&2; echo "$$rel" >&2; exit 1; fi; \
  echo "$(1): no relative link"

# cargo package: the crate as crates.io would get it, verified by building
# it alone from the .crate's contents (target/package/nri-grpc-VERSION),
# with the versions of Cargo.lock; the dependencies' builds in target/ are
# reused. --allow-dirty: it checks the working tree as it is (CI's is a fresh
# clone); `cargo publish` itself still refuses uncommitted changes.
.PHONY: package-rust
package-rust: ## Rust SDK: cargo package, verified (the packaged crate builds alone, from its own files); LICENSE in it, README without relative links
	@$(call same_license,$(RUST_DIR)/LICENSE)
	$(call no_relative_links,$(RUST_DIR)/README.md)
	cd $(RUST_DIR)
	files="$$($(CARGO) package --locked --allow-dirty -p nri-grpc --list)"
	grep -qx LICENSE <<<"$$files" || { echo "package-rust: cargo package --list has no LICENSE:" >&2; echo "$$files" >&2; exit 1; }
	$(CARGO) package --locked --allow-dirty -p nri-grpc
	version="$$(sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n1)"
	crate=target/package/nri-grpc-$$version.crate
	cmp -s $(CURDIR)/LICENSE <(tar -xzOf $$crate nri-grpc-$$version/LICENSE) || { echo "package-rust: $$crate: no LICENSE, or not the repository's" >&2; exit 1; }
	echo "package-rust: $$crate: ok (LICENSE included)"

# Packages of the SDKs, in .tmp/dist, each checked (`make package`; CI's
# package stage). Python: the wheel (pip wheel with the venv's pinned
# setuptools, no build isolation: nothing unpinned is downloaded), installed
# into a fresh venv beside the runtime of requirements.txt (hashes), then
# clients/python/tools/check_wheel.py. TypeScript: npm pack (prepack runs
# tsc on a clean dist/), then clients/typescript/tools/check-pack.mjs.
DIST := $(CURDIR)/.tmp/dist

.PHONY: package
package: package-python package-ts package-rust ## Build and check the Python wheel, the npm tarball (.tmp/dist) and the Rust crate (cargo package)

.PHONY: package-python
package-python: $(PY_STAMP) ## Build the Python SDK's wheel into .tmp/dist/python; install it into a fresh venv and check it
	@rm -rf $(DIST)/python $(PY_DIR)/build
	mkdir -p $(DIST)/python
	$(PY_VENV)/bin/pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w $(DIST)/python ./$(PY_DIR)
	rm -rf $(PY_DIR)/build
	whl="$$(echo $(DIST)/python/nri_grpc-*.whl)"
	echo "package-python: $$whl"
	$(PYTHON) -m venv $(DIST)/python/venv
	$(DIST)/python/venv/bin/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(PY_DIR)/requirements.txt
	$(DIST)/python/venv/bin/pip install --quiet --disable-pip-version-check --no-deps "$$whl"
	$(DIST)/python/venv/bin/pip check --disable-pip-version-check
	cd $(DIST)/python && venv/bin/python -I $(CURDIR)/$(PY_DIR)/tools/check_wheel.py "$$whl"
	cd $(CURDIR)
	# The LICENSE in the wheel (PEP 639: dist-info/licenses/) and in the
	# sdist (built by the venv's setuptools, no isolation, no download).
	$(call same_license,$(PY_DIR)/LICENSE)
	$(call no_relative_links,$(PY_DIR)/README.md)
	(cd $(PY_DIR) && $(CURDIR)/$(PY_VENV)/bin/python -c 'import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])' $(DIST)/python) >/dev/null
	rm -rf $(PY_DIR)/src/*.egg-info
	sdist="$$(echo $(DIST)/python/nri_grpc-*.tar.gz)"
	echo "package-python: $$sdist"
	# (No indented Python here: make strips a recipe line's leading blanks.)
	$(PY_VENV)/bin/python - "$$whl" "$$sdist" LICENSE <<'EOF'
	import sys, tarfile, zipfile
	whl, sdist, lic = sys.argv[1:]
	want = open(lic, "rb").read()
	z = zipfile.ZipFile(whl)
	got = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
	meta = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
	ok = len(got) == 1 and z.read(got[0]) == want and b"License-File: LICENSE" in z.read(meta[0])
	t = tarfile.open(sdist)
	root = t.getnames()[0].split("/")[0]
	ok = ok and root + "/LICENSE" in t.getnames() and t.extractfile(root + "/LICENSE").read() == want
	sys.exit(0 if ok else f"package-python: the wheel ({got}) or the sdist ({sdist}) lacks the repository's LICENSE")
	EOF
	echo "package-python: LICENSE in the wheel and the sdist"

.PHONY: package-ts
package-ts: $(TS_STAMP) ## npm pack the TypeScript SDK into .tmp/dist/typescript; check the tarball's files, install and types
	@rm -rf $(DIST)/typescript $(TS_DIR)/dist
	mkdir -p $(DIST)/typescript
	$(NPM) pack --prefix $(TS_DIR) --silent --pack-destination $(DIST)/typescript ./$(TS_DIR) >/dev/null
	tgz="$$(echo $(DIST)/typescript/*.tgz)"
	echo "package-ts: $$tgz"
	node $(TS_DIR)/tools/check-pack.mjs "$$tgz" $(DIST)/typescript/consumer
	$(call same_license,$(TS_DIR)/LICENSE)
	$(call no_relative_links,$(TS_DIR)/README.md)
	cmp -s LICENSE <(tar -xzOf "$$tgz" package/LICENSE) || { echo "package-ts: $$tgz: no LICENSE, or not the repository's" >&2; exit 1; }
	echo "package-ts: LICENSE in $$(basename $$tgz)"

.PHONY: clients-test
clients-test: python-test ts-test rust-test ## Python, TypeScript and Rust SDK tests against a real nrid

# nrictl new's templates (cmd/nrictl/templates), generated and tested in the
# suites of their SDKs: python-test and ts-test run a test that writes the
# project with nrictl (NRICTL) and runs the project's own tests against a real
# nrid (clients/python/tests/test_scaffold.py,
# clients/typescript/test/scaffold.test.ts); rust-test first runs
# rust-template-test. The Go template: TestNewGo in go test ./cmd/nrictl.
CLIENTS_NRICTL := $(CURDIR)/.tmp/clients/nrictl
TEMPLATE_TEST_DIR := $(CURDIR)/.tmp/template-test

.PHONY: clients-nrictl
clients-nrictl:
	@mkdir -p $(dir $(CLIENTS_NRICTL))
	$(GO) build -o $(CLIENTS_NRICTL) ./cmd/nrictl

python-test ts-test: clients-nrictl
python-test ts-test: export NRICTL = $(CLIENTS_NRICTL)
rust-test: rust-template-test

# The generated crate resolves with clients/rust's Cargo.lock and builds in
# its target directory: the SDK and its dependencies are compiled once for
# both.
.PHONY: rust-template-test
rust-template-test: clients-nrid clients-nrictl ## nrictl new --lang rust: the generated crate passes cargo fmt --check and cargo test (against a real nrid)
	@rm -rf $(TEMPLATE_TEST_DIR)/rust
	$(CLIENTS_NRICTL) new --lang rust --name hello --index 10 --sdk $(CURDIR) $(TEMPLATE_TEST_DIR)/rust
	cp $(RUST_DIR)/Cargo.lock $(TEMPLATE_TEST_DIR)/rust/
	cd $(TEMPLATE_TEST_DIR)/rust
	$(CARGO) fmt --check
	CARGO_TARGET_DIR=$(CURDIR)/$(RUST_DIR)/target NRID_BIN=$(CLIENTS_NRID) $(CARGO) test

##@ nritest

# nritest (cmd/nritest, docs/nritest.md) against the example plugins: the 4
# Go examples and the 3 SDK examples, each launched as nrid launches it
# (with annotations that make each of them adjust: the Rust example reads
# its own keys), then the version matrix and the
# scenario catalog through a real nrid's AdaptationService. Each report is
# kept in NRITEST_REPORTS (table, JSON and JUnit); testsum counts them.
NRITEST := $(BIN)/nritest
NRITEST_REPORTS = $(REPORT_DIR)/nritest
NRITEST_BUILD := .tmp/nritest
NRITEST_ANNOTATIONS := \
  --annotation 'ulimits.noderesource.dev=[{"type":"nofile","soft":1024,"hard":4096}]' \
  --annotation 'env.noderesource.dev={"NRITEST":"1"}' \
  --annotation 'devices.noderesource.dev/container.app=[{"path":"/dev/nritest","type":"c","major":1,"minor":3}]' \
  --annotation 'env.inject.noderesource.dev=NRITEST=1' --annotation 'ulimits.inject.noderesource.dev=nofile=1024:4096'

.PHONY: nritest
nritest: $(PY_STAMP) $(TS_STAMP) $(TESTSUM) clients-nrid ## nritest plugin on the 4 Go and 3 SDK example plugins, nritest matrix, nritest runtime --adaptation against nrid
	@rm -rf $(NRITEST_REPORTS)
	mkdir -p $(NRITEST_REPORTS) $(NRITEST_BUILD)
	$(GO) build -o $(NRITEST) ./cmd/nritest
	$(GO) build -o $(NRITEST_BUILD)/ ./examples/device-injector ./examples/logger ./examples/ulimit-adjuster ./examples/validator
	rc=0
	# An SDK example that does not build fails its check below; the
	# others still run.
	(cd $(TS_DIR) && npx --no-install tsc -p tsconfig.json && npx --no-install tsc -p tsconfig.test.json) || rc=1
	(cd $(RUST_DIR) && $(CARGO) build --locked --quiet -p env-ulimit-injector) || rc=1
	# check NAME CMD...: nritest plugin on CMD, reports NAME.{txt,json,xml}.
	check() {
	  local name=$$1; shift
	  echo "== nritest plugin $$name"
	  $(NRITEST) plugin --name "$$name" --log $(NRITEST_REPORTS)/$$name.log \
	    --json-file $(NRITEST_REPORTS)/$$name.json --junit $(NRITEST_REPORTS)/$$name.xml \
	    $(NRITEST_ANNOTATIONS) -- "$$@" | tee $(NRITEST_REPORTS)/$$name.txt || rc=1
	}
	for e in device-injector logger ulimit-adjuster validator; do check $$e $(NRITEST_BUILD)/$$e; done
	check py-env-ulimit-injector $(PY_VENV)/bin/python $(PY_DIR)/examples/env-ulimit-injector/env_ulimit_injector.py
	check ts-env-ulimit-injector node $(TS_DIR)/dist-test/examples/env-ulimit-injector/main.js
	check rs-env-ulimit-injector $(RUST_DIR)/target/debug/env-ulimit-injector
	echo "== nritest matrix"
	$(NRITEST) matrix --json-file $(NRITEST_REPORTS)/matrix.json --junit $(NRITEST_REPORTS)/matrix.xml | tee $(NRITEST_REPORTS)/matrix.txt || rc=1
	echo "== nritest runtime --adaptation (nrid)"
	$(NRITEST) runtime --nrid $(CLIENTS_NRID) --json-file $(NRITEST_REPORTS)/runtime-adaptation.json \
	  --junit $(NRITEST_REPORTS)/runtime-adaptation.xml | tee $(NRITEST_REPORTS)/runtime-adaptation.txt || rc=1
	$(TESTSUM) junit -suite nritest -dir $(REPORT_DIR) $(NRITEST_REPORTS)/*.xml || rc=$$((rc | $$?))
	exit $$rc

##@ End-to-end

# test/e2e against a real containerd (docs/containerd.md): root only; builds
# containerd into $(E2E_DIR)/cache once (minutes cold, reused after), installs
# runc with apt-get when missing, and cleans up after itself (and after a run
# that was killed). Scratch directory: E2E_DIR (default /tmp/nri-e2e).
E2E_DIR ?= /tmp/nri-e2e
E2E_FLAGS ?=

.PHONY: e2e
e2e: $(TESTSUM) ## End-to-end scenarios against containerd v2.4.2 + runc (root; test/e2e)
	@mkdir -p $(REPORT_DIR)
	if [[ $$(id -u) != 0 ]]; then
	  echo "e2e: skipped: running containerd and runc needs root (CI runs as root)"
	  echo "needs root (containerd and runc); CI runs it as root" > $(REPORT_DIR)/e2e.note
	  exit 0
	fi
	NRI_E2E_DIR=$(E2E_DIR) $(GO) test -json -tags e2e -count=1 -timeout 30m -v -skip '^TestKubernetes$$' $(E2E_FLAGS) ./test/e2e/ 2>&1 | \
	  $(TESTSUM) go -suite e2e -dir $(REPORT_DIR)

# make k8s-e2e: the single-node Kubernetes suite (TestKubernetes in
# test/e2e, k8s_*_test.go): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubelet built from the Go module proxy into
# $(E2E_DIR)/cache once (test/e2e/kubernetes-build.sh, about 11 minutes
# cold), containerd with CNI, nrid's and the example plugin's images (make
# image, make plugin-image) installed with their Helm charts. Root.
.PHONY: k8s-e2e
k8s-e2e: $(TESTSUM) $(HELM) ## Single-node Kubernetes suite: charts installed through a real API server, selectors, rollout restart, Prometheus (root; test/e2e)
	@mkdir -p $(REPORT_DIR)
	if [[ $$(id -u) != 0 ]]; then
	  echo "k8s-e2e: skipped: a kubelet, containerd and runc need root (CI runs as root)"
	  echo "needs root (kubelet, containerd, runc); CI runs it as root" > $(REPORT_DIR)/k8s-e2e.note
	  exit 0
	fi
	NRI_E2E_DIR=$(E2E_DIR) HELM=$(abspath $(HELM)) NRI_K8S_REPORT=$(abspath $(REPORT_DIR))/k8s-e2e.steps \
	  $(GO) test -json -tags e2e -count=1 -timeout 40m -v -run '^TestKubernetes$$' $(E2E_FLAGS) ./test/e2e/ 2>&1 | \
	  $(TESTSUM) go -suite k8s-e2e -dir $(REPORT_DIR)

.PHONY: e2e-bench
e2e-bench: ## Pod+container create-to-running: classic plugin on containerd vs nrid + gRPC plugin
	@NRI_E2E_DIR=$(E2E_DIR) $(GO) test -tags e2e -count=5 -run '^$$' -bench CreateToRunning -benchtime 20x -timeout 60m $(E2E_FLAGS) ./test/e2e/

##@ Image

# The container image, with buildah and no registry (deploy/README.md,
# "Containerfile"): nrid and nrictl built on the host, assembled from
# deploy/Containerfile FROM scratch. Root; buildah is installed with apt-get
# when missing. IMAGE and IMAGE_TAG name it (default localhost/nri-grpc and
# git describe); IMAGE_ISOLATION=chroot and BUILDAH_FLAGS="--storage-driver
# vfs" are for hosts where runc or overlay do not work.
IMAGE ?= localhost/nri-grpc
IMAGE_TAG ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: image
image: ## Build the image IMAGE:IMAGE_TAG with buildah, no registry: static nrid and nrictl from the host, FROM scratch
	@IMAGE='$(IMAGE)' IMAGE_TAG='$(IMAGE_TAG)' GO='$(GO)' bash deploy/image.sh build

.PHONY: image-test
image-test: image ## Build the image, then run it: versions, its nrid.toml, nrid pre-launching the example plugins, nrictl plugins and simulate
	@IMAGE='$(IMAGE)' IMAGE_TAG='$(IMAGE_TAG)' GO='$(GO)' bash deploy/image.sh test

##@ Release

# make release: the binary archives of this checkout (docs/RELEASING.md,
# "Binaries"). For each of RELEASE_ARCHES, static nrid, nrictl and nritest
# (CGO_ENABLED=0, -trimpath, stripped, stamped with the version `git
# describe` gives, the commit and the dirty flag) with LICENSE, README.md and
# CHANGELOG.md in nri-grpc_VERSION_linux_ARCH.tar.gz (reproducible: sorted,
# root-owned, modes 755 and 644, dated at the commit), a CycloneDX 1.5 SBOM of each archive
# (internal/tools/release sbom: every module of every binary, from its build
# information), and SHA256SUMS, in .tmp/release/VERSION/. Then it checks its
# output: each binary a static ELF of its machine (debug/elf), runnable ones
# print the version, each SBOM lists exactly the modules `go version -m`
# lists, the archives hold what they should, and `sha256sum -c SHA256SUMS`.
RELEASE_ARCHES ?= amd64 arm64
RELEASE_CMDS := nrid nrictl nritest
RELEASE_P ?= 2
RELEASE_VERSION = $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
RELEASE_TOOL := $(CURDIR)/.tmp/release/tool/release
GOARCH_HOST = $(shell $(GO) env GOARCH)

.PHONY: release
release: ## Static nrid, nrictl, nritest for linux/amd64 and arm64: archives, SBOMs and SHA256SUMS in .tmp/release/VERSION, checked
	@version='$(RELEASE_VERSION)'
	dir=$(CURDIR)/.tmp/release/$$version
	work=$(CURDIR)/.tmp/release/work
	rm -rf $$dir $$work
	mkdir -p $$dir $$work $(dir $(RELEASE_TOOL))
	for f in LICENSE README.md CHANGELOG.md; do test -f $$f || { echo "release: $$f is missing" >&2; exit 1; }; done
	$(GO) build -o $(RELEASE_TOOL) ./internal/tools/release
	commit="$$(git rev-parse HEAD 2>/dev/null || true)"
	when="$$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)"
	ldflags="-s -w -X $(VERSION_PKG).stampVersion=$$version"
	if [[ -n "$$commit" ]]; then ldflags+=" -X $(VERSION_PKG).stampCommit=$$commit -X $(VERSION_PKG).stampModified=$(GIT_DIRTY)"; fi
	echo "release: $$version ($${commit:-no commit}), $(RELEASE_ARCHES)"
	for arch in $(RELEASE_ARCHES); do
	  name=nri-grpc_$${version}_linux_$$arch
	  stage=$$work/$$name
	  mkdir -p $$stage
	  echo "+ go build ($$arch): $(RELEASE_CMDS)"
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -p $(RELEASE_P) -buildvcs=auto -trimpath \
	    -ldflags "$$ldflags" -o $$stage/ $(addprefix ./cmd/,$(RELEASE_CMDS))
	  cp LICENSE README.md CHANGELOG.md $$stage/
	  bins="$(addprefix $$stage/,$(RELEASE_CMDS))"
	  $(RELEASE_TOOL) check-elf -arch $$arch $$bins
	  if [[ $$arch == $(GOARCH_HOST) ]]; then
	    for b in $$bins; do
	      out="$$($$b --version)"
	      grep -qF "$$version" <<<"$$out" || { echo "release: $$b --version does not say $$version:" >&2; echo "$$out" >&2; exit 1; }
	    done
	    echo "release: $(RELEASE_CMDS) --version: $$version"
	  fi
	  $(RELEASE_TOOL) sbom -o $$dir/$$name.sbom.cdx.json -version "$$version" -time "$$when" $$bins
	  $(GO) version -m $$bins > $$work/$$name.gomod.txt
	  $(RELEASE_TOOL) check-sbom -sbom $$dir/$$name.sbom.cdx.json -gomod $$work/$$name.gomod.txt $$bins
	  tar -C $$work --sort=name --owner=0 --group=0 --numeric-owner --mode=u=rwX,go=rX --mtime="$$when" -cf - $$name | gzip -9n > $$dir/$$name.tar.gz
	  want="$$(printf '%s\n' $$name/ $(addprefix $$name/,$(RELEASE_CMDS) LICENSE README.md CHANGELOG.md) | sort)"
	  got="$$(tar -tzf $$dir/$$name.tar.gz | sort)"
	  [[ "$$got" == "$$want" ]] || { echo "release: $$name.tar.gz holds:" >&2; echo "$$got" >&2; exit 1; }
	  cmp -s LICENSE <(tar -xzOf $$dir/$$name.tar.gz $$name/LICENSE) || { echo "release: $$name.tar.gz: LICENSE differs" >&2; exit 1; }
	done
	cd $$dir
	sha256sum -- *.tar.gz *.sbom.cdx.json > SHA256SUMS
	sha256sum --quiet -c SHA256SUMS
	rm -rf $$work
	echo "release: ok: $$dir"
	ls -l $$dir | tail -n +2

# An example plugin's image (deploy/README.md, "The plugin DaemonSet"):
# examples/$(PLUGIN) and nrictl built static on the host, FROM scratch,
# PLUGIN_IMAGE:IMAGE_TAG. plugin-image-test runs it against nrid from
# IMAGE:IMAGE_TAG as the charts do. image-export writes both images as OCI
# archives into .tmp/image (`ctr -n k8s.io images import FILE`).
PLUGIN ?= ulimit-adjuster
PLUGIN_IMAGE ?= localhost/nri-grpc-$(PLUGIN)
PLUGIN_IMAGE_ENV = IMAGE='$(IMAGE)' IMAGE_TAG='$(IMAGE_TAG)' PLUGIN='$(PLUGIN)' PLUGIN_IMAGE='$(PLUGIN_IMAGE)' GO='$(GO)'

.PHONY: plugin-image
plugin-image: ## Build the example plugin PLUGIN's image (ulimit-adjuster) PLUGIN_IMAGE:IMAGE_TAG with buildah, FROM scratch
	@$(PLUGIN_IMAGE_ENV) bash deploy/image.sh plugin

.PHONY: plugin-image-test
plugin-image-test: image plugin-image ## Build both images, then run the plugin's against nrid's as the charts do: registered, readiness probe, simulate
	@$(PLUGIN_IMAGE_ENV) bash deploy/image.sh plugin-test

.PHONY: image-export
image-export: ## Write IMAGE:IMAGE_TAG and PLUGIN_IMAGE:IMAGE_TAG as OCI archives into .tmp/image/ (for ctr images import)
	@$(PLUGIN_IMAGE_ENV) bash deploy/image.sh export '$(IMAGE):$(IMAGE_TAG)' .tmp/image/nri-grpc.tar
	$(PLUGIN_IMAGE_ENV) bash deploy/image.sh export '$(PLUGIN_IMAGE):$(IMAGE_TAG)' .tmp/image/nri-grpc-$(PLUGIN).tar

##@ Kubernetes

# Helm from the Go module proxy, pinned, with the stamps helm's own Makefile
# sets: its version, and the Kubernetes version `helm template` and
# `helm lint` assume (that of helm's k8s.io/client-go, v0.37: 1.37). About
# 16 minutes cold on a loaded 2-core machine (module download included),
# seconds once built; rebuilt when HELM_VERSION changes.
HELM_VERSION := v3.22.0
HELM_KUBE_MINOR := 37
HELM_STAMP := $(BIN)/.helm-$(HELM_VERSION)
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
  -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_KUBE_MINOR) \
  -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(HELM_KUBE_MINOR)
# The charts, and the raw manifests rendered from them with their defaults.
CHARTS := deploy/helm/nri-grpc deploy/helm/nri-grpc-plugin
MANIFESTS := deploy/kubernetes/nrid.yaml deploy/kubernetes/ulimit-adjuster.yaml

$(HELM): $(HELM_STAMP)
$(HELM_STAMP):
	mkdir -p $(BIN)
	rm -f $(BIN)/.helm-*
	GOWORK=off GOBIN=$(BIN) CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	$(HELM) version --short
	touch $@

.PHONY: helm
helm: $(HELM) ## Build helm (HELM_VERSION) into .tmp/bin

# render_manifests DIR: the raw manifests, from the charts' defaults, in DIR.
define render_manifests
	render() {
	  local out=$$1 release=$$2 chart=$$3 apply=$$4
	  {
	    echo "# Generated by \`make manifests\` from the Helm chart $$chart with its default"
	    echo "# values (helm template $$release $$chart --namespace kube-system)."
	    echo "# Do not edit: change the chart and run \`make manifests\`; \`make check\` fails"
	    echo "# when this file differs from a fresh render. deploy/README.md explains it."
	    echo "#"
	    echo "#   kubectl apply -f $$apply"
	    $(HELM) template "$$release" "$$chart" --namespace kube-system
	  } > "$$out"
	}
	render $(1)/nrid.yaml nrid deploy/helm/nri-grpc deploy/kubernetes/nrid.yaml
	render $(1)/ulimit-adjuster.yaml ulimit-adjuster deploy/helm/nri-grpc-plugin deploy/kubernetes/ulimit-adjuster.yaml
endef

.PHONY: manifests
manifests: $(HELM) ## Render deploy/kubernetes/nrid.yaml and ulimit-adjuster.yaml from the Helm charts (helm template)
	@$(call render_manifests,deploy/kubernetes)
	echo "manifests: wrote $(MANIFESTS)"

.PHONY: chart-check
chart-check: $(HELM) ## helm lint both charts (defaults and ci/*-values.yaml), test their renders (deploy/helm), fail if deploy/kubernetes is stale
	@for c in $(CHARTS); do
	  $(HELM) lint --strict --quiet $$c
	  for v in $$c/ci/*-values.yaml; do $(HELM) lint --strict --quiet $$c --values $$v; done
	done
	echo "+ go test ./deploy/helm (HELM=$(HELM))"
	HELM=$(HELM) $(GO) test -count=1 ./deploy/helm/
	tmp=$$(mktemp -d)
	trap 'rm -rf "$$tmp"' EXIT
	$(call render_manifests,$$tmp)
	for f in $(MANIFESTS); do
	  if ! diff -u "$$f" "$$tmp/$$(basename $$f)"; then
	    echo "chart-check: $$f differs from the charts' render: run 'make manifests' and commit it" >&2
	    exit 1
	  fi
	done
	echo "chart-check: ok"

##@ Observability

# The alerting rules and their unit tests (deploy/prometheus) with promtool,
# and the metrics reference of docs/operations.md generated from the
# metrics package's registry (internal/metrics/cmd/metricsdoc). promtool is
# Debian's (package prometheus, 2.42): deploy/prometheus/promtool.sh takes
# /usr/bin/promtool when installed, else extracts it from the downloaded
# .deb into .tmp/bin (apt-get download: no service installed or started;
# `apt-get update` first when root and the package lists lack it). PROMTOOL=
# names another one.
PROMTOOL ?=
PROM_RULES := deploy/prometheus/nri-grpc-alerts.yaml
PROM_TESTS := $(sort $(wildcard deploy/prometheus/tests/*.yaml))
OPERATIONS_DOC := docs/operations.md

.PHONY: rules-check
rules-check: ## promtool check rules + test rules on deploy/prometheus (promtool from Debian's prometheus .deb, into .tmp/bin when missing)
	@promtool="$$(PROMTOOL='$(PROMTOOL)' BIN='$(BIN)' bash deploy/prometheus/promtool.sh)"
	echo "+ promtool check rules $(PROM_RULES)"
	"$$promtool" check rules $(PROM_RULES)
	echo "+ promtool test rules $(PROM_TESTS)"
	"$$promtool" test rules $(PROM_TESTS)

.PHONY: metrics-doc
metrics-doc: ## Rewrite the metrics reference table in docs/operations.md from the metrics package's registry
	@$(GO) run ./internal/metrics/cmd/metricsdoc -w $(OPERATIONS_DOC)

.PHONY: metrics-doc-check
metrics-doc-check: ## Fail if docs/operations.md's metrics reference is not the generated one, or the rules or the dashboard query a metric nrid does not export (part of check)
	@echo "+ metricsdoc -check $(OPERATIONS_DOC)"
	$(GO) run ./internal/metrics/cmd/metricsdoc -check $(OPERATIONS_DOC)
	echo "+ every metric the alerting rules and the dashboard query is one nrid exports"
	$(GO) test -count=1 -run '^(TestAlertRulesQueryExportedMetrics|TestDashboardQueriesExportedMetrics|TestUnknownMetricsAreCaught)$$' ./internal/metrics/

##@ CI

.PHONY: ci
ci: tools check test ## What .ci/run runs: tools, check, test

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "; printf "Usage: make <target>\n"}
	  /^##@/ {printf "\n%s\n", substr($$0, 5); next}
	  /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# Hand-written Go files: everything except generated code, tools, caches and testdata.
hand_written_go = find . \( -path ./gen -o -path ./.tmp -o -path ./.git -o -path ./tools -o -name node_modules -o -name testdata \) -prune -o -type f -name '*.go' -print
