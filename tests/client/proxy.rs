//! The skiff binary behind an HTTP CONNECT proxy, against the fake API server over TLS.
//!
//! The server is named `api.skiff.test`, which does not resolve: only a connection through the
//! test proxy (which tunnels every CONNECT to 127.0.0.1) can reach it. So a leader that renews
//! its lease proves the proxy carried it, and the proxy's record shows which connections.

use crate::support::fake::{FakeServer, RequestClass};
use crate::support::proxy::ConnectProxy;
use crate::support::skiff::{HOME_NS, SHORT_LEASE, Skiff, TempDir, eventually, is_lease_hold};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

const HOST: &str = "api.skiff.test";
const LEASE_UA: &str = "skiff/leader-election";

fn tls_server() -> FakeServer {
    let server = FakeServer::start_tls();
    server.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME_NS}}));
    server
}

fn port_of(server: &FakeServer) -> u16 {
    let url: http_types::Url = server.url().parse().expect("server URL");
    url.port().expect("server port")
}

/// A kubeconfig for `https://api.skiff.test:<port>` (certificate checked as `localhost`).
fn kubeconfig(dir: &TempDir, server: &FakeServer, cluster_extra: &str) -> PathBuf {
    let ca = dir.0.join("ca.crt");
    std::fs::write(&ca, server.ca_pem().expect("TLS server")).expect("write CA");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: https://{HOST}:{port}\n    certificate-authority: {ca}\n    tls-server-name: localhost\n{cluster_extra}users:\n- name: t\n  user:\n    token: t\ncontexts:\n- name: t\n  context: {{cluster: t, user: t, namespace: {HOME_NS}}}\ncurrent-context: t\n",
        port = port_of(server),
        ca = ca.display(),
    );
    let path = dir.0.join("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

fn start(kubeconfig: &PathBuf, dir: &TempDir, env: &[(&str, &str)]) -> Skiff {
    let mut args: Vec<&str> = SHORT_LEASE.to_vec();
    args.push("--log-level=debug");
    Skiff::start_with_env(kubeconfig, dir.0.join("skiff.log"), &args, env)
}

/// Waits until the binary leads and its controllers watch.
fn wait_leading(server: &FakeServer, skiff: &Skiff) {
    let ok = eventually(Duration::from_secs(30), || {
        let records = server.requests();
        records.iter().any(is_lease_hold)
            && records
                .iter()
                .any(|r| r.watch && r.class == RequestClass::Other && r.status == 200)
    });
    assert!(ok, "not leading through the proxy; log:\n{}", skiff.logs());
}

/// Every connection the server saw came through a tunnel to the configured host, and both
/// clients (lease and main) had connections of their own through it.
fn assert_all_connections_tunnelled(server: &FakeServer, proxy: &ConnectProxy) {
    // Records first: a connection's tunnel is recorded before its first request arrives.
    let records = server.requests();
    let tunnels = proxy.tunnels();
    let expected = format!("{HOST}:{}", port_of(server));
    assert!(
        tunnels.iter().all(|t| t.authority == expected),
        "{tunnels:?}"
    );
    let connections: BTreeSet<u64> = records.iter().map(|r| r.conn_id).collect();
    assert!(
        connections.len() <= tunnels.len(),
        "a connection without a tunnel"
    );
    let lease: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(LEASE_UA))
        .map(|r| r.conn_id)
        .collect();
    let main: BTreeSet<u64> = records
        .iter()
        .filter(|r| r.user_agent.as_deref() != Some(LEASE_UA))
        .map(|r| r.conn_id)
        .collect();
    assert!(!lease.is_empty() && !main.is_empty());
    assert!(
        lease.is_disjoint(&main),
        "the lease client has its own tunnels"
    );
}

#[test]
fn proxy_url_carries_every_connection_of_both_clients() {
    let server = tls_server();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-url");
    // The environment's settings are ignored when the cluster names a proxy.
    let extra = format!("    proxy-url: {}\n", proxy.url());
    let kubeconfig = kubeconfig(&dir, &server, &extra);
    let skiff = start(&kubeconfig, &dir, &[("NO_PROXY", "*")]);
    wait_leading(&server, &skiff);
    assert_all_connections_tunnelled(&server, &proxy);
}

#[test]
fn https_proxy_from_the_environment_is_used_unless_no_proxy_exempts_the_server() {
    let server = tls_server();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-env");
    let kubeconfig = kubeconfig(&dir, &server, "");
    let url = proxy.url();
    let skiff = start(
        &kubeconfig,
        &dir,
        &[("HTTPS_PROXY", &url), ("NO_PROXY", "10.0.0.0/8")],
    );
    wait_leading(&server, &skiff);
    assert_all_connections_tunnelled(&server, &proxy);
    drop(skiff);

    let exempt = ConnectProxy::start();
    let url = exempt.url();
    let skiff = start(
        &kubeconfig,
        &dir,
        &[("https_proxy", &url), ("no_proxy", ".skiff.test")],
    );
    let tunnelled = eventually(Duration::from_secs(3), || !exempt.tunnels().is_empty());
    assert!(!tunnelled, "NO_PROXY=.skiff.test must bypass the proxy");
    assert!(
        skiff.logs().contains(HOST),
        "the direct dial to {HOST} fails and is logged; log:\n{}",
        skiff.logs()
    );
}

#[test]
fn a_socks_proxy_url_is_refused_at_start_naming_the_fix() {
    let server = tls_server();
    let dir = TempDir::new("proxy-socks");
    let kubeconfig = kubeconfig(&dir, &server, "    proxy-url: socks5://127.0.0.1:1080\n");
    let mut skiff = start(&kubeconfig, &dir, &[]);
    assert_eq!(skiff.wait_exit(Duration::from_secs(20)), Some(1));
    let logs = skiff.logs();
    assert!(
        logs.contains("socks5://127.0.0.1:1080") && logs.contains("http://"),
        "{logs}"
    );
    assert!(server.requests().is_empty());
}
