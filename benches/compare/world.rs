//! The shared cluster state of a comparison: the operators' manifests and identities, the
//! labelled namespaces, and each run's source and copies.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::json;

use crate::operator::{Kind, Launch, Operator};
use crate::support::control_plane::ControlPlane;

/// Label of the namespaces the footprint and fan-out runs copy to.
pub const TARGET: &str = "compare.skiff.dev/target";
/// Label of the namespaces the fan-out under the squeeze copies to (a superset).
pub const WIDE: &str = "compare.skiff.dev/wide";
/// Namespaces are created in batches of this many per `kubectl apply`.
const BATCH: usize = 500;

/// Who an operator runs as: its kubeconfig and bearer token.
pub struct Identity {
    pub kubeconfig: PathBuf,
    pub token: String,
}

fn peer_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testbin/peer")
}

/// skiff's `manifests/` and the peer's manifests; returns each one's identity.
pub fn install(cp: &ControlPlane) -> (Identity, Identity) {
    cp.install_manifests();
    let peer_manifests = peer_dir().join("manifests.yaml").display().to_string();
    cp.kubectl_ok(&["apply", "-f", &peer_manifests]);
    let skiff = Identity {
        kubeconfig: cp.operator_kubeconfig(),
        token: cp.operator_token().to_owned(),
    };
    let peer = service_account(cp, "skiff-peer", "skiff-peer", "peer.kubeconfig");
    (skiff, peer)
}

/// A kubeconfig in the run's directory named `file`, with a new token (TokenRequest) of the
/// ServiceAccount `namespace/name`.
pub fn service_account(cp: &ControlPlane, namespace: &str, name: &str, file: &str) -> Identity {
    let token = cp.kubectl_ok(&["create", "token", name, "-n", namespace, "--duration=24h"]);
    let token = token.trim().to_owned();
    let kubeconfig = cp.dir().join(file);
    let text = kubeconfig_text(cp, namespace, name, &token);
    std::fs::write(&kubeconfig, text).expect("write a ServiceAccount's kubeconfig");
    Identity { kubeconfig, token }
}

fn kubeconfig_text(cp: &ControlPlane, namespace: &str, user: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(cp.ca_pem());
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: compare\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\n\
         users:\n- name: {user}\n  user:\n    token: {token}\n\
         contexts:\n- name: {user}\n  context:\n    cluster: compare\n    user: {user}\n    namespace: {namespace}\n\
         current-context: {user}\n",
        cp.url()
    )
}

/// Applies (or deletes) skiff's FlowSchema as given to the peer.
pub fn apply_peer_flowschema(cp: &ControlPlane, present: bool) {
    let path = peer_dir().join("flowschema.yaml").display().to_string();
    if present {
        cp.kubectl_ok(&["apply", "-f", &path]);
    } else {
        cp.kubectl_ok(&["delete", "-f", &path, "--ignore-not-found"]);
    }
}

/// Namespaces `cmp-NNNN` for each index in `range`, all labelled [`WIDE`], and [`TARGET`] too
/// when `target`.
pub fn create_namespaces(cp: &ControlPlane, range: std::ops::Range<usize>, target: bool) {
    let mut labels = json!({ WIDE: "true" });
    if target {
        labels[TARGET] = json!("true");
    }
    let names: Vec<String> = range.map(|i| format!("cmp-{i:04}")).collect();
    create_labelled(cp, &names, &labels);
}

/// Namespaces named `names`, each with `labels`, [`BATCH`] per `kubectl apply`.
pub fn create_labelled(cp: &ControlPlane, names: &[String], labels: &serde_json::Value) {
    for batch in names.chunks(BATCH) {
        let items: Vec<serde_json::Value> = batch
            .iter()
            .map(|name| {
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": name, "labels": labels}})
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        cp.apply(&list.to_string());
    }
}

/// The run's source (and for skiff, its Mirror): the fan-out starts.
pub fn create_source(cp: &ControlPlane, launch: &Launch) {
    let namespace = launch.operator.source_namespace();
    let mut source = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": launch.tag, "namespace": namespace},
        "data": {"ca.crt": "compare payload"}});
    match launch.operator.kind {
        Kind::Skiff => {
            cp.apply(&source.to_string());
            let (key, value) = launch.selector;
            let mirror = json!({"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
                "metadata": {"name": launch.tag, "namespace": namespace},
                "spec": {"source": {"kind": "ConfigMap", "name": launch.tag},
                         "namespaceSelector": {"matchLabels": {key: value}}}});
            cp.apply(&mirror.to_string());
        }
        Kind::Peer(_) => {
            source["metadata"]["labels"] = json!({ launch.source_label(): "true" });
            cp.apply(&source.to_string());
        }
    }
}

