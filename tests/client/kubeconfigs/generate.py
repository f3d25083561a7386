#!/usr/bin/env python3
"""Writes the kubeconfig corpus of the differential test (../kubeconfig_diff.rs).

Each file is in the shape a tool writes it, as its documentation and source show it; the
certificates and keys are throwaway ones in pki/ (a P-256 CA, an EC client pair and a PKCS#1
RSA client pair as kubeadm-based tools write them). Run it from anywhere after changing a case;
the files are committed, so the test needs no Python. They are also the seeds of the fuzzer's
kubeconfig target (fuzz/seeds/kubeconfig/).
"""

import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def b64(name):
    with open(os.path.join(HERE, "pki", name), "rb") as f:
        return base64.b64encode(f.read()).decode()


CA, CERT, KEY, RSACERT, RSAKEY = (b64(n) for n in ["ca.crt", "client.crt", "client.key", "rsa.crt", "rsa.key"])
FILES = {}


def case(name, text):
    FILES[name] = text


def cert_user(server, cluster, user, context, ca=CA, cert=RSACERT, key=RSAKEY, ns=None, extra=""):
    ns_line = f"\n    namespace: {ns}" if ns else ""
    return f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: {server}
  name: {cluster}
contexts:
- context:
    cluster: {cluster}
    user: {user}{ns_line}
  name: {context}
current-context: {context}
kind: Config
preferences: {{}}
users:
- name: {user}
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
{extra}"""


def exec_user(server, name, exec_block, cluster_extra=""):
    return f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {CA}
    server: {server}{cluster_extra}
  name: {name}
contexts:
- context:
    cluster: {name}
    user: {name}
  name: {name}
current-context: {name}
kind: Config
preferences: {{}}
users:
- name: {name}
  user:
{exec_block}"""


def token_user(server, name, token, cluster_extra="", context_extra=""):
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
    certificate-authority-data: {CA}{cluster_extra}
users:
- name: {name}
  user:
    token: {token}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}{context_extra}
current-context: {name}
"""


# --- tools -------------------------------------------------------------------------------
case("kind.yaml", cert_user("https://127.0.0.1:40763", "kind-kind", "kind-kind", "kind-kind"))
case("k3s.yaml", cert_user("https://127.0.0.1:6443", "default", "default", "default", cert=CERT, key=KEY))
case("k3d.yaml", cert_user("https://0.0.0.0:36249", "k3d-dev", "admin@k3d-dev", "k3d-dev", cert=CERT, key=KEY))
case("minikube.yaml", """apiVersion: v1
clusters:
- cluster:
    certificate-authority: ../pki/ca.crt
    extensions:
    - extension:
        last-update: Tue, 02 Dec 2026 10:00:00 UTC
        provider: minikube.sigs.k8s.io
        version: v1.34.0
      name: cluster_info
    server: https://192.168.49.2:8443
  name: minikube
contexts:
- context:
    cluster: minikube
    extensions:
    - extension:
        last-update: Tue, 02 Dec 2026 10:00:00 UTC
        provider: minikube.sigs.k8s.io
        version: v1.34.0
      name: context_info
    namespace: default
    user: minikube
  name: minikube
current-context: minikube
kind: Config
preferences: {}
users:
- name: minikube
  user:
    client-certificate: ../pki/rsa.crt
    client-key: ../pki/rsa.key
