//! e2e: skiff on a real API server with the operator's token delivered by an exec credential
//! plugin, directly and through an HTTP CONNECT or SOCKS5 proxy named by the kubeconfig's
//! `proxy-url`.
//!
//! Why: that is how people run skiff against EKS, GKE or AKS from a laptop, often behind a
//! corporate proxy. Only the real API server shows that the plugin's token authenticates both
//! clients (the lease is held, the controller mirrors under the shipped RBAC) and that the
//! tunnelled TLS connections work end to end.

use std::sync::Mutex;
use std::time::Duration;

use crate::support::control_plane::{
    ControlPlane, E2E_REPLICA_FLAGS, OPERATOR_NAMESPACE, require_e2e_binaries,
};
use crate::support::plugin::{Plugin, exec_kubeconfig, print_token};
use crate::support::proxy::ConnectProxy;
use crate::support::skiff::{Skiff, TempDir, eventually};
use crate::support::socks::SocksProxy;

const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The Lease name the shipped RBAC allows (the default `--leader-election-id`).
const LEASE_ID: &str = "skiff-leader";

/// The tests share one Lease: one replica at a time.
static ONE_REPLICA_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Starts skiff with an exec plugin printing the operator's token (plus `cluster_extra`
/// kubeconfig lines), waits until it leads and mirrors a ConfigMap, then stops it; returns how
/// often the plugin ran. `server` replaces the control plane's URL when given.
fn leads_and_mirrors(name: &str, server: Option<&str>, cluster_extra: &[&str]) -> usize {
    let _turn = ONE_REPLICA_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cp = ControlPlane::installed();
    let dir = TempDir::new(&format!("e2e-exec-{name}"));
    let plugin = Plugin::write(&dir.0, &print_token(cp.operator_token()));
    let ca = cp.ca_pem().as_bytes();
    let kubeconfig = exec_kubeconfig(
        &dir.0,
        server.unwrap_or(cp.url()),
        Some(ca),
        &plugin,
        OPERATOR_NAMESPACE,
        cluster_extra,
    );
    let log = dir.0.join("skiff.log");
    let mut skiff =
        Skiff::start_with_env(&kubeconfig, log, &E2E_REPLICA_FLAGS, &[("POD_NAME", name)]);

    let held = eventually(STEP_TIMEOUT, || {
        cp.object("lease", OPERATOR_NAMESPACE, LEASE_ID)
            .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
            .is_some_and(|holder| holder.starts_with(&format!("{name}_")))
    });
    assert!(held, "{name} never held the Lease; log:\n{}", skiff.logs());

    let source = format!("exec-{name}");
    let target_ns = cp.create_namespace(&format!("exec-{name}"), &[("exec-e2e", name)]);
    cp.apply(&format!(
        r#"{{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {{"name": "{source}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "data": {{"from": "{name}"}}}}"#
    ));
    cp.apply(&format!(
        r#"{{"apiVersion": "skiff.dev/v1alpha1", "kind": "Mirror",
            "metadata": {{"name": "{source}", "namespace": "{OPERATOR_NAMESPACE}"}},
            "spec": {{"source": {{"kind": "ConfigMap", "name": "{source}"}},
                      "namespaceSelector": {{"matchLabels": {{"exec-e2e": "{name}"}}}}}}}}"#
    ));
    let mirrored = eventually(STEP_TIMEOUT, || {
        cp.object("configmap", &target_ns, &source)
            .is_some_and(|copy| copy["data"]["from"] == name)
    });
    assert!(mirrored, "no copy in {target_ns}; log:\n{}", skiff.logs());
    skiff.terminate(STEP_TIMEOUT);
    plugin.runs()
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn the_operator_token_from_an_exec_plugin_leads_and_mirrors() {
    require_e2e_binaries();
    let runs = leads_and_mirrors("exec-direct", None, &[]);
    // Each client ran the plugin once and kept its credential (it has no expiry).
    assert_eq!(runs, 2);
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn through_a_connect_proxy_both_clients_reach_the_api_server() {
    require_e2e_binaries();
    let proxy = ConnectProxy::start();
    let line = format!("proxy-url: {}", proxy.url());
    leads_and_mirrors("exec-proxied", None, &[&line]);
    let cp = ControlPlane::shared();
    let server = cp.url().trim_start_matches("https://").to_owned();
    let tunnels = proxy.tunnels();
    assert!(
        tunnels.len() >= 2,
        "main and lease connections: {tunnels:?}"
    );
    assert!(tunnels.iter().all(|t| t.authority == server), "{tunnels:?}");
}

#[test]
#[cfg_attr(skip_e2e, ignore = "built with SKIFF_SKIP_E2E=1")]
fn through_a_socks5_proxy_both_clients_reach_the_api_server_by_its_name() {
    require_e2e_binaries();
    let proxy = SocksProxy::start_requiring(Some(("skiff", "s3cret")));
    let line = format!("proxy-url: socks5://skiff:s3cret@{}", proxy.address());
    // A name in the API server's certificate that only the proxy resolves (to 127.0.0.1).
    let cp = ControlPlane::shared();
    let port = cp.url().rsplit(':').next().unwrap_or_default().to_owned();
    let server = format!("https://kubernetes.default.svc:{port}");
    leads_and_mirrors("exec-socks", Some(&server), &[&line]);
    let tunnels = proxy.tunnels();
    assert!(
        tunnels.len() >= 2,
        "main and lease connections: {tunnels:?}"
    );
    let expected = format!("kubernetes.default.svc:{port}");
    let named = |t: &crate::support::socks::SocksTunnel| {
        t.address_type == 3 && t.authority == expected && t.credentials.is_some()
    };
    assert!(tunnels.iter().all(named), "{tunnels:?}");
}
