#!/usr/bin/env bash
# The node itself, run by hack/node/node.sh as the first process of new network, mount and PID
# namespaces: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, the
# kubelet and kube-proxy, then COMMAND with KUBECONFIG set. Its exit status is COMMAND's.
#
#   inside.sh STATE COMMAND [ARGS...]
#
# Addresses, all created here: loopback, and the bridge cni0 at 10.244.0.1/24, which is the
# node's address (the API server's and the kubelet's) and the Pods' gateway. Services are
# 10.96.0.0/16 (kube-proxy, nftables mode). No default route: a packet for anything else has
# nowhere to go, and the guard table drops it anyway (its counters say how many tried).
set -euo pipefail
state=$1
shift
bin=$(cd "$(dirname "$0")/../../bin" && pwd -P)
logs=$NODE_OUT/logs
node=skiff-node
ip=10.244.0.1
say() { echo "node: $*" >&2; }
die() {
  say "$*"
  exit 1
}

rm -rf "$logs"
mkdir -p "$logs"

# Everything written below lives in this mount namespace's tmpfs: gone with it.
mount -t tmpfs -o mode=0755 skiff-node "$state"
mount -t tmpfs -o mode=0755 skiff-node-run /run
# The kubelet writes Pod logs to /var/log/pods and /var/log/containers, paths it never lets go.
mount -t tmpfs -o mode=0755 skiff-node-log /var/log
# A sysfs of this network namespace (the CNI plugins read /sys/class/net), the cgroups kept.
mkdir "$state/cgroup"
mount --rbind /sys/fs/cgroup "$state/cgroup"
mount -t sysfs sysfs /sys
mount --rbind "$state/cgroup" /sys/fs/cgroup
umount -l "$state/cgroup"

ip link set lo up
ip link add cni0 type bridge
ip addr add "$ip/24" dev cni0
ip link set cni0 up
# Services: the node's own connections to a ClusterIP need a route before kube-proxy's DNAT.
ip route add 10.96.0.0/16 dev cni0 src "$ip"
echo 1 >/proc/sys/net/ipv4/ip_forward
# After kube-proxy's DNAT (priority -100): a Service address is translated by then. What it
# drops it counts, and @tried says where the IPv4 packets were going.
nft -f - <<'NFT'
table inet skiff_node_guard {
  set tried { type ipv4_addr; flags dynamic; }
  chain output {
    type filter hook output priority 100; policy accept;
    meta nfproto ipv4 ip daddr != { 127.0.0.0/8, 10.244.0.0/24 } add @tried { ip daddr } counter drop
    meta nfproto ipv6 ip6 daddr != ::1 counter drop
  }
  chain forward {
    type filter hook forward priority 100; policy accept;
    meta nfproto ipv4 ip daddr != 10.244.0.0/24 add @tried { ip daddr } counter drop
    meta nfproto ipv6 counter drop
  }
}
NFT

# Certificates: one CA; the API server's serving certificate; a system:masters client for the
# tests and the control plane's components; the kubelet's (client and serving).
pki=$state/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=skiff-node-ca -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
cert() { # name subject subjectAltName
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" \
    -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -out "$pki/$1.crt" 2>/dev/null \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3")
}
cert apiserver /CN=kube-apiserver \
  "IP:$ip,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin /O=system:masters/CN=skiff-node-admin "DNS:admin"
cert kubelet "/O=system:nodes/CN=system:node:$node" "IP:$ip,DNS:$node"
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null

kubeconfig() { # name cert
  cat >"$state/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
  - name: node
    cluster: {server: "https://$ip:6443", certificate-authority: "$pki/ca.crt"}
users:
  - name: $2
    user: {client-certificate: "$pki/$2.crt", client-key: "$pki/$2.key"}
contexts:
  - name: node
    context: {cluster: node, user: $2}
current-context: node
YAML
}
kubeconfig admin admin
kubeconfig kubelet kubelet
export KUBECONFIG=$state/admin.kubeconfig

