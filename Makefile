# retention-guard — the two commands a newcomer needs:
#   make demo   run the product on embedded defaults
#   make test   run every test (what CI runs through .ci/run)

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
STATICCHECK := $(GO) tool staticcheck
ACTIONLINT := $(GO) tool actionlint
BIN := bin/retention-guard
# The version is the chart's appVersion: one source of truth for the binary,
# the image tag and the chart (docs/release.md). A release tag is v$(VERSION).
VERSION = $(shell awk '$$1 == "appVersion:" {gsub(/"/, "", $$2); print $$2}' charts/retention-guard/Chart.yaml)
COMMIT = $(shell git rev-parse HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo -dirty)
LDFLAGS = -X github.com/retentionguard/retention-guard/internal/version.Version=$(VERSION) \
  -X github.com/retentionguard/retention-guard/internal/version.Commit=$(COMMIT)
# Go test flags; CI may add -race or -v.
GOTESTFLAGS ?=

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ The two commands

.PHONY: demo
demo: ## Run the product on embedded defaults (local control plane, broker, manager).
	hack/demo.sh

# The real-node tier (test/node) runs a kubelet, containerd and kube-proxy on
# this machine: Linux and root only (CI runs as root). Elsewhere make test
# says it did not run.
NODE_TIER := $(shell [ "$$(uname -s)" = Linux ] && [ "$$(id -u)" = 0 ] && echo yes)

.PHONY: test
test: deps verify lint test-go test-kafka release-rehearsal test-e2e test-node ## Run every test: generated files, lint, unit, integration (envtest + kfake), real Apache Kafka brokers, the release rehearsal, end to end, the real node.

##@ Pieces of `make test`

.PHONY: deps
deps: ## Install what the tests need that Go does not bring (idempotent): kcat, shellcheck for actionlint, PostgreSQL and MariaDB for business cursors, Prometheus and promtool for the alerts, OpenJDK 17 and Maven for the real Kafka brokers; containerd, runc, CNI plugins, iptables, conntrack for the real node (Linux, root).
	hack/install-deps.sh kcat shellcheck postgresql mariadb-server prometheus java $(if $(NODE_TIER),node)

.PHONY: envtest-assets
envtest-assets: ## Build (or reuse) kube-apiserver, etcd and kubectl; print KUBEBUILDER_ASSETS.
	@dir=$$(hack/build-control-plane.sh); echo "KUBEBUILDER_ASSETS=$$dir"

# The packages whose code runs concurrently (observation passes sharing a
# cluster's state, the coalescer, the reconcilers and the gatherer they
# share with the live check, the webhook's handler and readiness wiring,
# the manager) run under the race detector in
# test-go: a data race there is Go's fatal "concurrent map read and map
# write", webhook and reconciler down together. The rest runs without it
# (the cost: docs/benchmarks.md).
RACE_GREP := -e '/retention-guard$$' -e '/internal/kafka$$' -e '/internal/coalesce$$' -e '/internal/heartbeat$$' -e '/internal/shard$$' -e '/internal/gather$$' -e '/controllers$$' -e '/webhook$$'

.PHONY: test-go
test-go: ## Go tests against the real control plane from envtest-assets (all but the end-to-end ones; the alert tests need promtool: make deps); the concurrent packages with -race.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh); \
	pkgs=$$($(GO) list ./... | grep -v -e '/test/e2e' -e '/hack/demo$$' -e '/test/release$$' -e '/test/node$$' -e '/test/node/teardown$$' $(REAL_KAFKA_GREP)); \
	$(GO) test $(GOTESTFLAGS) -timeout 20m -race $$(echo "$$pkgs" | grep $(RACE_GREP)); \
	$(GO) test $(GOTESTFLAGS) -timeout 20m $$(echo "$$pkgs" | grep -v $(RACE_GREP))

# FUZZTIME bounds make fuzz.
FUZZTIME ?= 5m

.PHONY: fuzz
fuzz: ## Fuzz the admission handler with arbitrary AdmissionReview bodies for FUZZTIME (make test runs the seed corpus only).
	$(GO) test -run '^$$' -fuzz '^FuzzAdmissionReview$$' -fuzztime $(FUZZTIME) ./webhook

# Packages that start real Apache Kafka brokers (JVMs): the harness and
# everything under test/realkafka.
REAL_KAFKA_GREP := -e '/internal/kafka/apachekafka$$' -e '/test/realkafka'

.PHONY: kafka-dists
kafka-dists: ## Assemble (or reuse) Apache Kafka 3.9 and 4.x and the Java consumer from Maven Central; print the variables the tests read.
	@hack/build-kafka.sh

