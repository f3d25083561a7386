//! The kubeconfigs that kind, minikube, EKS, GKE and AKS write, as their public documentation
//! shows them, load into a working config; the exec plugins (`aws`, `gke-gcloud-auth-plugin`,
//! `kubelogin`) are replaced by test scripts that record their arguments and print a token.

use crate::support::fake::tls::self_signed;
use crate::support::plugin::{Plugin, print_token};
use crate::support::skiff::TempDir;
use base64::Engine as _;
use openssl::pkey::{PKey, Private};
use skiff::kube::{Auth, Config, load_kubeconfig_files};
use std::path::{Path, PathBuf};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A CA certificate and an RSA key (PKCS#1, as kind and minikube write it) with its cert.
struct Pki {
    ca: Vec<u8>,
    client_cert: Vec<u8>,
    client_key_pkcs1: Vec<u8>,
}

fn pki() -> Pki {
    let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).expect("RSA key")).expect("key");
    Pki {
        ca: pem(&key, "kubernetes"),
        client_cert: pem(&key, "kubernetes-admin"),
        client_key_pkcs1: key.rsa().and_then(|r| r.private_key_to_pem()).expect("PEM"),
    }
}

fn load(dir: &TempDir, yaml: &str) -> Config {
    let path = dir.0.join("config");
    std::fs::write(&path, yaml).expect("write kubeconfig");
    load_kubeconfig_files(&[path], None).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

/// A plugin that records its arguments and `$AWS_PROFILE`, then prints `token`.
fn recording_plugin(dir: &Path, token: &str) -> Plugin {
    let body = format!(
        "printf '%s ' \"$@\" > \"$here/args\"\necho \"$AWS_PROFILE\" > \"$here/profile\"\n{}",
        print_token(token).replace(
            "client.authentication.k8s.io/v1",
            "client.authentication.k8s.io/v1beta1"
        )
    );
    Plugin::write(dir, &body)
}

/// Runs the config's plugin once; returns its token and the arguments it got.
fn run_plugin(config: &Config, plugin: &Plugin) -> (String, String) {
    let Auth::Exec(exec) = &config.auth else {
        panic!("expected an exec user, got {:?}", config.auth);
    };
    assert_eq!(exec.command(), plugin.path.as_path());
    let credential = smol::block_on(config.auth.credential()).expect("plugin credential");
    let args = std::fs::read_to_string(plugin.file("args")).expect("args recorded");
    (credential.token.unwrap_or_default(), args.trim().to_owned())
}

#[test]
fn kind_inline_client_certificate_with_a_pkcs1_key() {
    let dir = TempDir::new("shape-kind");
    let pki = pki();
    let yaml = format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://127.0.0.1:40083
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {{}}
users:
- name: kind-kind
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
",
        ca = b64(&pki.ca),
        cert = b64(&pki.client_cert),
        key = b64(&pki.client_key_pkcs1),
    );
    let config = load(&dir, &yaml);
    assert_eq!(config.server.as_str(), "https://127.0.0.1:40083/");
    assert_eq!(config.tls.ca_pem.as_deref(), Some(pki.ca.as_slice()));
    let identity = config.tls.identity.clone().expect("client certificate");
    assert_eq!(identity.cert_pem, pki.client_cert);
    assert!(matches!(config.auth, Auth::None));
    skiff::kube::Client::new(config).expect("a usable TLS setup");
}

#[test]
fn minikube_certificate_files_and_extensions() {
    let dir = TempDir::new("shape-minikube");
    let pki = pki();
    let profile = dir.0.join("profiles/minikube");
    std::fs::create_dir_all(&profile).expect("profile dir");
    std::fs::write(dir.0.join("ca.crt"), &pki.ca).expect("ca");
    std::fs::write(profile.join("client.crt"), &pki.client_cert).expect("cert");
    std::fs::write(profile.join("client.key"), &pki.client_key_pkcs1).expect("key");
    let root = dir.0.display();
    let yaml = format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority: {root}/ca.crt
    extensions:
    - extension:
        last-update: Mon, 30 Nov 2026 10:00:00 UTC
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
        last-update: Mon, 30 Nov 2026 10:00:00 UTC
        provider: minikube.sigs.k8s.io
        version: v1.34.0
      name: context_info
    namespace: default
    user: minikube
  name: minikube
current-context: minikube
kind: Config
preferences: {{}}
users:
- name: minikube
  user:
    client-certificate: {root}/profiles/minikube/client.crt
    client-key: {root}/profiles/minikube/client.key
"
    );
    let config = load(&dir, &yaml);
    assert_eq!(config.server.as_str(), "https://192.168.49.2:8443/");
    assert_eq!(config.namespace.as_deref(), Some("default"));
    assert!(config.tls.identity.is_some());
    skiff::kube::Client::new(config).expect("a usable TLS setup");
}

