#!/usr/bin/env bash
# Admits a member cluster on a hub: the hub admin's half of a member's registration.
#
#   hack/hub-admit.sh CLUSTER [LABELS] [DURATION]     (make hub-admit CLUSTER=eu-1 LABELS=region=eu)
#
# On the hub kubectl's current context points at, it makes the member's namespace CLUSTER
# (labelled skiff.dev/member=CLUSTER and LABELS, k=v,k=v: the labels fleet Mirrors select
# clusters by, which only the hub admin sets), a ServiceAccount skiff-member there, bound to the
# ClusterRole skiff-fleet-member in that namespace only, and the member's heartbeat Lease. Then
# it prints, on stdout, the Secret skiff-hub for the member admin to apply in the member cluster
# (beside deploy/fleet-member): a kubeconfig naming the hub, its CA and the namespace, reading
# its token from the file `token` beside it, and the token (DURATION, default 2160h: rotate it
# by running this again and re-applying the Secret; skiff re-reads the file, no restart).
#
# It refuses a namespace that exists without skiff.dev/member: that is a hub namespace of its
# own, not a member's.
#
# Installed with Helm under other names, say so: MEMBER_ROLE is the ClusterRole to bind (the
# hub's <release>-fleet-member; default skiff-fleet-member) and SECRET_NAMESPACE the namespace of
# skiff in the member cluster, where the printed Secret goes (default skiff-system).
set -euo pipefail
cluster=${1:?usage: hack/hub-admit.sh CLUSTER [LABELS] [DURATION]}
labels=${2:-}
duration=${3:-2160h}
kubectl=${KUBECTL:-kubectl}
role=${MEMBER_ROLE:-skiff-fleet-member}
secret_namespace=${SECRET_NAMESPACE:-skiff-system}

dns_label='^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'
if ! [[ $cluster =~ $dns_label ]]; then
  echo "hub-admit: CLUSTER '$cluster' must be a namespace name (a DNS label): lowercase letters, digits and '-'" >&2
  exit 2
fi
if ! [[ $secret_namespace =~ $dns_label ]]; then
  echo "hub-admit: SECRET_NAMESPACE '$secret_namespace' must be a namespace name (a DNS label): skiff's namespace in the member cluster" >&2
  exit 2
fi
if ! $kubectl get clusterrole "$role" -o name >/dev/null 2>&1; then
  echo "hub-admit: no ClusterRole $role on the hub; install skiff as a hub first (deploy/fleet-hub, or the chart with fleet.hub.enable=true: set MEMBER_ROLE=<release>-fleet-member)" >&2
  exit 2
fi
if existing=$($kubectl get namespace "$cluster" -o 'jsonpath={.metadata.labels.skiff\.dev/member}' 2>/dev/null) &&
  [ "$existing" != "$cluster" ]; then
  echo "hub-admit: namespace $cluster exists on the hub and is not member $cluster's (no skiff.dev/member=$cluster); choose another CLUSTER" >&2
  exit 2
fi

label_lines="        skiff.dev/member: \"$cluster\""
IFS=',' read -ra pairs <<<"$labels"
for pair in "${pairs[@]}"; do
  [ -z "$pair" ] && continue
  key=${pair%%=*} value=${pair#*=}
  if [ "$key" = "$pair" ] || [ -z "$key" ]; then
    echo "hub-admit: LABELS entry '$pair' is not k=v" >&2
    exit 2
  fi
  label_lines+=$'\n'"        \"$key\": \"$value\""
done

$kubectl apply -f - >&2 <<YAML
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Namespace
    metadata:
      name: $cluster
      labels:
$label_lines
  - apiVersion: v1
    kind: ServiceAccount
    metadata: {name: skiff-member, namespace: $cluster}
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: RoleBinding
    metadata: {name: skiff-fleet-member, namespace: $cluster}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $role}
    subjects: [{kind: ServiceAccount, name: skiff-member, namespace: $cluster}]
  - apiVersion: coordination.k8s.io/v1
    kind: Lease
    metadata:
      name: skiff-member
      namespace: $cluster
      labels: {skiff.dev/heartbeat: member}
    spec: {leaseDurationSeconds: 180}
YAML

token=$($kubectl create token skiff-member -n "$cluster" --duration="$duration")
server=$($kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
ca=$($kubectl config view --minify --raw -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')
cat <<YAML
# The member $cluster's credentials for the hub: apply in the member cluster, then
# kubectl apply -k deploy/fleet-member (with --hub-name set to this hub's name), or install
# the chart with fleet.member.enable=true and fleet.member.hubName.
apiVersion: v1
kind: Secret
metadata:
  name: skiff-hub
  namespace: $secret_namespace
type: Opaque
stringData:
  token: $token
  kubeconfig: |
    apiVersion: v1
    kind: Config
    clusters:
      - name: hub
        cluster:
          server: $server
          certificate-authority-data: $ca
    users:
      - name: $cluster
        user:
          tokenFile: token
    contexts:
      - name: hub
        context: {cluster: hub, user: $cluster, namespace: $cluster}
    current-context: hub
YAML
