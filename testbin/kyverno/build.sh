#!/usr/bin/env bash
# Builds Kyverno's admission controller (kyverno) and background controller
# (kyverno-background-controller) into ../../bin when missing, from the module pinned in go.mod;
# a generate policy needs both (the admission controller queues UpdateRequests, the background
# controller creates and synchronizes the generated objects). Kyverno shares the peer's k8s.io
# v0.36.3, but the two commands need some 3,000 packages in all (cloud SDKs, cosign, notation, OPA, CUE):
# the first build took 11 minutes on 2 shared cores (README.md); the second binary reuses its cache.
# Only missing binaries are built: delete bin/kyverno* after changing go.mod.
set -euo pipefail
cd "$(dirname "$0")"
out=${BIN_DIR:-../../bin}
mkdir -p "$out"

version=$(awk '$1 == "github.com/kyverno/kyverno" { print $2; exit }
  $1 == "require" && $2 == "github.com/kyverno/kyverno" { print $3; exit }' go.mod)
[ -n "$version" ] || { echo "kyverno: go.mod does not require github.com/kyverno/kyverno" >&2; exit 1; }
ldflags="-s -w -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$version"

build() { # name package
  if [ -x "$out/$1" ]; then echo "kyverno: $1 present"; return; fi
  echo "kyverno: building $1 ($2@$version) ..."
  local start=$SECONDS
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$1.tmp.$$" "$2"
  mv "$out/$1.tmp.$$" "$out/$1"
  echo "kyverno: built $1 in $((SECONDS - start)) s"
}

build kyverno github.com/kyverno/kyverno/cmd/kyverno
build kyverno-background-controller github.com/kyverno/kyverno/cmd/background-controller
