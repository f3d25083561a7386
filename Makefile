# skiff: build, test and run targets. Uses the machine's cargo and go; downloads nothing else.
# `make help` lists the targets.

CARGO ?= cargo
# kubectl built by testbin/ when present, else the one on PATH.
KUBECTL ?= $(if $(wildcard bin/kubectl),bin/kubectl,kubectl)
CONTAINER_TOOL ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
# The image to build, push and deploy (kubebuilder's name); IMAGE is the older spelling. Its tag
# is skiff's version, as the chart's appVersion and dist/install.yaml have it.
IMAGE ?= skiff:$(VERSION)
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
# removes it; a cache outside the clone keeps a copy); docs/benchmarks-history.md, "Binary size
# and build cost", says what each step saved. The PIE's relative relocations are packed (DT_RELR,
# glibc 2.36 and binutils 2.38 or later) instead of one 24-byte RELA entry per pointer, with the
# same address randomisation. Identical
# functions and constants are folded into one by the linker (LLD's --icf=all).
# STATIC_TARGET=aarch64-unknown-linux-gnu (make static-arm64) cross-compiles, linking with
# Debian's cross gcc and its glibc (hack/cross-tools.sh installs them); Rust's aarch64 target
# links a static executable there, not a static PIE. A cross build has a target directory of
# its own, target/cross: cargo holds the host's build directory for as long as a build runs,
# so one in target/ would block every other build of the machine's own (CI builds arm64 while
# the tests run).
HOST_ARCH := $(shell uname -m)
STATIC_TARGET := $(HOST_ARCH)-unknown-linux-gnu
STATIC_ARCH := $(firstword $(subst -, ,$(STATIC_TARGET)))
STATIC_DIR := $(if $(filter $(HOST_ARCH),$(STATIC_ARCH)),target,target/cross)
STATIC_BINARY := $(STATIC_DIR)/$(STATIC_TARGET)/release/skiff
STATIC_RUSTFLAGS := -C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs -C link-arg=-Wl,--icf=all
STATIC_CROSS := $(if $(filter target,$(STATIC_DIR)),,CARGO_TARGET_DIR=$(STATIC_DIR) CARGO_TARGET_$(shell echo '$(STATIC_TARGET)' | tr a-z- A-Z_)_LINKER=$(STATIC_ARCH)-linux-gnu-gcc)
# The cross gcc links with the LLD that rustc ships (its gcc-ld wrapper), as rustc links
# x86_64 Linux binaries by default, so the linker options of STATIC_RUSTFLAGS hold for both
# (Debian's aarch64 GNU ld 2.40 ignores -z pack-relative-relocs with a warning).
RUST_GCC_LD = $(shell rustc --print sysroot)/lib/rustlib/$(shell rustc -vV | sed -n 's/^host: //p')/bin/gcc-ld
STATIC_CROSS_RUSTFLAGS = $(if $(STATIC_CROSS),-C link-arg=-fuse-ld=lld -C link-arg=-B$(RUST_GCC_LD))
# The software bill of materials of the static binary (hack/sbom.sh), shipped beside its image.
STATIC_SBOM = skiff-$(VERSION)-$(STATIC_TARGET).spdx.json
# The platforms of the image index (make docker-buildx) and of the binaries make size checks,
# kubebuilder's name: linux/amd64 is built as x86_64-unknown-linux-gnu, linux/arm64 as
# aarch64-unknown-linux-gnu.
PLATFORMS ?= linux/amd64,linux/arm64
comma := ,
PLATFORM_TARGETS = $(patsubst linux/amd64,x86_64-unknown-linux-gnu,$(patsubst linux/arm64,aarch64-unknown-linux-gnu,$(subst $(comma), ,$(PLATFORMS))))
# Ceiling on each platform's image (make docker-buildx): one file, the static binary.
MAX_IMAGE_BYTES ?= 7500000
# Build output besides target/: dist/install.yaml, the chart archive, SBOMs and the OCI layout.
DIST ?= dist
# Helm built by testbin/ when present, else the one on PATH.
HELM ?= $(if $(wildcard bin/helm),bin/helm,helm)
# Ceiling on each platform's static binary in bytes (`make size`, run by CI after the tests
# built them); what the binaries weigh and why is in docs/benchmarks-history.md, "Binary size and build cost".
# 7.0 MB is this round's budget for all of its work (the kind table, across clusters,
# projections): 6,454,520 bytes on amd64 before it.
MAX_BINARY_BYTES ?= 7000000
ARGS ?=
# `make fuzz`: seconds per target (10 minutes each by default), and which targets.
FUZZ_SECONDS ?= 600
# What `make lint` runs for clippy; empty leaves it out (CI lints in make test's build instead).
# In a target directory of its own: a check build shares nothing with the test builds, and this
# way neither waits for the other's lock.
CLIPPY ?= CARGO_TARGET_DIR=$${CARGO_TARGET_DIR:-target}/lint $(CARGO) clippy --all-targets -- -D warnings
FUZZ_TARGETS ?= reply watch connect_reply request_head client_hello kubeconfig proxy certificates

