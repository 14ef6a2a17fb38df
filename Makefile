# Picchu's build. `make test` provisions everything the tests need (Kubernetes
# binaries, controller-gen) under ./bin, once, and runs every test with -race.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

CONTROLLER_TOOLS_VERSION ?= v0.22.0
CONTROLLER_GEN ?= $(CURDIR)/bin/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
IMG ?= ghcr.io/medium/picchu:latest
# -ldflags=-w: test binaries without DWARF link in two thirds of the CPU
# (about 4.5 s less per package with the race detector), and the packages'
# phase is CPU-bound on 2 cores; stack traces and race reports read the
# runtime's own tables, not DWARF.
GO_TEST_FLAGS ?= -race -timeout 40m -ldflags=-w
# Packages tested at once (not the end-to-end tests, which run alone). Most
# of a package's time is spent waiting on API servers and release steps, not
# on the CPU: three at a time on 2 cores.
TEST_PARALLEL ?= 3
# End-to-end tests that share the fleet quietly (quietNeighbour) run at once,
# two at a time: their time is release steps, not CPU. Three at a time took
# 50 s less on 2 cores, but their story's observer then read a phase late
# once in two fresh clones: not yet the default.
E2E_PARALLEL ?= 2
PKGS ?= ./...

# What the targets write stays in the repository, but for Go's own caches:
# envtest's port locks (under XDG_CACHE_HOME), golangci-lint's cache and
# kubectl's go to bin/cache (hack/check-writes.sh checks it). Go's build
# cache is pinned first, as XDG_CACHE_HOME would move it.
GOCACHE := $(or $(GOCACHE),$(shell go env GOCACHE))
export GOCACHE
export XDG_CACHE_HOME := $(CURDIR)/bin/cache
export GOLANGCI_LINT_CACHE := $(CURDIR)/bin/cache/golangci-lint
export KUBECACHEDIR := $(CURDIR)/bin/cache/kube

.PHONY: all
all: build

##@ Development

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-20s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs, RBAC role and webhook configurations under config/.
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true rbac:roleName=picchu webhook paths=./... \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy functions of the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify
verify: manifests generate golangci-lint ## Fail when generated files are stale, a tracked file is binary or over 1 MiB (hack/check-tracked-files.sh), code is unformatted, go vet complains or a lint rule breaks (.golangci.yml: imports of decide/, plan/, fleet/, integrations/ and production code; function size).
	hack/check-tracked-files.sh
	@changed=$$(git status --porcelain -- api config); \
	if [ -n "$$changed" ]; then \
		echo "generated files are stale; run 'make manifests generate' and commit:"; echo "$$changed"; \
		git --no-pager diff --stat -- api config; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-formatted:"; echo "$$unformatted"; exit 1; fi
	hack/go-build.sh "picchu and its tests (go vet)" "-test ./..." go vet -v ./...
	@echo "verify: golangci-lint (.golangci.yml: depguard, gocyclo, funlen)"
	$$(hack/install-golangci-lint.sh) run ./...

.PHONY: golangci-lint
golangci-lint: ## Build golangci-lint, which verify runs, into bin/ (once).
	hack/install-golangci-lint.sh >/dev/null

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and kwokctl into bin/ (once).
	hack/install-k8s-binaries.sh >/dev/null

.PHONY: prometheus-binary
prometheus-binary: ## Provision the Prometheus server the tests run into bin/ (once).
	hack/install-prometheus.sh >/dev/null

.PHONY: alertmanager-binary
alertmanager-binary: ## Provision the Alertmanager the tests run into bin/ (once).
	hack/install-alertmanager.sh >/dev/null

.PHONY: chromium-binary
chromium-binary: ## Provision the headless Chromium the dashboard's browser tests drive into bin/ (once).
	hack/install-chromium.sh >/dev/null

.PHONY: test
test: verify k8s-binaries prometheus-binary alertmanager-binary chromium-binary ## Run every test, with the race detector, against real API servers, Prometheus, Alertmanager and Chromium.
	@echo "test: running every package's tests with the race detector (a line per package as it ends; the first run compiles them first)"
	pkgs=$$(go list $(PKGS) | grep -v /test/e2e$$ | hack/slowest-first.sh || true); [ -z "$$pkgs" ] || \
		KUBEBUILDER_ASSETS=$$(hack/install-k8s-binaries.sh) go test $(GO_TEST_FLAGS) -p $(TEST_PARALLEL) $$pkgs
	@echo "test: the end-to-end tests, alone: beside other packages' API servers, their fleet misses its deadlines on 2 cores"
	e2e=$$(go list $(PKGS) | grep /test/e2e$$ || true); [ -z "$$e2e" ] || \
		KUBEBUILDER_ASSETS=$$(hack/install-k8s-binaries.sh) go test $(GO_TEST_FLAGS) -parallel $(E2E_PARALLEL) $$e2e
	cd test/kubevalidation && go test $(GO_TEST_FLAGS) ./...

FUZZTIME ?= 10m