""")
case("microk8s.yaml", f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {CA}
    server: https://10.0.2.15:16443
  name: microk8s-cluster
contexts:
- context:
    cluster: microk8s-cluster
    user: admin
  name: microk8s
current-context: microk8s
kind: Config
preferences: {{}}
users:
- name: admin
  user:
    client-certificate-data: {CERT}
    client-key-data: {KEY}
""")
case("docker-desktop.yaml", cert_user("https://kubernetes.docker.internal:6443", "docker-desktop", "docker-desktop", "docker-desktop"))
case("rke2.yaml", cert_user("https://127.0.0.1:6443", "default", "default", "default", cert=CERT, key=KEY))
case("rancher.yaml", f"""apiVersion: v1
kind: Config
clusters:
- name: "downstream"
  cluster:
    server: "https://rancher.example.com/k8s/clusters/c-m-8x2kq4ds"
- name: "downstream-cp-1"
  cluster:
    server: "https://10.0.0.11:6443"
    certificate-authority-data: "{CA}"

users:
- name: "downstream"
  user:
    token: "kubeconfig-u-abcde12345:k8wz5nqvl8t6xv2mq8pbtfsc2c9wz4tlg2j8pkrh7zgmqv6rxw4qk"


contexts:
- name: "downstream"
  context:
    user: "downstream"
    cluster: "downstream"
- name: "downstream-cp-1"
  context:
    user: "downstream"
    cluster: "downstream-cp-1"

current-context: "downstream"
""")
case("oc-login.yaml", """apiVersion: v1
clusters:
- cluster:
    insecure-skip-tls-verify: true
    server: https://api.crc.testing:6443
  name: api-crc-testing:6443
contexts:
- context:
    cluster: api-crc-testing:6443
    namespace: default
    user: kubeadmin/api-crc-testing:6443
  name: default/api-crc-testing:6443/kubeadmin
current-context: default/api-crc-testing:6443/kubeadmin
kind: Config
preferences: {}
users:
- name: kubeadmin/api-crc-testing:6443
  user:
    token: sha256~Xq3bL9vDk2Tn1Hc7yQ0pRfZs5mWj8uAe4oGiKlNbV6c
""")
case("gke.yaml", exec_user("https://34.118.10.20", "gke_proj_europe-west1_prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
"""))
case("eks-v1beta1.yaml", exec_user("https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com", "arn:aws:eks:eu-west-1:111122223333:cluster/prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - eu-west-1
      - eks
      - get-token
      - --cluster-name
      - prod
      - --output
      - json
      command: aws
      env:
      - name: AWS_PROFILE
        value: prod-admin
"""))
case("eks-v1.yaml", exec_user("https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com", "prod.eu-west-1.eksctl.io", """    exec:
      apiVersion: client.authentication.k8s.io/v1
      args:
      - eks
      - get-token
      - --output
      - json
      - --cluster-name
      - prod
      - --region
      - eu-west-1
      command: aws
      env:
      - name: AWS_STS_REGIONAL_ENDPOINTS
        value: regional
      interactiveMode: IfAvailable
      provideClusterInfo: false
"""))
case("eks-v1-no-interactive-mode.yaml", exec_user("https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com", "prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, prod]
"""))
case("eks-iam-authenticator.yaml", exec_user("https://0123456789ABCDEF.yl4.us-west-2.eks.amazonaws.com", "aws", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws-iam-authenticator
      args:
        - "token"
        - "-i"
        - "my-cluster"
      env:
        - name: "AWS_PROFILE"
          value: "dev"
"""))
case("aks-admin.yaml", f"""apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {CA}
    server: https://aks-prod-dns-4c2a3b1e.hcp.westeurope.azmk8s.io:443
  name: aks-prod
contexts:
- context:
    cluster: aks-prod
    user: clusterAdmin_rg-prod_aks-prod
  name: aks-prod-admin
current-context: aks-prod-admin
kind: Config
preferences: {{}}
users:
- name: clusterAdmin_rg-prod_aks-prod
  user:
    client-certificate-data: {RSACERT}
    client-key-data: {RSAKEY}
    token: 3b7c1f0e9d2a4c6b8e5f7a9c1d3e5f7092b4d6f8a0c2e4f6081a3c5e7f9b1d3e
""")
case("aks-kubelogin.yaml", exec_user("https://aks-prod-dns-4c2a3b1e.hcp.westeurope.azmk8s.io:443", "aks-prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --environment
      - AzurePublicCloud
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      - --client-id
      - 80faf920-1908-4b52-b5ef-a8e7bedfc67a
      - --tenant-id
      - 72f988bf-86f1-41af-91ab-2d7cd011db47
      - --login
      - devicecode
      command: kubelogin
      env: null
      installHint: |2

        kubelogin is not installed which is required to connect to AAD enabled cluster.

        To learn more, please go to https://aka.ms/aks/kubelogin
      provideClusterInfo: false
"""))
case("aks-azure-auth-provider.yaml", exec_user("https://aks-old.hcp.westeurope.azmk8s.io:443", "aks-old", """    auth-provider:
      config:
        apiserver-id: 6dae42f8-4368-4678-94ff-3960e28e3630
        client-id: 80faf920-1908-4b52-b5ef-a8e7bedfc67a
        config-mode: "1"
        environment: AzurePublicCloud
        tenant-id: 72f988bf-86f1-41af-91ab-2d7cd011db47
      name: azure
"""))
case("gke-gcp-auth-provider.yaml", exec_user("https://35.240.1.2", "gke_old", """    auth-provider:
      config:
        cmd-args: config config-helper --format=json
        cmd-path: /usr/lib/google-cloud-sdk/bin/gcloud
        expiry-key: '{.credential.token_expiry}'
        token-key: '{.credential.access_token}'
      name: gcp
"""))
case("doctl.yaml", exec_user("https://2b5c7e1d-9f3a-4c8b-a1e6-0d4f2b8c9e7a.k8s.ondigitalocean.com", "do-fra1-prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - kubernetes
      - cluster
      - kubeconfig
      - exec-credential
      - --version=v1beta1
      - --context=default
      - 2b5c7e1d-9f3a-4c8b-a1e6-0d4f2b8c9e7a
      command: doctl
      env: null
      interactiveMode: IfAvailable
      provideClusterInfo: false
"""))
case("teleport.yaml", exec_user("https://teleport.example.com:443", "teleport.example.com-prod", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - kube
      - credentials
      - --kube-cluster=prod
      - --teleport-cluster=teleport.example.com
      - --proxy=teleport.example.com:443
      command: /usr/local/bin/tsh
      env:
      - name: TELEPORT_PROXY
        value: teleport.example.com:443
      provideClusterInfo: false
""", "\n    tls-server-name: kube-teleport-proxy-alpn.teleport.cluster.local"))
case("pinniped.yaml", exec_user("https://10.96.0.1:443", "pinniped", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - login
      - oidc
      - --enable-concierge
      - --concierge-api-group-suffix=pinniped.dev
      - --concierge-authenticator-name=my-jwt-authenticator
      - --concierge-authenticator-type=jwt
      - --concierge-endpoint=https://10.96.0.1:443
      - --concierge-ca-bundle-data=LS0tLS1CRUdJTi==
      - --issuer=https://pinniped.example.com/issuer
      - --client-id=pinniped-cli
      - --scopes=offline_access,openid,pinniped:request-audience
      - --ca-bundle-data=LS0tLS1CRUdJTi==
      - --request-audience=dev-cluster
      command: pinniped
      env: []
      installHint: The pinniped CLI does not seem to be installed.  See https://get.pinniped.dev/cli
        for more details
      provideClusterInfo: true
"""))
case("oidc-login.yaml", exec_user("https://api.example.com:6443", "oidc", """    exec:
      apiVersion: client.authentication.k8s.io/v1
      args:
      - oidc-login
      - get-token
      - --oidc-issuer-url=https://accounts.example.com
      - --oidc-client-id=kubernetes
      - --oidc-extra-scope=email
      command: kubectl
      env: null
      interactiveMode: Never
      provideClusterInfo: false
"""))
case("oidc-auth-provider.yaml", exec_user("https://api.example.com:6443", "oidc-legacy", """    auth-provider:
      config:
        client-id: kubernetes
        id-token: eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl
        idp-issuer-url: https://accounts.example.com
        refresh-token: q1bKLFOyUiosTfawzA93TzZIDzH2TNa2SMm0zEiPKTUwME6BkEo6Sql5yUWVBSWpKUGphaWpxSVAfekBOZbBhaEW+VlFUeVRGcluyVF5JT4+haZmPsluFoFu5XkpXk5BXq
      name: oidc
"""))
case("lens.json", json.dumps({
    "apiVersion": "v1", "kind": "Config", "preferences": {},
    "clusters": [{"name": "lens-dev", "cluster": {"server": "https://lens-dev.example.com:6443", "certificate-authority-data": CA}}],
    "users": [{"name": "lens-dev", "user": {"token": "lens-dev-token"}}],
    "contexts": [{"name": "lens-dev", "context": {"cluster": "lens-dev", "user": "lens-dev", "namespace": "kube-system"}}],
    "current-context": "lens-dev"}))