.PHONY: help build test testbin peer lint fmt run bench bench-large bench-bigsource compare compare-kit static size docker-build \
	docker-push image install uninstall deploy undeploy build-installer demo clean hub-admit \
	static-arm64 test-arm64 docker-buildx chart helm-package fuzz test-builds test-node

.PHONY: bench-fleet demo-fleet

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-16s %s\n", $$1, $$2 }'

build: ## release build of the skiff binary (target/release/skiff)
	$(CARGO) build --release

test: ## unit, integration and e2e tests, two test programs at a time (hack/test-lanes.py); SKIFF_SKIP_E2E=1 skips the control plane and builds the e2e tests ignored
	@if [ "$${CI:-}" = true ] && [ -n "$${SKIFF_SKIP_E2E:-}" ]; then \
		echo "make test: SKIFF_SKIP_E2E is not allowed in CI"; exit 2; \
	elif [ "$${SKIFF_SKIP_E2E:-}" = 1 ]; then \
		echo "make test: SKIFF_SKIP_E2E=1, e2e tests built ignored"; \
		$(CARGO) build --example demo --example demo_fleet; \
	else \
		$(MAKE) testbin && $(MAKE) test-builds; \
	fi
	CARGO=$(CARGO) python3 hack/test-lanes.py

# The image's static binary (the container suite runs it) builds beside the test programs: the
# two share no build directory, and its long single-threaded link leaves a core to them.
test-builds:
	@$(MAKE) --no-print-directory static & static=$$!; \
	$(CARGO) build --example demo --example demo_fleet && $(CARGO) test --all-targets --no-run; built=$$?; \
	wait $$static && [ $$built = 0 ]

testbin: ## build kube-apiserver, etcd, kubectl and helm into bin/ (only the missing ones)
	testbin/build.sh

# The node suite's test program is built first, outside the node's namespaces; inside, cargo
# only runs it. One test at a time: one kubelet, one skiff install.
test-node: ## as root: skiff's image in Pods on a real kubelet (hack/node/node.sh): make deploy and helm install, probes, handovers, memory (NODE_ROUNDS, default 10; NODE_FANOUT, 1000)
	$(CARGO) test --test e2e --no-run
	hack/node/node.sh $(CARGO) test --test e2e node:: -- --include-ignored --test-threads=1 --nocapture

lint: ## rustfmt check, clippy with warnings as errors, no import cycles between source files, each module using only those lib.rs lists after it, docs/ARCHITECTURE.md against the code, the test lanes' scheduling and hack/lines.py's counting
	$(CARGO) fmt --check
	python3 hack/cycles.py src src/mirror
	python3 hack/cycles_check.py
	python3 hack/map_check.py
	python3 hack/lines_check.py
	python3 hack/test_lanes_check.py
	$(CLIPPY)

