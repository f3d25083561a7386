#!/usr/bin/env bash
# Installs Kyverno's CRDs and manifests.yaml into the cluster of $KUBECONFIG (an admin's) and
# starts the admission and background controllers out of cluster, each as its ServiceAccount
# (a TokenRequest token), with the flags README.md explains. Writes the kubeconfigs, logs and
# pid files into $KYVERNO_DIR; stop the controllers with `kill $(cat $KYVERNO_DIR/*.pid)`.
# Ports: WEBHOOK_PORT (API server → admission controller), METRICS_PORT and METRICS_PORT+1.
set -euo pipefail
cd "$(dirname "$0")"
bin=$(cd "${BIN_DIR:-../../bin}" && pwd -P)
: "${KUBECONFIG:?an admin kubeconfig of the cluster}"
dir=${KYVERNO_DIR:?a directory for kubeconfigs, logs and pid files}
webhook_port=${WEBHOOK_PORT:-19443}
metrics_port=${METRICS_PORT:-18000}
qps=${KYVERNO_QPS:-20}
burst=${KYVERNO_BURST:-30}
mkdir -p "$dir"
kubectl() { "$bin/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

crds=$(go mod download -json github.com/kyverno/kyverno | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/config/crds
# Server-side: the ClusterPolicy CRD is too big for the last-applied annotation.
kubectl apply --server-side -f "$crds/kyverno" -f "$crds/policies.kyverno.io" -f "$crds/reports" -f "$crds/policyreport" >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl apply -f manifests.yaml >/dev/null

identity() { # controller (admission|background): a kubeconfig as its ServiceAccount
  local sa=kyverno-$1-controller file=$dir/$1.kubeconfig
  kubectl config view --raw --minify --flatten >"$file"
  "$bin/kubectl" --kubeconfig "$file" config set-credentials "$sa" \
    --token="$(kubectl create token "$sa" -n kyverno --duration=24h)" >/dev/null
  "$bin/kubectl" --kubeconfig "$file" config set-context --current --user="$sa" >/dev/null
}
identity admission
identity background

common=(KYVERNO_NAMESPACE=kyverno INIT_CONFIG=kyverno METRICS_CONFIG=kyverno-metrics)
flags=(--clientRateLimitQPS="$qps" --clientRateLimitBurst="$burst" --controllerRuntimeMetricsAddress=0
  --autoMemLimitEnabled=false --omitEvents=PolicyApplied,PolicySkipped --enableReporting= --disableLogColor)
env "${common[@]}" KYVERNO_SERVICEACCOUNT_NAME=kyverno-admission-controller \
  KYVERNO_ROLE_NAME=kyverno:admission-controller KYVERNO_SVC=kyverno-svc \
  KYVERNO_DEPLOYMENT=kyverno-admission-controller KYVERNO_POD_NAME=kyverno-admission-controller-0 \
  "$bin/kyverno" --kubeconfig="$dir/admission.kubeconfig" "${flags[@]}" \
  --serverIP="127.0.0.1:$webhook_port" --webhookServerPort="$webhook_port" --metricsPort="$metrics_port" \
  --caSecretName=kyverno-svc.kyverno.svc.kyverno-tls-ca --tlsSecretName=kyverno-svc.kyverno.svc.kyverno-tls-pair \
  --backgroundServiceAccountName=system:serviceaccount:kyverno:kyverno-background-controller \
  --admissionReports=false --generateValidatingAdmissionPolicy=false \
  >"$dir/admission.log" 2>&1 &
echo $! >"$dir/admission.pid"
env "${common[@]}" KYVERNO_SERVICEACCOUNT_NAME=kyverno-background-controller \
  KYVERNO_DEPLOYMENT=kyverno-background-controller KYVERNO_POD_NAME=kyverno-background-controller-0 \
  "$bin/kyverno-background-controller" --kubeconfig="$dir/background.kubeconfig" "${flags[@]}" \
  --metricsPort=$((metrics_port + 1)) \
  >"$dir/background.log" 2>&1 &
echo $! >"$dir/background.pid"

# Ready: both Leases held and the resource webhooks registered.
for _ in $(seq 120); do
  if [ -n "$(kubectl get lease kyverno -n kyverno -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] &&
    [ -n "$(kubectl get lease kyverno-background-controller -n kyverno -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] &&
    kubectl get validatingwebhookconfiguration kyverno-resource-validating-webhook-cfg >/dev/null 2>&1; then
    echo "kyverno: both controllers lead; logs in $dir"; exit 0
  fi
  sleep 1
done
echo "kyverno: not ready after 120 s; see $dir/admission.log and $dir/background.log" >&2
exit 1