# --- syntax ------------------------------------------------------------------------------
view = {"kind": "Config", "apiVersion": "v1", "preferences": {},
        "clusters": [{"name": "kind-kind", "cluster": {"server": "https://127.0.0.1:40763", "certificate-authority-data": CA}}],
        "users": [{"name": "kind-kind", "user": {"client-certificate-data": RSACERT, "client-key-data": RSAKEY}}],
        "contexts": [{"name": "kind-kind", "context": {"cluster": "kind-kind", "user": "kind-kind", "namespace": "apps"}}],
        "current-context": "kind-kind"}
case("kubectl-view.json", json.dumps(view, indent=4) + "\n")
case("json-tab-indent.json", json.dumps(view, indent="\t") + "\n")
case("json-compact.json", json.dumps(view, separators=(",", ":")))
case("json-escapes.json", json.dumps(view, indent=2).replace('"apps"', '"\\u0061pps"'))
commented = token_user("https://10.0.0.1:6443", "commented", "commented-token", context_extra="\n    namespace: team-a # the team's namespace")
commented = "# written by hand\n# second comment\n" + commented.replace("users:\n", "# the users\nusers:   # trailing\n").replace("clusters:\n", "clusters:\n  # a comment inside the list\n")
case("comments.yaml", commented)
case("crlf.yaml", cert_user("https://127.0.0.1:6443", "crlf", "crlf", "crlf", ns="windows").replace("\n", "\r\n"))
case("bom.yaml", "\ufeff" + token_user("https://10.0.0.2:6443", "bom", "bom-token"))
case("bom-json.json", "\ufeff" + json.dumps(view, indent=2))
case("quoting.yaml", f"""'apiVersion': "v1"
"kind": 'Config'
clusters:
- name: 'it''s quoted'
  cluster:
    server: "https://10.0.0.3:6443"
    certificate-authority-data: '{CA}'
    tls-server-name: "api.\\x71uoted.example"
users:
- name: "u\\u0073er"
  user:
    token: 'a ''token'' with quotes'
contexts:
- name: "ctx"
  context: {{"cluster": 'it''s quoted', user: "user", 'namespace': "ns-\\t"}}
current-context: 'ctx'
""")
ca_lines = "\n".join("      " + CA[i:i + 64] for i in range(0, len(CA), 64))
case("block-scalars.yaml", f"""apiVersion: v1
kind: Config
clusters:
- name: blocks
  cluster:
    server: >-
      https://10.0.0.4:6443
    certificate-authority-data: |
{ca_lines}
users:
- name: blocks
  user:
    token: |-
      block-token
contexts:
- name: blocks
  context:
    cluster: blocks
    user: blocks
    namespace: >+
      folded
current-context: blocks
""")
case("block-scalar-folded-base64.yaml", f"""apiVersion: v1
kind: Config
clusters:
- name: folded
  cluster:
    server: https://10.0.0.4:6443
    certificate-authority-data: >
{ca_lines}
contexts:
- name: folded
  context: {{cluster: folded}}
current-context: folded
""")
case("flow-style.yaml", f"""{{apiVersion: v1, kind: Config,
  clusters: [{{name: flow, cluster: {{server: "https://10.0.0.5:6443", certificate-authority-data: {CA}}}}}],
  users: [{{name: flow, user: {{token: flow-token}}}}],
  contexts: [{{name: flow, context: {{cluster: flow, user: flow, namespace: flowing}}}}],
  current-context: flow}}
""")
case("anchors.yaml", f"""apiVersion: v1
kind: Config
clusters:
- name: base
  cluster: &cluster
    server: https://10.0.0.6:6443
    certificate-authority-data: {CA}
- name: alias
  cluster:
    <<: *cluster
    tls-server-name: alias.example
users:
- name: &user anchored-user
  user:
    token: anchored-token
contexts:
- name: anchored
  context: {{cluster: alias, user: *user, namespace: anchors}}
current-context: anchored
""")
case("merge-key-list.yaml", f"""defaults: &defaults
  server: https://10.0.0.7:6443
  insecure-skip-tls-verify: true
names: &names
  tls-server-name: merged.example
clusters:
- name: m
  cluster:
    <<: [*defaults, *names]
    server: https://10.0.0.8:6443
contexts:
- name: m
  context: {{cluster: m}}
current-context: m
""")
case("tab-after-colon.yaml", token_user("https://10.0.0.9:6443", "tabs", "tab-token").replace("    server: ", "    server:\t").replace("    token: ", "    token:\t\t"))
case("tab-before-comment.yaml", token_user("https://10.0.0.9:6443", "tabs2", "tab-token").replace("tab-token", "tab-token\t# a comment"))
case("yaml11-booleans.yaml", exec_user("https://10.0.0.10:6443", "bools", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: get-token
      provideClusterInfo: on
""", "\n    insecure-skip-tls-verify: yes").replace(f"\n    certificate-authority-data: {CA}", ""))
case("yaml11-booleans-caps.yaml", token_user("https://10.0.0.10:6443", "caps", "t").replace(f"    certificate-authority-data: {CA}", "    insecure-skip-tls-verify: YES"))
case("yaml11-y-is-a-boolean.yaml", token_user("https://10.0.0.10:6443", "bool-y", "t").replace(f"    certificate-authority-data: {CA}", "    insecure-skip-tls-verify: y"))
case("yaml11-false-off.yaml", token_user("https://10.0.0.10:6443", "bool-off", "t", cluster_extra="\n    insecure-skip-tls-verify: Off"))
case("namespace-no.yaml", token_user("https://10.0.0.11:6443", "ns-no", "t", context_extra="\n    namespace: no"))
case("namespace-number.yaml", token_user("https://10.0.0.11:6443", "num", "t", context_extra="\n    namespace: 0x1F"))
case("namespace-tagged-str.yaml", token_user("https://10.0.0.11:6443", "str", "t", context_extra="\n    namespace: !!str no"))
case("namespace-quoted-no.yaml", token_user("https://10.0.0.11:6443", "quoted", "t", context_extra="\n    namespace: 'no'"))
case("namespace-null.yaml", token_user("https://10.0.0.11:6443", "ns-null", "t", context_extra="\n    namespace: ~"))
case("exec-arg-number.yaml", exec_user("https://10.0.0.12:6443", "port", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: get-token
      args: [--port, 8080]
"""))
case("exec-arg-tagged.yaml", exec_user("https://10.0.0.12:6443", "port", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: get-token
      args: [--port, !!str 8080, !!str true, "3.5"]
"""))
case("insecure-quoted-string.yaml", token_user("https://10.0.0.10:6443", "qs", "t").replace(f"    certificate-authority-data: {CA}", "    insecure-skip-tls-verify: \"true\""))
case("repeated-keys.yaml", token_user("https://10.0.0.13:6443", "rep", "first-token").replace("    token: first-token", "    token: first-token\n    token: last-token").replace("    server: https://10.0.0.13:6443", "    server: https://first.example:6443\n    server: https://10.0.0.13:6443"))
case("multi-document.yaml", token_user("https://10.0.0.14:6443", "doc1", "t") + "---\n" + token_user("https://10.0.0.15:6443", "doc2", "t2"))
case("document-markers.yaml", "%YAML 1.1\n---\n" + token_user("https://10.0.0.14:6443", "marked", "t") + "...\n")
case("multi-line-plain.yaml", f"""apiVersion: v1
kind: Config
clusters:
- name: plain
  cluster:
    server:
      https://10.0.0.16:6443
    certificate-authority-data: {CA}
users:
- name: plain
  user:
    token: a token
      spread over lines

      with a blank line
contexts:
- name: plain
  context:
    cluster: plain
    user: plain
    namespace:
      spread
current-context: plain
""")
case("duplicate-cluster-names.yaml", token_user("https://10.0.0.17:6443", "dup", "t").replace("clusters:\n", "clusters:\n- name: dup\n  cluster:\n    server: https://other.example:6443\n"))
case("duplicate-context-names.yaml", token_user("https://10.0.0.17:6443", "dupctx", "t") + "- name: dupctx\n  context: {cluster: dupctx}\n".join(["", ""]) if False else token_user("https://10.0.0.17:6443", "dupctx", "t").replace("contexts:\n", "contexts:\n- name: dupctx\n  context: {cluster: nowhere}\n"))
case("token-file.yaml", token_user("https://10.0.0.18:6443", "tf", "x").replace("    token: x", "    tokenFile: ../tokens/token"))
case("token-and-token-file.yaml", token_user("https://10.0.0.18:6443", "tf2", "inline-wins").replace("    token: inline-wins", "    token: inline-wins\n    tokenFile: ../tokens/token"))
case("files-relative.yaml", """apiVersion: v1
kind: Config
clusters:
- name: files
  cluster:
    server: https://10.0.0.19:6443
    certificate-authority: ../pki/ca.crt
users:
- name: files
  user:
    client-certificate: ../pki/client.crt
    client-key: ../pki/client.key
contexts:
- name: files
  context: {cluster: files, user: files}
current-context: files
""")
case("insecure-with-ca.yaml", token_user("https://10.0.0.20:6443", "insecure-ca", "t", cluster_extra="\n    insecure-skip-tls-verify: true"))
case("basic-auth.yaml", token_user("https://10.0.0.21:6443", "basic", "x").replace("    token: x", "    username: admin\n    password: hunter2"))
case("proxy-http.yaml", token_user("https://10.0.0.22:6443", "proxied", "t", cluster_extra="\n    proxy-url: http://proxy.corp.example:3128"))
case("unknown-fields.yaml", token_user("https://10.0.0.23:6443", "extra", "t", cluster_extra="\n    disable-compression: true\n    future-field: {a: [1, 2]}") + "preferences:\n  colors: true\nextensions: []\n")
case("empty-current-context.yaml", token_user("https://10.0.0.24:6443", "nocur", "t").replace("current-context: nocur", "current-context: \"\""))
case("no-server.yaml", token_user("", "noserver", "t").replace("    server: \n", ""))
case("missing-user.yaml", token_user("https://10.0.0.25:6443", "nouser", "t").replace("    user: nouser\n", "    user: ghost\n"))
case("split-user.yaml", "users:\n- name: ghost\n  user:\n    token: ghost-token\n")
case("bad-ca-data.yaml", token_user("https://10.0.0.26:6443", "badca", "t").replace(CA, "bm90IGEgY2VydGlmaWNhdGU="))
case("keys-numbers-and-bools.yaml", token_user("https://10.0.0.27:6443", "keys", "t") + "1: one\ntrue: yes\n")
case("comments-only.yaml", "# nothing here yet\n# kubectl config set-context will fill it\n")
case("dashes-only.yaml", "---\n")
case("empty.yaml", "")
case("indented-sequences.yaml", f"""apiVersion: v1
kind: Config
clusters:
  -   name: indented
      cluster:
          server: https://10.0.0.28:6443
          certificate-authority-data: {CA}
users:
  - name: indented
    user:
        token: indented-token
contexts:
    - context:
          cluster: indented
          user: indented
      name: indented
current-context: indented
""")
case("exec-env-empty-value.yaml", exec_user("https://10.0.0.29:6443", "envs", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./bin/get-token
      env:
      - name: EMPTY
        value: ""
      - name: SPACED
        value: "  two words  "
"""))
case("exec-relative-command.yaml", exec_user("https://10.0.0.30:6443", "rel", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ../bin/helper
      args: ["--flag=x"]
"""))
case("server-host-port-tls.yaml", token_user("api.example.com:6443", "hostport", "t"))
case("server-host-port-plain.yaml", token_user("127.0.0.1:8080", "plainhost", "t").replace(f"\n    certificate-authority-data: {CA}", "").replace("    token: t", "    {}"))
case("server-http-with-token.yaml", token_user("http://127.0.0.1:8080", "httptoken", "t").replace(f"\n    certificate-authority-data: {CA}", ""))
case("server-http-impersonating.yaml", token_user("http://127.0.0.1:8080", "httpas", "t").replace(f"\n    certificate-authority-data: {CA}", "").replace("    token: t", "    token: t\n    as: viewer"))
case("server-with-path.yaml", token_user("https://proxy.example.com/k8s/clusters/c-1/", "pathed", "t"))
case("proxy-socks5.yaml", token_user("https://10.0.0.31:6443", "socks", "t", cluster_extra="\n    proxy-url: socks5://user:pass@socks.example:1080"))
case("proxy-https.yaml", token_user("https://10.0.0.32:6443", "httpsproxy", "t", cluster_extra="\n    proxy-url: https://proxy.example:3129"))
IMPERSONATE = """    as: jane
    as-uid: "1234"
    as-groups:
    - developers
    - system:authenticated
    as-user-extra:
      example.com/scopes:
      - view
      reason:
      - on call"""
case("impersonate.yaml", token_user("https://10.0.0.35:6443", "asjane", "t").replace("    token: t", "    token: t\n" + IMPERSONATE))
case("impersonate-groups-without-as.yaml", token_user("https://10.0.0.36:6443", "asgroups", "t").replace("    token: t", "    token: t\n    as-groups: [developers]"))
case("impersonate-empty-as.yaml", token_user("https://10.0.0.37:6443", "asempty", "t").replace("    token: t", "    token: t\n    as: ''"))
case("exec-interactive-always.yaml", exec_user("https://10.0.0.33:6443", "always", """    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      interactiveMode: Always
"""))
case("exec-env-without-name.yaml", exec_user("https://10.0.0.34:6443", "noname", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: get-token
      env:
      - value: orphan
"""))
case("exec-without-command.yaml", exec_user("https://10.0.0.35:6443", "nocmd", """    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args: [get-token]
"""))
case("client-cert-without-key.yaml", cert_user("https://10.0.0.36:6443", "halfpair", "halfpair", "halfpair").replace(f"    client-key-data: {RSAKEY}\n", ""))
case("missing-ca-file.yaml", token_user("https://10.0.0.37:6443", "noca", "t").replace(f"certificate-authority-data: {CA}", "certificate-authority: ../pki/absent.crt"))
case("unknown-auth-provider.yaml", exec_user("https://10.0.0.38:6443", "custom", """    auth-provider:
      name: custom-sso
      config: {}
"""))
# `kubectl config view --raw > config` in Windows PowerShell 5 writes UTF-16LE with a BOM.
case("utf16-powershell.yaml", ("\ufeff" + token_user("https://10.0.0.39:6443", "utf16", "t").replace("\n", "\r\n")).encode("utf-16-le"))

