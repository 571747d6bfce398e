# gitops-service: a sidecar that gives Argo CD the GitOps Service API.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := build

BIN            := bin
CACHE          ?= $(or $(GITOPS_SERVICE_CACHE),$(HOME)/.cache/gitops-service)
CONTROLLER_GEN_VERSION := v0.16.5
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
export GITOPS_SERVICE_CACHE := $(CACHE)
# The Argo CD version the stack, `make demo` and `make bench` run (3.5.1 or 2.14.21).
ARGOCD_VERSION ?= 3.5.1
export ARGOCD_VERSION

# The version stamped into the binaries: `git describe --tags --always --dirty`, or dev
# (override with VERSION=...); see hack/ldflags.sh.
VERSION  ?=
REVISION ?=
STAMP    = VERSION='$(VERSION)' REVISION='$(REVISION)' hack/ldflags.sh
LDFLAGS  = $(shell $(STAMP))

# `make image`: the sidecar's OCI image, built in Go (hack/image), no Docker. IMAGE=registry/name:tag
# names it and writes bin/image/install/kustomization.yaml, manifests/install with that image (untracked:
# building never edits a tracked file, so the next build is not stamped -dirty); PUSH=1 pushes it with
# ~/.docker/config.json's credentials. Your own overlay: `kustomize edit set image gitops-service=<IMAGE>`.
IMAGE      ?=
PUSH       ?=
IMAGE_DIR  ?= $(BIN)/image
IMAGE_ARCH ?= $(shell go env GOARCH)
IMAGE_KUSTOMIZATION ?= $(abspath $(IMAGE_DIR))/install/kustomization.yaml

.PHONY: image
image: ## Build the sidecar's image into bin/image (OCI layout + tarball); IMAGE=reg/name:tag writes bin/image/install (manifests/install with it), PUSH=1 pushes.
	@if [ -n '$(IMAGE)' ] && [ ! -f '$(IMAGE_KUSTOMIZATION)' ]; then mkdir -p '$(dir $(IMAGE_KUSTOMIZATION))' && \
		printf '# Written by `make image IMAGE=...`: manifests/install with the image built (kubectl apply --server-side -k %s).\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\n' \
		'$(dir $(IMAGE_KUSTOMIZATION))' "$$(realpath --relative-to='$(dir $(IMAGE_KUSTOMIZATION))' manifests/install)" > '$(IMAGE_KUSTOMIZATION)'; fi
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) go build -trimpath -ldflags '-s -w $(LDFLAGS)' -o $(IMAGE_DIR)/gitops-service ./extension
	go -C hack/image run . -binary $(abspath $(IMAGE_DIR))/gitops-service -out $(abspath $(IMAGE_DIR)) \
		-version '$(shell $(STAMP) version)' -revision '$(shell $(STAMP) revision)' -arch $(IMAGE_ARCH) \
		$(if $(IMAGE),-image '$(IMAGE)' -kustomization $(IMAGE_KUSTOMIZATION)) $(if $(filter 1 true yes,$(PUSH)),-push)

# `make release VERSION=vX.Y.Z`: tag-driven (VERSION defaults to HEAD's tag), everything a
# platform installs a release from into bin/release/<version>/ (docs/release.md);
# RELEASE_IMAGE=registry/name, PUSH=1 pushes, RELEASE_URL=where its files are published.
.PHONY: release
release: ## Build a release into bin/release/<version>: image (+ push with PUSH=1), pinned manifests, Helm/ArgoCD snippets, UI tarball, SBOM, CHANGELOG entry.
	VERSION='$(VERSION)' hack/release.sh

.PHONY: build
build: ## Build the sidecar (bin/gitops-service) and the CLI (bin/argocd-gitops, bin/kubectl-gitops).
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/gitops-service ./extension
	go build -ldflags '$(LDFLAGS)' -o $(BIN)/argocd-gitops ./extension/cli
	ln -sf argocd-gitops $(BIN)/kubectl-gitops

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(CURDIR)/$(BIN)/.tmp-cg go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/.tmp-cg/controller-gen $@ && rm -rf $(BIN)/.tmp-cg

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(CURDIR)/$(BIN)/.tmp-sc go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/.tmp-sc/staticcheck $@ && rm -rf $(BIN)/.tmp-sc

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
# The namespace provisioner's rights (namespaces, ServiceAccounts, RoleBindings
# with bind, quotas) are their own ClusterRole, installed by the opt-in
# component manifests/install/components/namespace-provisioner; the main
# ClusterRole is generated from every other package's markers.
PROVISIONER_PKG = reconcilers/provisioner/namespace
MAIN_RBAC_PKGS = $(filter-out %/$(PROVISIONER_PKG),$(shell go list ./reconcilers/... ./extension/...))

manifests: $(CONTROLLER_GEN) ## Regenerate CRDs and RBAC from markers.
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false paths=./api/... output:crd:artifacts:config=manifests/crd
	hack/crd-kustomization.sh manifests/crd
	$(CONTROLLER_GEN) rbac:roleName=gitops-service $(foreach p,$(MAIN_RBAC_PKGS),paths=$(p)) output:rbac:artifacts:config=manifests/rbac
	$(CONTROLLER_GEN) rbac:roleName=gitops-service-namespace-provisioner paths=./$(PROVISIONER_PKG) output:rbac:artifacts:config=manifests/rbac/namespace-provisioner
	go run ./hack/healthlua reconcilers/argocdsettings/health

