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
	hack/install-deps.sh kcat prometheus

.PHONY: envtest-assets
envtest-assets: ## Build (or reuse) kube-apiserver, etcd and kubectl; print KUBEBUILDER_ASSETS.
	@dir=$$(hack/build-control-plane.sh); echo "KUBEBUILDER_ASSETS=$$dir"

.PHONY: test-go
test-go: ## Go tests against the real control plane from envtest-assets (all but the end-to-end ones; the alert tests need promtool: make deps).
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh); \
	$(GO) test $(GOTESTFLAGS) $$($(GO) list ./... | grep -v -e '/test/e2e' -e '/hack/demo$$')

.PHONY: test-e2e
test-e2e: build-e2e ## End to end: control plane, broker, manager and Prometheus as processes, the chart's RBAC and alerts, seeds 003 and 000, faults, the demo (needs kcat and prometheus: make deps).
	# -count=1: the suites run binaries built outside go test, which Go's
	# test cache cannot see. -p 1: each package starts a whole stack.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh) \
	  RETENTION_GUARD_BIN=$(CURDIR)/bin/e2e/retention-guard KAFKA_BROKER_BIN=$(CURDIR)/bin/e2e/kafka-broker; \
	$(GO) test $(GOTESTFLAGS) -count=1 -p 1 ./test/e2e/... ./hack/demo

.PHONY: build-e2e
build-e2e: ## Build the binaries the end-to-end suite and the demo test run (same settings as go test: its build cache serves).
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/e2e/retention-guard .
	$(GO) build -o bin/e2e/kafka-broker ./test/kafka-broker

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
