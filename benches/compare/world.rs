//! The shared cluster state of a comparison: the operators' manifests and identities, the
//! labelled namespaces, and each run's source and copies.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::json;

use crate::operator::{Kind, Launch};
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
    let token = cp.kubectl_ok(&[
        "create",
        "token",
        "skiff-peer",
        "-n",
        "skiff-peer",
        "--duration=24h",
    ]);
    let token = token.trim().to_owned();
    let kubeconfig = cp.dir().join("peer.kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_text(cp, &token)).expect("write the peer's kubeconfig");
    (skiff, Identity { kubeconfig, token })
}

fn kubeconfig_text(cp: &ControlPlane, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(cp.ca_pem());
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: compare\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\n\
         users:\n- name: skiff-peer\n  user:\n    token: {token}\n\
         contexts:\n- name: skiff-peer\n  context:\n    cluster: compare\n    user: skiff-peer\n    namespace: skiff-peer\n\
         current-context: skiff-peer\n",
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
    let indices: Vec<usize> = range.collect();
    for batch in indices.chunks(BATCH) {
        let items: Vec<serde_json::Value> = batch
            .iter()
            .map(|&i| {
                let mut labels = json!({ WIDE: "true" });
                if target {
                    labels[TARGET] = json!("true");
                }
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": format!("cmp-{i:04}"), "labels": labels}})
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