/// The run's copies: namespace and resourceVersion of each.
pub fn copies(cp: &ControlPlane, launch: &Launch) -> Vec<(String, String)> {
    let selector = launch.copies_selector();
    let template =
        "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.resourceVersion}{\"\\n\"}{end}";
    let out = cp.kubectl_ok(&["get", "configmaps", "-A", "-l", &selector, "-o", template]);
    out.lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(ns, rv)| (ns.to_owned(), rv.to_owned()))
        .collect()
}

pub fn count_copies(cp: &ControlPlane, launch: &Launch) -> usize {
    copies(cp, launch).len()
}

/// Sets the run's source payload to `value`.
pub fn edit_source(cp: &ControlPlane, launch: &Launch, value: &str) {
    let namespace = launch.operator.source_namespace();
    let patch = json!({"data": {"ca.crt": value}}).to_string();
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        &launch.tag,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        &patch,
    ]);
}

/// Whether the run's copy exists in `namespace`.
pub fn copy_exists(cp: &ControlPlane, launch: &Launch, namespace: &str) -> bool {
    copies(cp, launch).iter().any(|(ns, _)| ns == namespace)
}

/// The run's copies whose payload is `value`, and all its copies.
pub fn copies_with(cp: &ControlPlane, launch: &Launch, value: &str) -> (usize, usize) {
    let selector = launch.copies_selector();
    let template = "jsonpath={range .items[*]}{.data.ca\\.crt}{\"\\n\"}{end}";
    let out = cp.kubectl_ok(&["get", "configmaps", "-A", "-l", &selector, "-o", template]);
    let lines: Vec<&str> = out.lines().collect();
    (lines.iter().filter(|l| **l == value).count(), lines.len())
}

/// A second identity of the operator (same ServiceAccount, another token), for a standby the
/// audit log must tell apart from the leader.
pub fn second_identity(cp: &ControlPlane, operator: &Operator) -> Identity {
    if operator.is_skiff() {
        let kubeconfig = cp.operator_b_kubeconfig();
        let text = std::fs::read_to_string(&kubeconfig).expect("the operator's second kubeconfig");
        let token = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("token: "))
            .unwrap_or_default()
            .to_owned();
        return Identity { kubeconfig, token };
    }
    service_account(cp, "skiff-peer", "skiff-peer", "peer-b.kubeconfig")
}

/// Removes every Mirror without waiting for skiff (finalizers dropped; the copies stay), so a
/// scenario's skiff reconciles only its own Mirror.
pub fn retire_mirrors(cp: &ControlPlane) {
    let template = "jsonpath={range .items[*]}{.metadata.namespace} {.metadata.name}{\"\\n\"}{end}";
    let out = cp.kubectl_ok(&["get", "mirrors", "-A", "-o", template]);
    let none = json!({"metadata": {"finalizers": null}}).to_string();
    for (namespace, name) in out.lines().filter_map(|l| l.split_once(' ')) {
        cp.kubectl_ok(&[
            "patch",
            "mirror",
            name,
            "-n",
            namespace,
            "--type=merge",
            "-p",
            &none,
        ]);
        cp.kubectl_ok(&[
            "delete",
            "mirror",
            name,
            "-n",
            namespace,
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

/// Deletes the operator's Lease, which a replica killed by an earlier scenario may still hold,
/// so the next replica leads at once and the first holder seen is its own.
pub fn free_lease(cp: &ControlPlane, operator: &Operator) {
    let (namespace, name) = operator.lease();
    cp.kubectl_ok(&[
        "delete",
        "lease",
        name,
        "-n",
        namespace,
        "--ignore-not-found",
    ]);
}

/// The user an operator's requests show in the audit log.
pub fn user(operator: &Operator) -> &'static str {
    if operator.is_skiff() {
        crate::support::control_plane::OPERATOR_USER
    } else {
        "system:serviceaccount:skiff-peer:skiff-peer"
    }
}
