#!/bin/sh
# `make undeploy`: deletes every Mirror while skiff still runs, then everything `make deploy`
# created.
#
# Why the Mirrors first: each carries skiff's `skiff.dev/cleanup` finalizer, which only a running
# skiff removes (after deleting the Mirror's copies). Deleting manifests/ in one go deletes the
# Deployment and the RBAC beside the CRD, so the Mirrors the CRD's deletion deletes would keep
# their finalizers, and the CRD would hang in Terminating for good.
#
# A skiff is running when its leader-election Lease has a holder (a leader that stops releases
# it). With Mirrors left and no holder, it changes nothing and says what to do.
#
#   KUBECTL=kubectl DELETE_FLAGS=--ignore-not-found hack/undeploy.sh
set -eu
kubectl=${KUBECTL:-kubectl}
flags=${DELETE_FLAGS:---ignore-not-found}
# How long skiff may take to delete every Mirror's copies (its write rate, --kube-api-qps).
mirror_timeout=${MIRROR_DELETE_TIMEOUT:-300s}
manifests=$(cd "$(dirname "$0")/../manifests" && pwd -P)
# skiff's namespace, as manifests/ names it on each object.
namespace=${NAMESPACE:-skiff-system}
# --leader-election-id
lease=${LEASE:-skiff-leader}

mirrors=0
if $kubectl get crd mirrors.skiff.dev >/dev/null 2>&1; then
  mirrors=$($kubectl get mirrors.skiff.dev --all-namespaces -o name | wc -l)
fi
if [ "$mirrors" -gt 0 ]; then
  leader=$($kubectl get lease "$lease" -n "$namespace" --ignore-not-found \
    -o jsonpath='{.spec.holderIdentity}')
  if [ -z "$leader" ]; then
    cat >&2 <<EOF
make undeploy: $mirrors Mirror(s) remain and no skiff leads in $namespace (Lease $lease has no
holder) to delete their copies and remove their skiff.dev/cleanup finalizers; nothing was deleted. Either:
  - start skiff again (make deploy IMG=...), then make undeploy; or
  - keep the copies: remove the finalizers, then make undeploy:
      $kubectl get mirrors.skiff.dev -A --no-headers \\
        -o custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name |
      while read -r ns name; do
        $kubectl patch mirror "\$name" -n "\$ns" --type=merge -p '{"metadata":{"finalizers":null}}'
      done
    The copies stay, labelled app.kubernetes.io/managed-by=skiff.
EOF
    exit 1
  fi
  echo "make undeploy: deleting $mirrors Mirror(s) first; skiff ($leader) deletes their copies"
  $kubectl delete mirrors.skiff.dev --all --all-namespaces --timeout="$mirror_timeout" || {
    echo "make undeploy: the Mirrors were not gone within $mirror_timeout (MIRROR_DELETE_TIMEOUT); is skiff running? kubectl logs -n $namespace deployment/skiff" >&2
    exit 1
  }
fi
echo "$kubectl delete $flags -k manifests/"
# shellcheck disable=SC2086 # DELETE_FLAGS is a list of flags
$kubectl delete $flags -k "$manifests"
