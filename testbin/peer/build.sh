#!/usr/bin/env bash
# Builds the controller-runtime peer (skiff-peer) into ../../bin when missing or older than its
# source. Its k8s.io modules match the control plane's (v0.36.3), so Go's build cache from
# `make testbin` is reused.
set -euo pipefail
cd "$(dirname "$0")"
out=${BIN_DIR:-../../bin}
mkdir -p "$out"
# Rebuilt when its source changed since it was built.
if [ -x "$out/skiff-peer" ] && [ "$out/skiff-peer" -nt main.go ] && [ "$out/skiff-peer" -nt go.mod ]; then
  echo "peer: skiff-peer present"; exit 0
fi
echo "peer: building skiff-peer ..."
start=$SECONDS
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/skiff-peer.tmp.$$" .
mv "$out/skiff-peer.tmp.$$" "$out/skiff-peer"
echo "peer: built skiff-peer in $((SECONDS - start)) s"