.PHONY: test-kafka
test-kafka: ## Real Apache Kafka brokers (3.9 and the newest 4.x, assembled by hack/build-kafka.sh): the semantics the proof relies on, real clients, the product end to end, the broker-in-the-loop oracle.
	# -count=1: the brokers and the Java consumer are built outside go
	# test's cache. -p 4: the packages mostly wait on the brokers' clocks
	# (retention and offset expiry in seconds to a minute), so four run
	# side by side on two cores; each starts its own JVMs.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh) $$(hack/build-kafka.sh) \
	  RETENTION_GUARD_BIN=$(CURDIR)/bin/e2e/retention-guard; \
	$(MAKE) --no-print-directory build-e2e >/dev/null; \
	$(GO) test $(GOTESTFLAGS) -count=1 -p 4 -timeout 30m $$($(GO) list ./... | grep $(REAL_KAFKA_GREP))

.PHONY: release-rehearsal
release-rehearsal: ## The release on loopback: push the image (+SBOM) and the chart to an in-process registry, then pull and run them as a user.
	# -count=1: the image's binaries are built by `go build`, outside go
	# test's cache. Go's build cache keeps the rebuild cheap.
	$(GO) test $(GOTESTFLAGS) -count=1 -v -run TestReleaseRehearsal ./test/release

.PHONY: test-e2e
test-e2e: build-e2e ## End to end: control plane, broker, manager and Prometheus as processes, the chart's RBAC and alerts, seeds 003 and 000, faults, the demo (needs kcat and prometheus: make deps).
	# -count=1: the suites run binaries built outside go test, which Go's
	# test cache cannot see. -p 1: each package starts a whole stack.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh) \
	  RETENTION_GUARD_BIN=$(CURDIR)/bin/e2e/retention-guard KAFKA_BROKER_BIN=$(CURDIR)/bin/e2e/kafka-broker; \
	$(GO) test $(GOTESTFLAGS) -count=1 -p 1 ./test/e2e/... ./hack/demo

.PHONY: test-node
test-node: ## The real node (Linux, root): a kubelet node on this machine, helm install and helm test, seeds 003 and 000 with real consumer pods, faults, adoption (scan maps groups to Deployments, a StatefulSet, a parked CronJob and a real Argo Rollout), teardown leaving the machine as it was.
ifeq ($(NODE_TIER),yes)
	$(MAKE) --no-print-directory build-node-tools
	# -count=1: images and binaries are built outside go test's cache.
	# -p 1: one node per machine (the packages would wait on its lock).
	# -v: the tier prints what it measured (docs/benchmarks.md) and each
	# scenario's story.
	export RETENTION_GUARD_NODE_TESTS=1 RETENTION_GUARD_NODE_ASSETS=$$(hack/build-node.sh) \
	  ARGO_ROLLOUTS_DIR=$$(hack/build-argo-rollouts.sh) \
	  HELM_BIN=$(CURDIR)/bin/node/helm KAFKA_BROKER_BIN=$(CURDIR)/bin/node/kafka-broker \
	  RETENTION_GUARD_BIN=$(CURDIR)/bin/node/retention-guard; \
	$(GO) test $(GOTESTFLAGS) -v -count=1 -p 1 -timeout 45m ./test/node/...
else
	@echo "test-node: NOT RUN — the real-node tier needs Linux and root (this is $$(uname -s), uid $$(id -u)): it runs a kubelet, containerd and kube-proxy on this machine. CI runs it as root; on a Linux machine run sudo make test-node."
endif

.PHONY: build-node-tools
build-node-tools: ## Build the node's Kubernetes binaries (hack/build-node.sh, cached by version), Argo Rollouts' controller (hack/build-argo-rollouts.sh, cached by version), Helm's CLI, the Kafka broker and the retention-guard CLI for test-node.
	hack/build-node.sh >/dev/null
	hack/build-argo-rollouts.sh >/dev/null
	$(GO) build -o bin/node/helm helm.sh/helm/v4/cmd/helm
	$(GO) build -o bin/node/kafka-broker ./test/kafka-broker
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/node/retention-guard .

.PHONY: build-e2e
build-e2e: ## Build the binaries the end-to-end suite and the demo test run (same settings as go test: its build cache serves).
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/e2e/retention-guard .
	$(GO) build -o bin/e2e/kafka-broker ./test/kafka-broker

.PHONY: verify
verify: ## Fail when generated files (CRD, RBAC, deepcopy, the chart's schema and README, the package graph in docs/architecture.md) or formatting are out of date.
	hack/verify.sh

.PHONY: lint
lint: ## go vet, staticcheck, and actionlint on the GitHub workflows.
	$(GO) vet ./...
	$(STATICCHECK) ./...
	@command -v shellcheck >/dev/null || { echo "lint: shellcheck is missing (make deps installs it); actionlint checks the workflows' scripts with it"; exit 1; }
	$(ACTIONLINT) -no-color

##@ Measurements (not part of `make test`; docs/benchmarks.md)

