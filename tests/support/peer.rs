//! The controller-runtime peer (`testbin/peer/`, built by `make peer`) that benches run beside
//! skiff: where its binary is, and its identity (ServiceAccount, RBAC and a kubeconfig of its
//! own) on a control plane.

use super::control_plane::{ControlPlane, bin_dir};
use std::path::{Path, PathBuf};

/// Its namespace: its sources, its Lease and its ServiceAccount live there.
pub const NAMESPACE: &str = "skiff-peer";
/// The Lease it holds while it leads.
pub const LEASE: &str = "skiff-peer-leader";
/// The `app.kubernetes.io/managed-by` value of its copies.
pub const MANAGER: &str = "skiff-peer";

/// `SKIFF_PEER`, or `bin/skiff-peer`.
pub fn binary() -> PathBuf {
    std::env::var_os("SKIFF_PEER")
        .map(PathBuf::from)
        .unwrap_or_else(|| bin_dir().join("skiff-peer"))
}

/// Applies its ServiceAccount and RBAC (`testbin/peer/manifests.yaml`); a kubeconfig that
/// authenticates as it, written next to the control plane's own.
pub fn install(cp: &ControlPlane) -> PathBuf {
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbin/peer/manifests.yaml");
    cp.kubectl_ok(&["apply", "-f", &manifests.display().to_string()]);
    let token = cp.kubectl_ok(&[
        "create",
        "token",
        "skiff-peer",
        "-n",
        NAMESPACE,
        "--duration=24h",
    ]);
    let operator = std::fs::read_to_string(cp.operator_kubeconfig()).expect("operator kubeconfig");
    let kubeconfig = cp.dir().join("peer.kubeconfig");
    let text = operator.replace(cp.operator_token(), token.trim());
    std::fs::write(&kubeconfig, text).expect("write the peer's kubeconfig");
    kubeconfig
}

/// The holder of its Lease, if any.
pub fn leader(cp: &ControlPlane) -> Option<String> {
    let lease = cp.object("lease", NAMESPACE, LEASE)?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}
