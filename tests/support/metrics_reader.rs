//! Scrapers of skiff's secure `/metrics` on the e2e control plane: ServiceAccounts with real
//! tokens (TokenRequest), with or without the shipped `skiff-metrics-reader` ClusterRole.
//!
//! Why: the secure endpoint asks the API server who a token belongs to and what it may do, so
//! only a token the API server issued, and a binding it enforces, test it for real.

use super::control_plane::ControlPlane;

/// The ClusterRole `manifests/metrics-reader.yaml` ships for scrapers.
pub const READER_ROLE: &str = "skiff-metrics-reader";

/// Creates the ServiceAccount `name` in a new namespace, bound to [`READER_ROLE`] when
/// `reader`, and returns a token for it (valid for an hour).
pub fn service_account_token(cp: &ControlPlane, name: &str, reader: bool) -> String {
    let namespace = cp.create_namespace("e2e-scraper", &[("metrics", "enabled")]);
    cp.kubectl_ok(&["create", "serviceaccount", name, "-n", &namespace]);
    if reader {
        let binding = format!("{namespace}-{name}-{READER_ROLE}");
        let role = format!("--clusterrole={READER_ROLE}");
        let subject = format!("--serviceaccount={namespace}:{name}");
        cp.kubectl_ok(&["create", "clusterrolebinding", &binding, &role, &subject]);
    }
    let token = cp.kubectl_ok(&["create", "token", name, "-n", &namespace, "--duration=1h"]);
    token.trim().to_owned()
}