# make oracle's run: how many seeded trials, from which seed, how many at
# once (make test runs TestOracle's default: 6 trials of seed 1, less
# trial 2, which draws a diverged log; TestOracleKinds runs the first trial
# of seed 1 drawing each kind with a cluster of its own on each line:
# trials 2, 6, 27, 50, 63 and 91, e.g. make oracle ORACLE_SEED=1
# ORACLE_TRIALS=92 ORACLE_TRIAL=2,6,27,50,63,91).
ORACLE_TRIALS ?= 200
ORACLE_SEED ?= 1
ORACLE_PARALLEL ?= 10

.PHONY: oracle
oracle: ## Reality as the oracle, long run: ORACLE_TRIALS scenarios from ORACLE_SEED on real brokers, each verdict held to what the Java consumer read after the window (docs/benchmarks.md). About 18 minutes per 240 trials (every clock and segment.bytes scaled, issue 32).
	# -count=1: the brokers and the Java consumer are built outside go
	# test's cache. -v: every trial's scenario and outcome, then the counts.
	export $$(hack/build-kafka.sh) ORACLE_TRIALS=$(ORACLE_TRIALS) ORACLE_SEED=$(ORACLE_SEED) ORACLE_PARALLEL=$(ORACLE_PARALLEL); \
	$(GO) test $(GOTESTFLAGS) -count=1 -v -timeout 0 -run 'TestOracle$$' ./test/realkafka/oracle

# Flags for bench-scale, e.g. BENCH_SCALE_FLAGS="-scale 0.05 -steady 2m".
BENCH_SCALE_FLAGS ?=

.PHONY: bench-scale
bench-scale: build-e2e ## Measure the manager in a large cluster (steps up to 20,000 policies, 3 Kafka clusters, 35,000 other objects): memory, time to prove, CPU, Kafka requests, API writes, admission p99. About 25 minutes to 5,000 policies, more with the 20,000 step.
	export KUBEBUILDER_ASSETS=$$(hack/build-control-plane.sh) \
	  RETENTION_GUARD_BIN=$(CURDIR)/bin/e2e/retention-guard KAFKA_BROKER_BIN=$(CURDIR)/bin/e2e/kafka-broker; \
	$(GO) run ./test/scale $(BENCH_SCALE_FLAGS)

# Flags for bench-offsets, e.g. BENCH_OFFSETS_FLAGS="-size 50e6 -follow 500 -steady 1".
BENCH_OFFSETS_FLAGS ?=

.PHONY: bench-offsets
bench-offsets: ## Measure reading __consumer_offsets on a real broker (issue 32): 20,000 groups x 24 partitions committing until the topic holds 500 MB, then catch-up time and memory after a restart and the steady cost per pass for 5,000 and 20,000 policies, read on and off; -kafka 3.9 for the other line. About 10 minutes on 2 loaded cores.
	export $$(hack/build-kafka.sh); \
	$(GO) run ./test/offsetsload $(BENCH_OFFSETS_FLAGS)

##@ Generation and build

.PHONY: manifests
manifests: ## Generate the CRD, RBAC and webhook manifests into config/ (and the chart's copies) from kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=retention-guard-manager crd webhook \
	  paths=./api/... paths=./controllers/... paths=./webhook/... \
	  output:crd:artifacts:config=config/crd/bases \
	  output:rbac:artifacts:config=config/rbac \
	  output:webhook:artifacts:config=config/webhook
	hack/chart-crds.sh

.PHONY: chart-docs
chart-docs: ## Generate the chart's values.schema.json and README.md (through README.md.gotmpl) from the comments of its values.yaml (hack/chartschema).
	$(GO) run ./hack/chartschema -values charts/retention-guard/values.yaml -out charts/retention-guard/values.schema.json \
		-chart charts/retention-guard/Chart.yaml -readme-template charts/retention-guard/README.md.gotmpl -readme charts/retention-guard/README.md

.PHONY: arch-graph
arch-graph: ## Draw the package imports as a Mermaid graph in docs/architecture.md (hack/archgraph.sh, from go list -deps).
	hack/archgraph.sh

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

##@ Release (docs/release.md)

.PHONY: image
image: ## Build the image index (linux/amd64, linux/arm64) without a container engine into bin/image (OCI layout), reproducibly.
	$(GO) run ./hack/image -out bin/image -digest-file bin/image.digests

.PHONY: image-archive
image-archive: ## Build the image; write this machine's platform as an OCI archive bin/retention-guard-image.tar (ctr -n k8s.io images import).
	$(GO) run ./hack/image -out bin/image -digest-file bin/image.digests -archive bin/retention-guard-image.tar

.PHONY: dist
dist: ## Build retention-guard for linux and darwin (amd64, arm64) as .tar.gz archives with SHA-256 checksums into dist/.
	rm -rf dist
	$(GO) run ./hack/dist -out dist

.PHONY: chart
chart: image ## Package the chart with the image pinned by the digest of bin/image into bin/chart.
	$(GO) run ./hack/chart package -digest $$(sed -n 's/^index=//p' bin/image.digests) -out bin/chart
