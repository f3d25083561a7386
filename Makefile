# skiff: build, test and run targets. Uses the machine's cargo and go; downloads nothing else.
# `make help` lists the targets.

CARGO ?= cargo
# kubectl built by testbin/ when present, else the one on PATH.
KUBECTL ?= $(if $(wildcard bin/kubectl),bin/kubectl,kubectl)
CONTAINER_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
# The image to build, push and deploy (kubebuilder's name); IMAGE is the older spelling.
IMAGE ?= skiff:latest
IMG ?= $(IMAGE)
# Flags of the deletes in undeploy and uninstall; add --wait=false not to wait for the namespace
# to finish terminating.
DELETE_FLAGS ?= --ignore-not-found
# What `make build-installer` writes: everything `kubectl apply -f` needs, image set to IMG.
INSTALLER ?= dist/install.yaml
# OCI labels of the image: version from Cargo.toml, revision and source from git.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | sed -n 1p)
REVISION := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# (credentials in the remote's URL are dropped, never baked into a label)
IMAGE_SOURCE ?= $(or $(shell git remote get-url origin 2>/dev/null | sed 's|//[^@/]*@|//|'),unknown)
# The image's binary: glibc linked statically (static-pie), so it runs in a FROM-scratch image
# with the toolchain already on the machine (no musl target or musl C compiler needed). Its
# OpenSSL is built by hack/openssl.sh from the openssl-src crate's source (the version Cargo.lock
# pins) with only what skiff uses, once per clone, into the target directory (`make clean`
# removes it); BENCHMARKS.md "Binary size and build cost" says what each step saved. The PIE's
# relative relocations are packed (DT_RELR, glibc 2.36 and binutils 2.38 or later): 0.5 MB less
# than one 24-byte RELA entry per pointer, with the same address randomisation.
STATIC_TARGET := $(shell uname -m)-unknown-linux-gnu
STATIC_BINARY := target/$(STATIC_TARGET)/release/skiff
STATIC_RUSTFLAGS := -C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs
# Ceiling on the static binary's size in bytes (`make size`, run by CI after `make test` built
# it): issue 9's 8 MB. The binary is 6,993,712 bytes (it was 11,173,024 with openssl-src's
# vendored OpenSSL and opt-level 3); the goal is 6 MB (BENCHMARKS.md, "Binary size and build
# cost", says what it is made of and what each step saved).
MAX_BINARY_BYTES ?= 8000000
ARGS ?=
# `make fuzz`: seconds per target (10 minutes each by default), and which targets.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= reply watch connect_reply request_head client_hello kubeconfig proxy

.PHONY: help build test testbin peer lint fmt run bench compare static size docker-build \
	docker-push image install uninstall deploy undeploy build-installer demo clean fuzz

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

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
	$(CARGO) bench --bench fanout --bench memory --bench scale --bench decode

peer: ## build the controller-runtime peer of make compare into bin/skiff-peer (only when missing)
	testbin/peer/build.sh

compare: testbin peer ## skiff beside controller-runtime on a real control plane; rewrites BENCHMARKS.md (about 14 min on 2 cores; COMPARE_SQUEEZE=3m for the longer squeeze, about 24)
	$(CARGO) bench --bench compare

fuzz: ## coverage-guided fuzzing of every parser (fuzz/README.md): FUZZ_SECONDS each (600), FUZZ_TARGETS; installs nightly and cargo-fuzz when missing
	@rustup run nightly rustc --version >/dev/null 2>&1 || { \
		echo "make fuzz: installing the nightly toolchain cargo-fuzz needs"; \
		rustup toolchain install nightly --profile minimal; }
	@command -v cargo-fuzz >/dev/null || { \
		echo "make fuzz: installing cargo-fuzz"; $(CARGO) install cargo-fuzz --locked; }
	@# rustix 0.37 (async-io 1) probes nightly for attributes newer nightlies refuse: libc backend.
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus/$$target && \
		echo "make fuzz: $$target for $(FUZZ_SECONDS) s" && \
		(cd fuzz && RUSTFLAGS="--cfg rustix_use_libc" $(CARGO) +nightly fuzz run $$target \
			corpus/$$target seeds/$$target -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
			-rss_limit_mb=2048 -malloc_limit_mb=64 -print_final_stats=1) || exit 1; \
	done