# Each daemon in the background, its output in logs/NAME.log; all die with this namespace.
daemon() { # name command...
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
}
wait_for() { # what seconds command...
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what not ready after $((SECONDS - deadline + $2)) s; see $logs"
    sleep 0.2
  done
}
start=$SECONDS

daemon etcd "$bin/etcd" --name=node --data-dir="$state/etcd" \
  --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
  --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
  --initial-cluster=node=http://127.0.0.1:2380 --unsafe-no-fsync=true --log-level=warn
daemon kube-apiserver "$bin/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --bind-address="$ip" --advertise-address="$ip" --secure-port=6443 \
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
  --client-ca-file="$pki/ca.crt" --authorization-mode=Node,RBAC \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$pki/sa.key" --service-account-signing-key-file="$pki/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --kubelet-client-certificate="$pki/admin.crt" --kubelet-client-key="$pki/admin.key" \
  --kubelet-preferred-address-types=InternalIP --profiling=false
wait_for kube-apiserver 120 "$bin/kubectl" get --raw /readyz

daemon kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$KUBECONFIG" \
  --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  --profiling=false
daemon kube-scheduler "$bin/kube-scheduler" --kubeconfig="$KUBECONFIG" \
  --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --leader-elect=false --profiling=false

# containerd: its state in the tmpfs, CRI with the bridge CNI and the local pause image. No
# process here has CAP_SYS_RESOURCE, so runc may not lower the sandbox's oom_score_adj.
mkdir -p "$state/cni"
cat >"$state/cni/10-bridge.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "skiff-node",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$state/cni-ipam",
        "ranges": [[{"subnet": "10.244.0.0/24", "gateway": "$ip"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
cat >"$state/containerd.toml" <<TOML
version = 2
root = "$state/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$NODE_PAUSE_IMG"
  restrict_oom_score_adj = true
  enable_unprivileged_ports = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
TOML
daemon containerd containerd --config "$state/containerd.toml"
ctr() { command ctr --address /run/containerd/containerd.sock --namespace k8s.io "$@"; }
wait_for containerd 60 ctr version
ctr images import "$NODE_OUT/pause.tar" >/dev/null
ctr images import "$NODE_OUT/skiff.tar" >/dev/null
# Pinned, so the kubelet's image GC never removes it.
ctr images label "$NODE_PAUSE_IMG" io.cri-containerd.pinned=pinned >/dev/null

# The kubelet's cgroups go under NODE_CGROUP in every v1 hierarchy (node.sh removes them).
for hierarchy in /sys/fs/cgroup/*/; do
  [ -e "$hierarchy/cgroup.procs" ] && mkdir -p "$hierarchy$NODE_CGROUP"
done
echo "# no cluster DNS on the node" >"$state/resolv.conf"
cat >"$state/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$NODE_CGROUP
address: $ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
resolvConf: "$state/resolv.conf"
failSwapOn: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
YAML
daemon kubelet "$bin/kubelet" --config="$state/kubelet.yaml" --kubeconfig="$state/kubelet.kubeconfig" \
  --root-dir="$state/kubelet" --hostname-override="$node" --node-ip="$ip"
daemon kube-proxy "$bin/kube-proxy" --kubeconfig="$KUBECONFIG" --hostname-override="$node" \
  --proxy-mode=nftables --cluster-cidr=10.244.0.0/24 --bind-address="$ip" \
  --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256 \
  --masquerade-all --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 \
  --conntrack-tcp-timeout-close-wait=0 --profiling=false
wait_for "the node" 120 "$bin/kubectl" wait --for=condition=Ready "node/$node" --timeout=1s
wait_for "the default ServiceAccount" 60 "$bin/kubectl" get serviceaccount default
say "node $node Ready in $((SECONDS - start)) s (logs: $logs)"

export NODE_NAME=$node NODE_STATE=$state
status=0
"$@" || status=$?
nft list table inet skiff_node_guard >"$logs/guard.nft" 2>&1 || true
exit $status