MERGES = {
    "merge-two-files": ["kind.yaml", "k3s.yaml"],
    "merge-comments-only-first": ["comments-only.yaml", "oc-login.yaml"],
    "merge-dashes-only": ["dashes-only.yaml", "gke.yaml", "empty.yaml"],
    "merge-empty-between": ["eks-v1.yaml", "empty.yaml", "token-file.yaml"],
    "merge-first-name-wins": ["rke2.yaml", "k3s.yaml"],
    "merge-current-context-from-second": ["empty-current-context.yaml", "teleport.yaml"],
    "merge-json-and-yaml": ["lens.json", "kubectl-view.json", "microk8s.yaml"],
    "merge-missing-file": ["does-not-exist.yaml", "kind.yaml"],
    "merge-broken-second": ["kind.yaml", "namespace-no.yaml"],
    "merge-bom-crlf": ["bom.yaml", "crlf.yaml"],
    "merge-duplicate-across-files": ["duplicate-cluster-names.yaml", "kind.yaml"],
    "merge-user-from-second-file": ["missing-user.yaml", "split-user.yaml"],
}


def main():
    out = os.path.join(HERE, "files")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        os.remove(os.path.join(out, name))
    # The fuzzer's kubeconfig target starts from the same files (fuzz/README.md).
    seeds = os.path.join(HERE, "..", "..", "..", "fuzz", "seeds", "kubeconfig")
    for name, text in FILES.items():
        data = text if isinstance(text, bytes) else text.encode()
        for folder in [out, seeds]:
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
    with open(os.path.join(HERE, "merges.txt"), "w") as f:
        f.write("# name: files of files/ in $KUBECONFIG order (generated by generate.py)\n")
        for name, files in MERGES.items():
            f.write(f"{name}: {' '.join(files)}\n")
    print(f"{len(FILES)} files, {len(MERGES)} merges")


main()