static: ## statically linked release binary for the image (target/<arch>-unknown-linux-gnu/release/skiff), OpenSSL built from source
	@openssl=$$(CARGO=$(CARGO) hack/openssl.sh) && \
	echo "OPENSSL_DIR=$$openssl OPENSSL_STATIC=1 RUSTFLAGS=\"$(STATIC_RUSTFLAGS)\" $(CARGO) build --release --target $(STATIC_TARGET)" && \
	OPENSSL_DIR=$$openssl OPENSSL_STATIC=1 RUSTFLAGS="$(STATIC_RUSTFLAGS)" \
		$(CARGO) build --release --target $(STATIC_TARGET)

size: ## fail when the static binary (built by `make static`) is larger than MAX_BINARY_BYTES
	@test -f $(STATIC_BINARY) || { echo "make size: $(STATIC_BINARY) missing; run make static first"; exit 1; }
	@size=$$(stat -c %s $(STATIC_BINARY)); \
	if [ "$$size" -gt $(MAX_BINARY_BYTES) ]; then \
		echo "make size: $(STATIC_BINARY) is $$size bytes, over the $(MAX_BINARY_BYTES)-byte ceiling; see BENCHMARKS.md (Binary size) for what it is made of"; exit 1; \
	fi; \
	echo "make size: $(STATIC_BINARY) is $$size bytes (ceiling $(MAX_BINARY_BYTES))"

docker-build: static ## container image IMG (default skiff:latest) from Containerfile, with OCI labels (podman, else docker)
	@command -v $(CONTAINER_TOOL) >/dev/null || { \
		echo "make docker-build: $(CONTAINER_TOOL) not found; install podman (e.g. apt-get install podman)"; exit 1; }
	$(CONTAINER_TOOL) build -f Containerfile --build-arg BINARY=$(STATIC_BINARY) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg SOURCE='$(IMAGE_SOURCE)' -t $(IMG) .
	@$(CONTAINER_TOOL) image inspect $(IMG) \
		--format 'make docker-build: $(IMG) {{.Size}} bytes, user {{.Config.User}}, entrypoint {{.Config.Entrypoint}}, labels {{.Config.Labels}}'

docker-push: ## push IMG to its registry
	$(CONTAINER_TOOL) push $(IMG)

image: docker-build ## the same as docker-build (older name)

install: ## apply the Mirror CRD to the cluster of the current kubeconfig
	$(KUBECTL) apply -f manifests/crd.yaml

uninstall: ## delete the Mirror CRD (and with it every Mirror)
	$(KUBECTL) delete $(DELETE_FLAGS) -f manifests/crd.yaml

deploy: ## apply manifests/ with the Deployment's image set to IMG (tracked files stay unchanged)
	@overlay=$$(mktemp -d) && trap 'rm -rf "$$overlay"' EXIT && \
		hack/image-overlay.sh "$$overlay" '$(IMG)' && \
		echo "$(KUBECTL) apply -k manifests/ (image $(IMG))" && \
		$(KUBECTL) apply -k "$$overlay"

undeploy: ## delete everything deploy created (objects already gone are no error)
	$(KUBECTL) delete $(DELETE_FLAGS) -k manifests/

build-installer: ## write INSTALLER (default dist/install.yaml): manifests/ in one file, image IMG
	@mkdir -p $(dir $(INSTALLER))
	@overlay=$$(mktemp -d) && trap 'rm -rf "$$overlay"' EXIT && \
		hack/image-overlay.sh "$$overlay" '$(IMG)' && \
		$(KUBECTL) kustomize "$$overlay" > '$(INSTALLER)' && \
		echo "make build-installer: wrote $(INSTALLER) (image $(IMG)); kubectl apply -f $(INSTALLER)"

demo: testbin ## local control plane, two skiff replicas, a Mirror at work, a handover; Ctrl-C stops it
	$(CARGO) build --quiet --bin skiff --example demo
	target/debug/examples/demo target/debug/skiff

clean: ## remove build output (the OpenSSL of make static with it) and the control-plane binaries
	$(CARGO) clean
	rm -rf bin