#[test]
fn eks_aws_eks_get_token() {
    let dir = TempDir::new("shape-eks");
    let plugin = recording_plugin(&dir.0, "k8s-aws-v1.token");
    let arn = "arn:aws:eks:us-west-2:111122223333:cluster/my-cluster";
    let yaml = format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com
  name: {arn}
contexts:
- context:
    cluster: {arn}
    user: {arn}
  name: {arn}
current-context: {arn}
kind: Config
preferences: {{}}
users:
- name: {arn}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - us-west-2
      - eks
      - get-token
      - --cluster-name
      - my-cluster
      - --output
      - json
      command: {command}
      env:
      - name: AWS_PROFILE
        value: team-dev
      interactiveMode: IfAvailable
      provideClusterInfo: false
",
        ca = b64(&pki().ca),
        command = plugin.path.display(),
    );
    let config = load(&dir, &yaml);
    assert_eq!(
        config.server.as_str(),
        "https://abcdef0123456789.gr7.us-west-2.eks.amazonaws.com/"
    );
    let (token, args) = run_plugin(&config, &plugin);
    assert_eq!(token, "k8s-aws-v1.token");
    assert_eq!(
        args,
        "--region us-west-2 eks get-token --cluster-name my-cluster --output json"
    );
    let profile = std::fs::read_to_string(plugin.file("profile")).expect("profile");
    assert_eq!(profile.trim(), "team-dev");
}

#[test]
fn gke_gcloud_auth_plugin_with_cluster_info() {
    let dir = TempDir::new("shape-gke");
    let plugin = recording_plugin(&dir.0, "ya29.token");
    let name = "gke_my-project_us-central1_my-cluster";
    let yaml = format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://34.123.45.67
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
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: {command}
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
",
        ca = b64(&pki().ca),
        command = plugin.path.display(),
    );
    let config = load(&dir, &yaml);
    assert_eq!(config.server.as_str(), "https://34.123.45.67/");
    let (token, args) = run_plugin(&config, &plugin);
    assert_eq!((token.as_str(), args.as_str()), ("ya29.token", ""));
}

#[test]
fn aks_kubelogin_with_a_block_install_hint() {
    let dir = TempDir::new("shape-aks");
    let plugin = recording_plugin(&dir.0, "aad-token");
    let yaml = format!(
        "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: https://myakscluster-dns-12345678.hcp.eastus.azmk8s.io:443
  name: myAKSCluster
contexts:
- context:
    cluster: myAKSCluster
    user: clusterUser_myResourceGroup_myAKSCluster
  name: myAKSCluster
current-context: myAKSCluster
kind: Config
preferences: {{}}
users:
- name: clusterUser_myResourceGroup_myAKSCluster
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --login
      - azurecli
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      command: {command}
      env: null
      installHint: |2

        kubelogin is not installed which is required to connect to AAD enabled cluster.

        To learn more, please go to https://aka.ms/aks/kubelogin
      provideClusterInfo: false
",
        ca = b64(&pki().ca),
        command = plugin.path.display(),
    );
    let config = load(&dir, &yaml);
    assert_eq!(
        config.server.as_str(),
        "https://myakscluster-dns-12345678.hcp.eastus.azmk8s.io/"
    );
    let (token, args) = run_plugin(&config, &plugin);
    assert_eq!(token, "aad-token");
    assert_eq!(
        args,
        "get-token --login azurecli --server-id 6dae42f8-4368-4678-94ff-3960e28e3630"
    );
}

#[test]
fn install_hint_is_shown_when_the_plugin_is_missing() {
    let dir = TempDir::new("shape-missing");
    let missing: PathBuf = dir.0.join("gke-gcloud-auth-plugin");
    let yaml = format!(
        "clusters:
- name: c
  cluster: {{server: 'https://34.123.45.67'}}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: {}
      installHint: Install gke-gcloud-auth-plugin with gcloud components install
      provideClusterInfo: true
contexts:
- name: c
  context: {{cluster: c, user: u}}
current-context: c
",
        missing.display()
    );
    let config = load(&dir, &yaml);
    let err = smol::block_on(config.auth.credential()).expect_err("no plugin");
    let text = err.to_string();
    assert!(text.contains("gke-gcloud-auth-plugin"), "{text}");
    assert!(text.contains("gcloud components install"), "{text}");
}

fn pem(key: &PKey<Private>, cn: &str) -> Vec<u8> {
    let cert = self_signed(key, cn).expect("certificate");
    cert.to_pem().expect("PEM")
}