hub-admit: ## on a hub (kubectl's context): admit member cluster CLUSTER labelled LABELS (k=v,...), printing the Secret skiff-hub its admin applies beside deploy/fleet-member (README, Across clusters); installed by Helm, MEMBER_ROLE=<release>-fleet-member and SECRET_NAMESPACE=<skiff's namespace in the member>
	@KUBECTL=$(KUBECTL) MEMBER_ROLE="$(MEMBER_ROLE)" SECRET_NAMESPACE="$(SECRET_NAMESPACE)" hack/hub-admit.sh "$(CLUSTER)" "$(LABELS)" $(DURATION)

fmt: ## format the code
	$(CARGO) fmt

run: ## run skiff with ARGS, e.g. make run ARGS="--leader-elect --kubeconfig kind.yaml"
	$(CARGO) run -- $(ARGS)

bench: compare ## run the benchmarks (benches/, make compare first) and record the figures in BENCHMARKS.md
	$(CARGO) bench --bench fanout --bench memory --bench scale --bench decode --bench acceptances --bench kit_memory --bench policy --bench projection

bench-bigsource: testbin static peer ## a 900 KB ConfigMap into 300 and 1,000 namespaces and a 1 MB Secret into 100, on a real control plane: the static binary beside the controller-runtime peer (about 10 min; BIGSOURCE_BASELINE=<older skiff> measures it too, BIGSOURCE_PEER=0 leaves the peer out)
	SKIFF_BINARY=$(STATIC_BINARY) $(CARGO) bench --bench bigsource

bench-large: testbin peer ## skiff and the controller-runtime peer at 100,000 namespaces on a real control plane (about 40 min on 2 CPUs; SCALE_QPS, SCALE_BASELINE=<older skiff>)
	$(CARGO) bench --bench scale -- --real --namespaces 100000

bench-fleet: testbin static ## a hub and two real members (edits, a new member, a 5-minute outage, memory), then one real hub with 100, 300 and 1,000 members, each a skiff process on a fake cluster; prints the figures of BENCHMARKS.md's "Across clusters" and writes benches/fleet.svg (about 45 min on 2 cores, niced; FLEET_PARTS=real,scale, FLEET_MEMBERS=100,300,1000, FLEET_IDLE=180, FLEET_OUTAGE=300)
	SKIFF_BINARY=$(STATIC_BINARY) nice -n 10 $(CARGO) bench --bench fleet

compare-kit: testbin peer ## make compare's kit part alone: the namespace kit into 1,000 new namespaces, skiff beside the peer; rewrites its section of BENCHMARKS.md (about 10 min on 2 cores; COMPARE_KIT_NAMESPACES; COMPARE_KYVERNO=1 adds Kyverno, building it first: about 11 min cold)
	@if [ "$(COMPARE_KYVERNO)" = 1 ]; then testbin/kyverno/build.sh; fi
	COMPARE_PARTS=kit $(CARGO) bench --bench compare

peer: ## build the controller-runtime peer of make compare into bin/skiff-peer (only when missing)
	testbin/peer/build.sh

compare: testbin peer ## skiff beside controller-runtime on a real control plane; rewrites BENCHMARKS.md (about 14 min on 2 cores, and 10 more for the kit part; COMPARE_SQUEEZE=3m for the longer squeeze, about 24; COMPARE_KYVERNO=1 as for compare-kit)
	@if [ "$(COMPARE_KYVERNO)" = 1 ]; then testbin/kyverno/build.sh; fi
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