.PHONY: docs
docs: ## Regenerate docs/flags.md (the sidecar's flag reference) from its --help.
	@mkdir -p $(BIN)
	go build -o $(BIN)/.flagsdoc-sidecar ./extension
	go run ./hack/flagsdoc $(BIN)/.flagsdoc-sidecar > docs/flags.md

.PHONY: ui-extension
ui-extension: ## Copy the panel's JavaScript into manifests/install/components/ui-extension (the air-gapped install; components/operator includes it).
	cp extension/ui/extension-gitops-service.js manifests/install/components/ui-extension/

.PHONY: ui-extension-tarball
ui-extension-tarball: ## Pack the panel for argocd-extension-installer: bin/ui-extension/extension-gitops-service-<version>.tar.gz and checksums.txt (publish both at components/ui-extension-installer's EXTENSION_URL).
	go run ./hack/uiextension -version "$$($(STAMP) version)" -out $(BIN)/ui-extension

.PHONY: verify
verify: generate manifests docs ui-extension $(STATICCHECK) ## Fail if generated files are stale or gofmt, go vet or staticcheck complain.
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above"; exit 1)
	# One vet pass: no file is built only with the unit tag (the API-server tests are
	# `//go:build !unit`), so `go vet -tags unit` checked a subset of this one.
	@! grep -rl --include='*.go' '^//go:build unit' . || (echo "files built only with -tags unit: add 'go vet -tags unit ./...' back to verify"; exit 1)
	go vet ./...
	$(STATICCHECK) ./...
	cd hack/image && go vet ./... && $(CURDIR)/$(STATICCHECK) ./...
	@git diff --exit-code -- api manifests docs/flags.md reconcilers/argocdsettings/health || (echo "generated files are stale: run 'make generate manifests docs ui-extension' and commit"; exit 1)

.PHONY: deps
deps: ## Install apt packages the test stack needs (etcd, redis, git).
	hack/install-deps.sh

.PHONY: test-stack
test-stack: ## Build kube-apiserver, kube-controller-manager, kubectl, Argo CD into $(CACHE).
	hack/test-stack.sh

.PHONY: unit
unit: ## Pure unit tests (no servers): every package's tests but the files tagged `//go:build !unit`, which need the real API server.
	go test -tags unit ./api/... ./reconcilers/... ./applicationset-generator/... ./ui-proxy/... ./extension/... ./test/argocdhealth/

# The end-to-end tests that also run on Argo CD 2.14.21 (all of them run on 3.5.1): the core of
# every API within CI's time budget; `make test E2E_RUN_2_14=.` runs all of them on 2.14 too.
E2E_RUN_2_14 ?= TestAutomatedDeploysAndFollowsPushes|TestBindingsOfTwoTenantsWithTheSameNames|TestManualStaysOutOfSync|TestDeleteWithFinalizerRemovesResourcesFirst|TestSyncRunDeploysHeadThenAnOlderRevision|TestSyncRunDeletedWhileRunningTerminatesTheSync|TestBindingDeploysSnapshotWithConfiguration|TestPromotionRuns|TestTenantsInArgoCD|TestUIPanelThroughArgoCDServer|TestUIPanelInTheBrowser|TestResourceHealthWithDefaultArgoCDSettings|TestManagedEnvironmentDeploysToRemoteCluster|TestGatedPromotion|TestPromotionPreviewAgainstTheLiveCluster|TestPrivateRepositoryStaysPrivateOnceArgoCDHasCheckedItOut

.PHONY: test
test: ## Everything: the stack (built beside the rest when not cached), verify, unit, real API server, real Argo CD (3.5.1, then 2.14.21) end to end; e2e beside the other packages (hack/test.sh).
	E2E_RUN_2_14='$(E2E_RUN_2_14)' hack/test.sh

.PHONY: chaos
chaos: test-stack ## Run the chaos suite RUNS times (default 10), PARALLEL at a time (default 1), N deployments each (default 100); print the pass rate.
	RUNS=$(or $(RUNS),10) PARALLEL=$(or $(PARALLEL),1) N=$(or $(N),100) hack/chaos.sh

.PHONY: bench
bench: test-stack ## Benchmark the reconcilers against a real API server (N, M tunable, each benchmark has its defaults; BENCH=Sidecar|Generator|Claims|Peer|Bindings|Preview|Policy|Signatures|ClaimWrites picks one; BENCH_TIMEOUT, default 60m: Bindings at N=300 took 29 min on the quiet 2-core machine, N=1000 needs more).
	GITOPS_SERVICE_REQUIRE_STACK=1 go test -count=1 -timeout $(or $(BENCH_TIMEOUT),60m) -run '^$$' -bench '$(or $(BENCH),.)' -benchtime 1x ./test/bench/... -args $(if $(N),-n=$(N)) $(if $(M),-m=$(M))

.PHONY: demo
demo: test-stack build ## Start a local Kubernetes + Argo CD, install everything, deploy the samples.
	hack/demo.sh

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'
