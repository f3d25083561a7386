#!/usr/bin/env bash
# Builds the controller-runtime peer (skiff-peer) into ../../bin when missing or older than its
# sources. Its k8s.io modules match the control plane's (v0.36.3), so Go's build cache from
# `make testbin` is reused.
set -euo pipefail
cd "$(dirname "$0")"
out=${BIN_DIR:-../../bin}
mkdir -p "$out"
# Present and newer than every source file: nothing to do.
if [ -x "$out/skiff-peer" ] && [ -z "$(find . -newer "$out/skiff-peer" \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) | head -1)" ]; then
  echo "peer: skiff-peer up to date"; exit 0
fi
echo "peer: building skiff-peer ..."
start=$SECONDS
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/skiff-peer.tmp.$$" .
mv "$out/skiff-peer.tmp.$$" "$out/skiff-peer"
echo "peer: built skiff-peer in $((SECONDS - start)) s"
