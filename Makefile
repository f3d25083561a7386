# skiff: build, test and run targets. Uses the machine's cargo and go; downloads nothing else.
# `make help` lists the targets.

CARGO ?= cargo
# kubectl built by testbin/ when present, else the one on PATH.
KUBECTL ?= $(if $(wildcard bin/kubectl),bin/kubectl,kubectl)
CONTAINER_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
IMAGE ?= skiff:latest
# The image's binary: glibc linked statically (static-pie), so it runs in a FROM-scratch image
# with the toolchain already on the machine (no musl target or musl C compiler needed).
STATIC_TARGET := $(shell uname -m)-unknown-linux-gnu
STATIC_BINARY := target/$(STATIC_TARGET)/release/skiff
ARGS ?=

.PHONY: help build test testbin peer lint fmt run bench compare static image deploy demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-8s %s\n", $$1, $$2 }'

build: ## release build of the skiff binary (target/release/skiff)
	$(CARGO) build --release

test: ## unit, integration and e2e tests; SKIFF_SKIP_E2E=1 skips building the control plane and the e2e suite
	@if [ "$${CI:-}" = true ] && [ -n "$${SKIFF_SKIP_E2E:-}" ]; then \
		echo "make test: SKIFF_SKIP_E2E is not allowed in CI"; exit 2; \
	elif [ "$${SKIFF_SKIP_E2E:-}" = 1 ]; then \
		echo "make test: SKIFF_SKIP_E2E=1, e2e suite skipped"; \
	else \
		$(MAKE) testbin static; \
	fi
	$(CARGO) build --example demo
	$(CARGO) test --all-targets

testbin: ## build kube-apiserver, etcd and kubectl into bin/ (only the missing ones)
	testbin/build.sh

lint: ## rustfmt check and clippy with warnings as errors
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt: ## format the code
	$(CARGO) fmt

run: ## run skiff with ARGS, e.g. make run ARGS="--leader-elect --kubeconfig kind.yaml"
	$(CARGO) run -- $(ARGS)

bench: compare ## run the benchmarks (benches/, make compare first) and record the figures in BENCHMARKS.md
	$(CARGO) bench --bench fanout --bench memory

peer: ## build the controller-runtime peer of make compare into bin/skiff-peer (only when missing)
	testbin/peer/build.sh

compare: testbin peer ## skiff beside controller-runtime on a real control plane; rewrites BENCHMARKS.md (~30 min on 2 cores)
	$(CARGO) bench --bench compare

static: ## statically linked release binary for the image (target/<arch>-unknown-linux-gnu/release/skiff)
	RUSTFLAGS="-C target-feature=+crt-static" $(CARGO) build --release --target $(STATIC_TARGET)

image: static ## container image (IMAGE, default skiff:latest) from Containerfile (podman, or docker if podman is absent)
	@command -v $(CONTAINER_TOOL) >/dev/null || { \
		echo "make image: $(CONTAINER_TOOL) not found; install podman (e.g. apt-get install podman)"; exit 1; }
	$(CONTAINER_TOOL) build -f Containerfile --build-arg BINARY=$(STATIC_BINARY) -t $(IMAGE) .
	@$(CONTAINER_TOOL) image inspect $(IMAGE) \
		--format 'make image: $(IMAGE) {{.Size}} bytes, user {{.Config.User}}, entrypoint {{.Config.Entrypoint}}'

deploy: ## apply manifests/ to the cluster of the current kubeconfig
	$(KUBECTL) apply -k manifests/

demo: testbin ## local control plane, two skiff replicas, a Mirror at work, a handover; Ctrl-C stops it
	$(CARGO) build --quiet --bin skiff --example demo
	target/debug/examples/demo target/debug/skiff

clean: ## remove build output and the control-plane binaries
	$(CARGO) clean
	rm -rf bin
