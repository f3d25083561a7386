#!/usr/bin/env bash
# Builds kube-apiserver, etcd, kubectl and kubeconfig-oracle into ../bin from the Go modules pinned in go.mod, and
# Helm (with yaml2json, which the chart tests read its output with) from its own module in helm/
# (its Kubernetes libraries are newer than those go.mod's replace directives pin). Only missing
# binaries are built. The first build compiles most of Kubernetes: 10-20 minutes on 2 cores
# (Helm adds a few); later builds reuse Go's build cache. `build.sh node` builds the node's
# commands instead, for make test-node (kubelet, kube-controller-manager, kube-scheduler,
# kube-proxy): 5-10 more minutes with the cache warm from the others.
set -euo pipefail
cd "$(dirname "$0")"
out=${BIN_DIR:-../bin}
mkdir -p "$out"
out=$(cd "$out" && pwd -P)

k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)
minor=${k8s_version#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
 -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"

build() { # name package [module dir] [ldflags]
  if [ -x "$out/$1" ]; then echo "testbin: $1 present"; return; fi
  echo "testbin: building $1 ($2) ..."
  local start=$SECONDS
  (cd "${3:-.}" && CGO_ENABLED=0 go build -trimpath -ldflags "${4:-$ldflags}" -o "$out/$1.tmp" "$2")
  mv "$out/$1.tmp" "$out/$1"
  echo "testbin: built $1 in $((SECONDS - start)) s"
}

if [ "${1:-}" = node ]; then
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
  build kube-proxy k8s.io/kubernetes/cmd/kube-proxy
  build kubelet k8s.io/kubernetes/cmd/kubelet
  exit 0
fi

build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
# client-go's kubeconfig loading, the oracle of the differential kubeconfig test.
build kubeconfig-oracle ./kubeconfig-oracle . "-s -w"

helm_version=$(awk '$1 == "helm.sh/helm/v4" { print $2; exit }
  $1 == "require" && $2 == "helm.sh/helm/v4" { print $3; exit }' helm/go.mod)
[ -n "$helm_version" ] || { echo "testbin: helm/go.mod does not require helm.sh/helm/v4" >&2; exit 1; }
helm_pkg=helm.sh/helm/v4/internal/version
build helm helm.sh/helm/v4/cmd/helm helm \
  "-s -w -X $helm_pkg.version=$helm_version -X $helm_pkg.gitTreeState=clean"
# Reads Helm's and kustomize's YAML output for the chart tests (helm/yaml2json/main.go).
build yaml2json ./yaml2json helm "-s -w"