static: ## statically linked release binary for the image (target/<arch>-unknown-linux-gnu/release/skiff), OpenSSL built from source; STATIC_TARGET=... cross-compiles
	@if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx '$(STATIC_TARGET)'; then \
		echo "make static: the Rust target $(STATIC_TARGET) is not installed; run hack/cross-tools.sh $(STATIC_TARGET)"; exit 1; fi
	@$(if $(STATIC_CROSS),test -x $(RUST_GCC_LD)/ld.lld || { \
		echo "make static: $(RUST_GCC_LD)/ld.lld (rustc's LLD for gcc) not found; install Rust with rustup"; exit 1; })
	@openssl=$$($(STATIC_CROSS) CARGO=$(CARGO) hack/openssl.sh $(STATIC_TARGET)) && \
	echo "$(STATIC_CROSS) OPENSSL_DIR=$$openssl OPENSSL_STATIC=1 RUSTFLAGS=\"$(STATIC_RUSTFLAGS) $(STATIC_CROSS_RUSTFLAGS)\" $(CARGO) build --release --target $(STATIC_TARGET)" && \
	$(STATIC_CROSS) OPENSSL_DIR=$$openssl OPENSSL_STATIC=1 RUSTFLAGS="$(STATIC_RUSTFLAGS) $(STATIC_CROSS_RUSTFLAGS)" RUSTC_WORKSPACE_WRAPPER= \
		$(CARGO) build --release --target $(STATIC_TARGET)

static-arm64: ## the static binary for arm64 (target/cross/aarch64-unknown-linux-gnu/release/skiff on an amd64 machine)
	@$(MAKE) --no-print-directory static STATIC_TARGET=aarch64-unknown-linux-gnu

test-arm64: static-arm64 ## the emulated arm64 smoke e2e: the arm64 binary under qemu-aarch64 leads, mirrors and hands over
	$(CARGO) test --test e2e -- arm64:: --include-ignored

size: ## fail when the static binary of a platform of PLATFORMS (default amd64 and arm64) is larger than MAX_BINARY_BYTES
	@for target in $(PLATFORM_TARGETS); do \
		binary=$$(if [ "$${target%%-*}" = $(HOST_ARCH) ]; then echo target; else echo target/cross; fi)/$$target/release/skiff; \
		case $$target in *-unknown-linux-gnu) ;; *) echo "make size: unsupported platform $$target in PLATFORMS"; exit 1;; esac; \
		test -f $$binary || { echo "make size: $$binary missing; run make static STATIC_TARGET=$$target first (or make size PLATFORMS=linux/amd64)"; exit 1; }; \
		size=$$(stat -c %s $$binary); \
		if [ "$$size" -gt $(MAX_BINARY_BYTES) ]; then \
			echo "make size: $$binary is $$size bytes, over the $(MAX_BINARY_BYTES)-byte ceiling; see docs/benchmarks-history.md (Binary size and build cost) for what it is made of"; exit 1; \
		fi; \
		echo "make size: $$binary is $$size bytes (ceiling $(MAX_BINARY_BYTES))"; \
	done

docker-build: static ## container image IMG (default skiff:VERSION) from Containerfile, with OCI labels and its SBOM in DIST/sbom (podman, else docker)
	@command -v $(CONTAINER_TOOL) >/dev/null || { \
		echo "make docker-build: $(CONTAINER_TOOL) not found; install podman (e.g. apt-get install podman)"; exit 1; }
	@mkdir -p $(DIST)/sbom
	hack/sbom.sh $(STATIC_TARGET) $(STATIC_BINARY) > $(DIST)/sbom/$(STATIC_SBOM)
	$(CONTAINER_TOOL) build -f Containerfile --build-arg BINARY=$(STATIC_BINARY) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg SOURCE='$(IMAGE_SOURCE)' --build-arg SBOM=$(STATIC_SBOM) \
		--build-arg SBOM_DIGEST=sha256:$$(sha256sum $(DIST)/sbom/$(STATIC_SBOM) | cut -d' ' -f1) \
		-t $(IMG) .
	@$(CONTAINER_TOOL) image inspect $(IMG) \
		--format 'make docker-build: $(IMG) {{.Size}} bytes, user {{.Config.User}}, entrypoint {{.Config.Entrypoint}}, labels {{.Config.Labels}}'