.PHONY: fuzz
fuzz: ## Play 100 000 random sequences in the release model, then fuzz it and the traffic decision for FUZZTIME each (docs/releasing.md).
	PICCHU_MODEL_SEQUENCES=100000 go test -run '^TestModel_WeightsAreEarned$$' -timeout 3h -count=1 ./controllers/releasemanager/
	go test -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(FUZZTIME) ./controllers/releasemanager/
	go test -run '^$$' -fuzz '^FuzzAllocate$$' -fuzztime $(FUZZTIME) ./decide/release/
	go test -run '^$$' -fuzz '^FuzzAllocateWaves$$' -fuzztime $(FUZZTIME) ./decide/release/

.PHONY: bench
bench: k8s-binaries ## Run the benchmarks.
	KUBEBUILDER_ASSETS=$$(hack/install-k8s-binaries.sh) go test -run '^$$' -bench . -benchmem $(PKGS)

APPS ?= 100
CLUSTERS ?= 3
OPERATOR_ARGS ?=
# OPERATOR_ENV, when set, is environment variables for the operator alone, space-separated (say GOGC=50).
OPERATOR_ENV ?=
# PROFILE, when set, is a directory for the operator's CPU, block and mutex profiles of each release.
PROFILE ?=
# ROUTER, when set, routes the demo's builds with it: istio (their default) or gatewayAPI.
ROUTER ?=

.PHONY: bench-fleet
bench-fleet: k8s-binaries prometheus-binary ## Release APPS apps twice on a kwok fleet of CLUSTERS clusters (delivery included) and print the fleet figures.
	@hack/go-build.sh "the fleet benchmark" "./hack/bench-fleet" go build -v -o bin/picchu-bench-fleet ./hack/bench-fleet
	@bin/picchu-bench-fleet -apps $(APPS) -clusters $(CLUSTERS) -operator-args "$(OPERATOR_ARGS)" -operator-env "$(OPERATOR_ENV)" $(if $(PROFILE),-profile $(PROFILE))

.PHONY: bench-peer
bench-peer: k8s-binaries prometheus-binary ## Release APPS apps with Argo Rollouts (built once from the Go module proxy), then with Picchu on one target, and print both and the ratios.
	@hack/go-build.sh "the fleet benchmark" "./hack/bench-fleet" go build -v -o bin/picchu-bench-fleet ./hack/bench-fleet
	@bin/picchu-bench-fleet -peer -apps $(APPS) -clusters 2 -operator-args "$(OPERATOR_ARGS)" -operator-env "$(OPERATOR_ENV)" $(if $(PROFILE),-profile $(PROFILE))

##@ Local fleet and demo

.PHONY: demo
demo: k8s-binaries prometheus-binary ## Run the demo on a local fleet (starting it if needed): release v1, then v2, then roll back a failing v3 (ROUTER=gatewayAPI routes them with the Gateway API).
	@hack/go-build.sh "the operator" "." go build -v -o bin/picchu .
	@hack/go-build.sh "the kubectl plugin" "./cmd/kubectl-picchu" go build -v -o bin/kubectl-picchu ./cmd/kubectl-picchu
	@hack/go-build.sh "the demo" "./hack/demo" go build -v -o bin/picchu-demo ./hack/demo
	@ROUTER=$(ROUTER) bin/picchu-demo

.PHONY: fleet-up
fleet-up: ## Start the local fleet: kwok clusters delivery, east and west, Prometheus and the mesh.
	hack/fleet.sh up

.PHONY: fleet-down
fleet-down: ## Stop every process of the local fleet and remove .fleet/.
	hack/fleet.sh down

.PHONY: test-e2e
test-e2e: k8s-binaries prometheus-binary ## Run the end-to-end tests on their own local fleet.
	KUBEBUILDER_ASSETS=$$(hack/install-k8s-binaries.sh) go test $(GO_TEST_FLAGS) -parallel $(E2E_PARALLEL) -v ./test/e2e/

##@ Build and run

.PHONY: build
build: ## Build the operator into bin/picchu.
	go build -o bin/picchu .

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-picchu: with bin/ on PATH, `kubectl picchu` runs it.
	go build -o bin/kubectl-picchu ./cmd/kubectl-picchu

NAMESPACES ?= picchu

.PHONY: run
run: build install ## Install the CRDs and run the operator against the current kubeconfig's cluster, without webhooks, for the Clusters and Revisions of NAMESPACES (default picchu).
	bin/picchu --namespaces=$(NAMESPACES) --enable-webhooks=false --metrics-addr 127.0.0.1:8383 --health-probe-bind-address 127.0.0.1:8081

.PHONY: install
install: ## Install the CRDs into the current kubeconfig's cluster (server-side: the Revision CRD is large).
	kubectl apply --server-side -k config/crd

.PHONY: deploy
deploy: ## Deploy the operator with its webhooks into the current kubeconfig's cluster (needs cert-manager, and prometheus-operator's CRDs for its ServiceMonitor: docs/gitops.md).
	kubectl apply --server-side -k config/default

.PHONY: docker-build
docker-build: ## Build the container image.
	docker build -t $(IMG) .

$(CONTROLLER_GEN):
	hack/go-build.sh controller-gen 0 env GOBIN=$(dir $(CONTROLLER_GEN)) go install -v sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
