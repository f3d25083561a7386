#!/usr/bin/env bash
# Runs COMMAND on a one-node Kubernetes cluster with a real kubelet, built from this repository's
# own files, for `make test-node` (the node suite, tests/e2e/node.rs) and `make demo NODE=1`.
#
#   hack/node/node.sh COMMAND [ARGS...]       as root
#
# What it prepares, each only when missing: Debian's containerd, runc, CNI plugins, nftables and
# podman; kubelet, kube-controller-manager, kube-scheduler and kube-proxy built from the module
# testbin/ pins (testbin/build.sh node); a pause image FROM scratch (hack/node/pause.c); skiff's
# image from `make docker-build`. Then it runs hack/node/inside.sh in new network, mount and PID
# namespaces: the node, kube-apiserver included, and COMMAND live there, and reach nothing but
# the addresses inside.sh creates (an nftables rule drops the rest). When COMMAND ends, or this
# script is killed, the PID namespace's processes die with its first one and the namespaces go
# with them: their interfaces, routes, rules and mounts. What lives outside, the kubelet's
# cgroups and the state directory, this script removes on exit, and on its next run what a
# SIGKILL left.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
cd "$root"
say() { echo "node: $*" >&2; }
die() { say "$*"; exit 1; }

[ $# -gt 0 ] || die "usage: $0 COMMAND [ARGS...]"
[ "$(id -u)" = 0 ] || die "the node needs root (namespaces, cgroups, containerd); run as root"

export NODE_IMG=${NODE_IMG:-localhost/skiff:test}
export NODE_PAUSE_IMG=localhost/skiff-pause:test
export NODE_CGROUP=skiff-node
export NODE_OUT=$root/target/node
mkdir -p "$NODE_OUT"

packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v nft >/dev/null || missing+=(nftables)
  command -v ip >/dev/null || missing+=(iproute2)
  command -v podman >/dev/null || missing+=(podman)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  [ ${#missing[@]} -eq 0 ] && return
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
}

# The pause image: a static pause binary alone in an image FROM scratch.
pause_image() {
  local dir="$NODE_OUT/pause"
  mkdir -p "$dir"
  gcc -static -Os -s -o "$dir/pause" "$here/pause.c"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$dir/Containerfile"
  podman build -q -t "$NODE_PAUSE_IMG" "$dir" >/dev/null
  rm -f "$NODE_OUT/pause.tar"
  podman save -q --format docker-archive -o "$NODE_OUT/pause.tar" "$NODE_PAUSE_IMG"
}

skiff_image() {
  make --no-print-directory docker-build IMG="$NODE_IMG" >"$NODE_OUT/docker-build.log" 2>&1 ||
    { tail -n 30 "$NODE_OUT/docker-build.log" >&2; die "make docker-build failed (log above)"; }
  rm -f "$NODE_OUT/skiff.tar"
  podman save -q --format docker-archive -o "$NODE_OUT/skiff.tar" "$NODE_IMG"
}

# The kubelet's cgroups (under NODE_CGROUP in every hierarchy), deepest first; processes a
# killed namespace leaves take a moment to be reaped.
remove_cgroups() {
  local try
  for try in $(seq 50); do
    find /sys/fs/cgroup/*/"$NODE_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
    compgen -G "/sys/fs/cgroup/*/$NODE_CGROUP" >/dev/null || return 0
    sleep 0.2
  done
  say "could not remove /sys/fs/cgroup/*/$NODE_CGROUP (processes left in it?)"
}

start=$SECONDS
packages
testbin/build.sh >&2
testbin/build.sh node >&2
pause_image
skiff_image
say "prepared in $((SECONDS - start)) s"

remove_cgroups
state=$(mktemp -d /tmp/skiff-node.XXXXXX)
cleanup() {
  remove_cgroups
  rm -rf "$state"
}
trap cleanup EXIT
# --kill-child: when unshare dies, so does the namespace's first process, and with it every
# other process of the namespace. It runs in the background so that a signal to this script
# is handled at once (bash defers traps while a foreground command runs): the trap kills it
# (unshare hands SIGTERM to the namespace's first process, which as PID 1 ignores it).
unshare --net --mount --pid --fork --kill-child --mount-proc --propagation private \
  "$here/inside.sh" "$state" "$@" <&0 &
node=$!
stop() {
  kill -KILL "$node" 2>/dev/null || true
  wait "$node" 2>/dev/null || true
  exit "$1"
}
trap 'stop 143' TERM
trap 'stop 130' INT
status=0
wait "$node" || status=$?
exit $status
