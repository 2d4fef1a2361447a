# retention-guard — the two commands a newcomer needs:
#   make demo   run the product on embedded defaults
#   make test   run every test (what CI runs through .ci/run)

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
STATICCHECK := $(GO) tool staticcheck
BIN := bin/retention-guard
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/retentionguard/retention-guard/internal/version.Version=$(VERSION)
# Go test flags; CI may add -race or -v.
GOTESTFLAGS ?=

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ The two commands

.PHONY: demo
demo: ## Run the product on embedded defaults (local control plane, broker, manager).
	hack/demo.sh

.PHONY: test
test: deps verify lint test-go test-e2e ## Run every test: generated files, lint, unit, integration (envtest + kfake), end to end.

##@ Pieces of `make test`

.PHONY: deps
deps: ## Install what the tests need that Go does not bring (idempotent).
	hack/install-deps.sh kcat

.PHONY: envtest-assets
envtest-assets: ## Build (or reuse) kube-apiserver, etcd and kubectl; print KUBEBUILDER_ASSETS.
	@dir=$$(hack/build-control-plane.sh); echo "KUBEBUILDER_ASSETS=$$dir"

.PHONY: test-go
test-go: ## Go tests against the real control plane from envtest-assets (all but the end-to-end ones).
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh); \
	$(GO) test $(GOTESTFLAGS) $$($(GO) list ./... | grep -v -e '/test/e2e' -e '/hack/demo$$')

.PHONY: test-e2e
test-e2e: ## End to end: control plane, broker and manager as processes, the chart's RBAC, seeds 003 and 000, faults, the demo (needs kcat: make deps).
	# -count=1: the suites build the binaries they run with `go build`,
	# which Go's test cache cannot see.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh); \
	$(GO) test $(GOTESTFLAGS) -count=1 ./test/e2e/... ./hack/demo

.PHONY: verify
verify: ## Fail when generated files (CRD, RBAC, deepcopy) or formatting are out of date.
	hack/verify.sh

.PHONY: lint
lint: ## go vet and staticcheck.
	$(GO) vet ./...
	$(STATICCHECK) ./...

##@ Generation and build

.PHONY: manifests
manifests: ## Generate the CRD, RBAC and webhook manifests into config/ (and the chart's copies) from kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=retention-guard-manager crd webhook \
	  paths=./api/... paths=./controllers/... paths=./webhook/... \
	  output:crd:artifacts:config=config/crd/bases \
	  output:rbac:artifacts:config=config/rbac \
	  output:webhook:artifacts:config=config/webhook
	hack/chart-crds.sh

.PHONY: chart-crds
chart-crds: ## Copy the generated CRDs, RBAC rules and webhook rules from config/ into charts/retention-guard.
	hack/chart-crds.sh

.PHONY: generate
generate: ## Generate deepcopy functions for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: build
build: ## Build bin/retention-guard.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) .