docker-push: ## push IMG to its registry
	$(CONTAINER_TOOL) push $(IMG)

image: docker-build ## the same as docker-build (older name)

docker-buildx: ## one image per platform of PLATFORMS (static binary, SBOM in DIST/sbom) and an OCI index IMG of them, also in DIST/image (podman)
	@IMG='$(IMG)' PLATFORMS='$(PLATFORMS)' VERSION='$(VERSION)' REVISION='$(REVISION)' \
		SOURCE='$(IMAGE_SOURCE)' DIST='$(DIST)' MAX_IMAGE_BYTES='$(MAX_IMAGE_BYTES)' MAKE='$(MAKE)' \
		hack/buildx.sh

chart: ## regenerate the Helm chart charts/skiff from manifests/ and Cargo.toml's version (hack/chartgen)
	cd hack/chartgen && go run . -manifests ../../manifests -chart ../../charts/skiff -version $(VERSION)

helm-package: ## the chart archive DIST/skiff-VERSION.tgz (helm from make testbin, else on PATH)
	@grep -qx 'version: $(VERSION)' charts/skiff/Chart.yaml || { \
		echo "make helm-package: charts/skiff/Chart.yaml is not at version $(VERSION) (Cargo.toml); run make chart"; exit 1; }
	$(HELM) package charts/skiff --destination $(DIST)

install: ## apply the Mirror CRD to the cluster of the current kubeconfig
	$(KUBECTL) apply -f manifests/crd.yaml

uninstall: ## delete the Mirror CRD (and with it every Mirror)
	$(KUBECTL) delete $(DELETE_FLAGS) -f manifests/crd.yaml

deploy: ## apply manifests/ with the Deployment's image set to IMG (tracked files stay unchanged)
	@overlay=$$(mktemp -d) && trap 'rm -rf "$$overlay"' EXIT && \
		hack/image-overlay.sh "$$overlay" '$(IMG)' && \
		echo "$(KUBECTL) apply -k manifests/ (image $(IMG))" && \
		$(KUBECTL) apply -k "$$overlay"

undeploy: ## delete every Mirror (skiff deletes their copies), then everything deploy created (objects already gone are no error)
	@KUBECTL='$(KUBECTL)' DELETE_FLAGS='$(DELETE_FLAGS)' hack/undeploy.sh

build-installer: ## write INSTALLER (default dist/install.yaml): manifests/ in one file, image IMG
	@mkdir -p $(dir $(INSTALLER))
	@overlay=$$(mktemp -d) && trap 'rm -rf "$$overlay"' EXIT && \
		hack/image-overlay.sh "$$overlay" '$(IMG)' && \
		$(KUBECTL) kustomize "$$overlay" > '$(INSTALLER)' && \
		echo "make build-installer: wrote $(INSTALLER) (image $(IMG)); kubectl apply -f $(INSTALLER)"

demo: testbin ## local control plane, two skiff replicas, a Mirror at work, a handover; Ctrl-C stops it. NODE=1 (as root): skiff's image in Pods under a real kubelet (hack/node/demo.sh)
	@if [ "$(NODE)" = 1 ]; then \
		hack/node/node.sh hack/node/demo.sh; \
	else \
		$(CARGO) build --quiet --bin skiff --example demo && \
		target/debug/examples/demo target/debug/skiff; \
	fi

demo-fleet: testbin ## a hub and a member cluster on this machine (two control planes), the member admitted with hack/hub-admit.sh, a skiff process on each side, a fleet Mirror's copy reaching the member and an edit following it; Ctrl-C stops it
	$(CARGO) build --quiet --bin skiff --example demo_fleet && \
	target/debug/examples/demo_fleet target/debug/skiff

clean: ## remove build output (the OpenSSL of make static with it) and the control-plane binaries
	$(CARGO) clean
	rm -rf bin
