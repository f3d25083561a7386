#!/usr/bin/env bash
# `make demo NODE=1`: skiff's image in two Pods on the node of hack/node/node.sh (which runs this
# inside its namespaces, KUBECONFIG set), a Mirror at work, then what a user does to a leader:
# kubectl delete pod, and a rollout. Everything goes with the node when this ends.
set -euo pipefail
cd "$(dirname "$0")/../.."
kubectl=$PWD/bin/kubectl
ns=skiff-system
say() { printf '\n== %s\n' "$*"; }
holder() { "$kubectl" get lease skiff-leader -n "$ns" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
now_ms() { date +%s%3N; }
# Waits until the holder $1 lets go of the Lease and another Pod holds it; says when each
# happened after $2 (kubectl polls: about 0.1 s resolution).
handover() {
  local old=$1 start=$2 h released
  while h=$(holder); [ "$h" = "$old" ]; do sleep 0.02; done
  released=$(now_ms)
  while h=$(holder); [ -z "$h" ]; do sleep 0.02; done
  echo "${old%_*} let go $((released - start)) ms after the command;" \
    "${h%_*} held the Lease $(($(now_ms) - released)) ms later"
}

say "make deploy IMG=$NODE_IMG"
make --no-print-directory deploy IMG="$NODE_IMG" KUBECTL="$kubectl" >/dev/null
"$kubectl" rollout status deployment/skiff -n "$ns" --timeout=180s
"$kubectl" get pods -n "$ns" -o wide
until [ -n "$(holder)" ]; do sleep 0.2; done
echo "leader: $(holder)"

say "a Mirror copies app-ca into every namespace labelled team=payments"
"$kubectl" apply -f manifests/samples/configmap-mirror.yaml >/dev/null
"$kubectl" create namespace payments >/dev/null
"$kubectl" label namespace payments team=payments >/dev/null
until "$kubectl" get configmap app-ca -n payments >/dev/null 2>&1; do sleep 0.2; done
"$kubectl" get configmap app-ca -n payments --show-labels

say "kubectl delete pod <leader>: the kubelet sends SIGTERM, skiff releases the Lease"
old=$(holder)
start=$(now_ms)
"$kubectl" delete pod "${old%_*}" -n "$ns" --wait=false
handover "$old" "$start"

say "kubectl rollout restart: the leader's Pod is deleted last, so the Lease moves once"
"$kubectl" rollout status deployment/skiff -n "$ns" --timeout=180s >/dev/null
"$kubectl" get pods -n "$ns" \
  -o custom-columns='POD:.metadata.name,DELETION-COST:.metadata.annotations.controller\.kubernetes\.io/pod-deletion-cost'
old=$(holder)
start=$(now_ms)
"$kubectl" rollout restart deployment/skiff -n "$ns"
handover "$old" "$start"
"$kubectl" rollout status deployment/skiff -n "$ns" --timeout=180s
echo "leaseTransitions counts every handover: one for the delete, one for the rollout"
"$kubectl" get lease skiff-leader -n "$ns" \
  -o custom-columns='HOLDER:.spec.holderIdentity,TRANSITIONS:.spec.leaseTransitions'

say "make undeploy"
make --no-print-directory undeploy KUBECTL="$kubectl"
